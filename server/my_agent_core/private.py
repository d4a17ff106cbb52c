"""Where the server keeps what belongs to one user on one machine inside a workspace folder: chat
sessions and the recall archive, beside (never inside) the memory folder.

They hold whole conversations, so they must never be committed by accident: the first time one is
created, `.my_agent_core/.gitignore` gets a line for it. The folders go through the one path check, so
a cloned repository cannot aim them at the user's files with a symbolic link.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from my_agent_core.memory.paths import MEMORY_SUBDIR
from my_agent_core.paths import PathRefused, is_inside

__all__ = ["ARCHIVE_DIR", "GITIGNORE_HEADER", "SESSIONS_DIR", "ensure_ignored", "private_dir"]

SESSIONS_DIR = "sessions"
ARCHIVE_DIR = "archive"
GITIGNORE_HEADER = "# my-agent-core: private to you and this machine, never committed"


def private_dir(folder: Path | str, name: str, *, create: bool = True) -> Path:
    """`<folder>/.my_agent_core/<name>/`, created (owner-only) and git-ignored on first use.

    Refused (PathRefused) when `.my_agent_core` or `<name>` is a link or anything but a folder inside
    `folder`, so nothing private is ever written through a link a repository planted.
    """
    if not name or "/" in name or name in (".", "..", MEMORY_SUBDIR[1]):
        raise ValueError(f"not a private folder name: {name!r}")
    root = Path(folder)
    base = root / MEMORY_SUBDIR[0]
    path = base / name
    for part in (base, path):
        if part.is_symlink() or (part.exists() and not part.is_dir()):
            raise PathRefused(
                f"{part} is a link or not a folder; my-agent keeps private data (chat sessions, the "
                "archive) only in a real folder inside the workspace. Move it away and retry."
            )
    if create:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        ensure_ignored(base, [f"{name}/"])
    if path.exists() and not is_inside(root, path):
        raise PathRefused(f"{path} leads out of the workspace folder {root}; it is not used.")
    return path


def ensure_ignored(base: Path, patterns: list[str]) -> None:
    """Make sure `base/.gitignore` lists `patterns` (added once, never rewritten otherwise)."""
    gitignore = base / ".gitignore"
    if gitignore.is_symlink():
        return  # not ours to follow; the folder itself was checked
    try:
        existing = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    except (OSError, UnicodeDecodeError):
        return
    have = {line.strip() for line in existing.splitlines()}
    missing = [p for p in patterns if p not in have]
    if not missing:
        return
    lines = [] if GITIGNORE_HEADER in have else [GITIGNORE_HEADER]
    text = existing
    if text and not text.endswith("\n"):
        text += "\n"
    text += "".join(f"{line}\n" for line in [*lines, *missing])
    tmp = gitignore.with_name(f".gitignore.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, gitignore)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
