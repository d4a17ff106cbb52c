"""The user's own state folder, outside every repository: `$XDG_STATE_HOME/my-agent-core/` (an absolute
XDG_STATE_HOME only, as the XDG spec says) or `~/.local/state/my-agent-core/`.

What proves that something was made by this user on this machine (the key that signs chat sessions)
must live where no cloned repository can put or read a file, so it lives here: the folder owner-only
(0700), its files written with the one safe writer.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from my_agent_core.paths import NotOwned, PathRefused, kind_of, owned_by_user
from my_agent_core.safe_write import make_folders

__all__ = ["STATE_DIR_NAME", "StateFolderError", "state_dir", "state_folder"]

STATE_DIR_NAME = "my-agent-core"


class StateFolderError(PathRefused):
    """The state folder cannot be used (not a folder, not yours, open to others); the message says
    what to do."""


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the state folder is (not created)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / STATE_DIR_NAME


def state_folder(*, create: bool, env: Mapping[str, str] | None = None) -> Path | None:
    """The state folder, checked: a real folder owned by this user that nobody else can write (a
    file in it could otherwise be swapped). Created owner-only when `create` (None when it does not
    exist and `create` is False). Raises `StateFolderError`."""
    folder = state_dir(env)
    if create:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            make_folders(folder.parent, folder.name, mode=0o700)
        except OSError as exc:
            raise StateFolderError(
                f"cannot create your state folder {folder}: {exc.strerror or exc}"
            ) from None
        except PathRefused as exc:
            raise StateFolderError(str(exc)) from None
    try:
        found = owned_by_user(folder, folder=True, closed_to=0o022)
    except NotOwned as exc:
        if exc.wrong_kind:
            raise StateFolderError(
                f"{folder} is {kind_of(exc.st.st_mode)}, not a folder; move it away so my-agent can "
                "keep its state there."
            ) from None
        raise StateFolderError(
            f"{folder} is not yours alone (mode {stat.S_IMODE(exc.st.st_mode):04o}, owner uid "
            f"{exc.st.st_uid}); run `chmod 700 {folder}` (as its owner) so nobody else can change "
            "it."
        ) from None
    except OSError as exc:
        raise StateFolderError(f"{folder} cannot be checked: {exc.strerror or exc}") from None
    return folder if found is not None else None
