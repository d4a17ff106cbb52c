"""Where a workspace's memory lives, and the ONE factory that opens its store.

`USER.md` is personal: with the user-profile setting `"global"` one profile in the user's own
config folder (`${XDG_CONFIG_HOME:-~/.config}/my-agent-core/USER.md`) serves every workspace, while
`MEMORY.md` stays with the project. The command line, the language server and the MCP server all
open stores here, so they agree on which files a workspace uses.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from my_agent_core.layout import MEMORY_SUBDIR, memory_dir_of
from my_agent_core.memory.limits import (
    LOCK_TIMEOUT,
    MAX_FILE_BYTES,
    MEMORY_CHAR_LIMIT,
    USER_CHAR_LIMIT,
)

if TYPE_CHECKING:
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.memory.store_types import WriteListener

__all__ = [
    "PROFILE_DIR_NAME",
    "USER_PROFILES",
    "USER_PROFILE_ENV",
    "UserProfile",
    "global_profile_dir",
    "open_store",
    "parse_user_profile",
    "resolve_user_profile",
    "user_profile_dir",
    "workspace_of",
]

UserProfile = Literal["workspace", "global"]
USER_PROFILES: tuple[str, ...] = get_args(UserProfile)
#: The environment variable the command line and the MCP server read (a flag wins over it).
USER_PROFILE_ENV = "MY_AGENT_USER_PROFILE"
PROFILE_DIR_NAME = "my-agent-core"


def parse_user_profile(value: object) -> UserProfile | None:
    """A setting's value as a profile kind, or None for anything else (settings ignore junk)."""
    if value == "workspace":
        return "workspace"
    if value == "global":
        return "global"
    return None


def resolve_user_profile(
    explicit: str | None = None, env: Mapping[str, str] | None = None
) -> UserProfile:
    """The profile kind a command uses: its flag, else `MY_AGENT_USER_PROFILE`, else "workspace".

    A value that is neither kind raises ValueError naming where it came from, so a typo in a shell
    profile is reported instead of silently writing the profile somewhere else."""
    environ = os.environ if env is None else env
    for value, where in ((explicit, "--user-profile"), (environ.get(USER_PROFILE_ENV), None)):
        if value is None or (where is None and not value.strip()):
            continue
        found = parse_user_profile(value.strip())
        if found is None:
            source = where or f"the environment variable {USER_PROFILE_ENV}"
            raise ValueError(
                f"{source} is {value!r}: use 'workspace' (USER.md of each workspace) or 'global' "
                "(one USER.md in your config folder for every workspace)."
            )
        return found
    return "workspace"


def global_profile_dir(env: Mapping[str, str] | None = None) -> Path:
    """`${XDG_CONFIG_HOME:-~/.config}/my-agent-core`: the folder of the global user profile.

    As the XDG spec says, a relative `XDG_CONFIG_HOME` is ignored (it would name a different
    folder in every working directory)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / PROFILE_DIR_NAME


def user_profile_dir(
    mem_dir: Path | str, user_profile: UserProfile, env: Mapping[str, str] | None = None
) -> Path:
    """The folder `USER.md` lives in for a memory folder and a profile kind."""
    return global_profile_dir(env) if user_profile == "global" else Path(mem_dir)


def open_store(
    folder: Path | str | None = None,
    *,
    mem_dir: Path | str | None = None,
    user_profile: UserProfile = "workspace",
    memory_char_limit: int = MEMORY_CHAR_LIMIT,
    user_char_limit: int = USER_CHAR_LIMIT,
    author: str = "agent",
    on_write: WriteListener | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
    max_file_bytes: int = MAX_FILE_BYTES,
    env: Mapping[str, str] | None = None,
) -> MemoryStore:
    """The store of a workspace `folder` (its `.my_agent_core/memory`), or of an explicit memory
    folder `mem_dir` (`--dir`); exactly one of them. With `user_profile="global"` its USER.md is
    the one in the user's config folder, with that folder's own lock and history; MEMORY.md stays
    in the workspace. Nothing is created until the first write."""
    if (folder is None) == (mem_dir is None):
        raise TypeError("open_store takes a workspace folder or mem_dir=, exactly one of them")
    memory = Path(mem_dir) if mem_dir is not None else memory_dir_of(folder or ".")
    from my_agent_core.memory.store import MemoryStore  # here: start-up time (my-agent parsers)

    return MemoryStore(
        memory,
        memory_char_limit,
        user_char_limit,
        author=author,
        on_write=on_write,
        lock_timeout=lock_timeout,
        max_file_bytes=max_file_bytes,
        user_dir=user_profile_dir(memory, user_profile, env),
    )


def workspace_of(mem_dir: Path | str) -> Path | None:
    """The workspace folder of a memory folder laid out as `<folder>/.my_agent_core/memory`, else
    None (an explicit `--dir` elsewhere belongs to no workspace)."""
    path = Path(os.path.abspath(mem_dir))
    if (path.parent.name, path.name) != MEMORY_SUBDIR:
        return None
    return path.parent.parent
