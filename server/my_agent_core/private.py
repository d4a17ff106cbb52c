"""What belongs to one user on one machine inside a workspace folder, and the rule that keeps it out of
git from the very first write.

`.my_agent_core/` holds one shared file, `memory/MEMORY.md`; everything else there (USER.md, the
history journal, backups, the lock, temp files, chat sessions, the recall archive) is private. Whatever
writes there first (the editor, the command line, the MCP server, the terminal chat, a session, the
archive) calls `keep_private`, which makes `.my_agent_core/.gitignore` list `PRIVATE_PATTERNS`: every
name but MEMORY.md and the ignore file itself, so a private file added later is ignored too.

A cloned repository controls these names: folders are created through `safe_write.make_folders` (never
through a link), the ignore file is written with the one safe writer, and a link, FIFO or device
planted at `.gitignore` is left alone with a logged note, never opened, so it can neither redirect a
write nor hang the writer.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from my_agent_core.layout import FILE_NAMES, MEMORY_SUBDIR
from my_agent_core.paths import NotText, PathRefused, is_inside, kind_of, read_text
from my_agent_core.safe_write import make_folders, write_atomic

__all__ = [
    "ARCHIVE_DIR",
    "GITIGNORE_HEADER",
    "PRIVATE_PATTERNS",
    "SESSIONS_DIR",
    "ensure_ignored",
    "keep_private",
    "keep_private_memory",
    "make_memory_dir",
    "private_dir",
]

logger = logging.getLogger(__name__)

SESSIONS_DIR = "sessions"
ARCHIVE_DIR = "archive"
GITIGNORE_NAME = ".gitignore"
GITIGNORE_HEADER = (
    "# my-agent-core: only memory/MEMORY.md is shared; the rest is private to you and this machine"
)
_BASE, _MEMORY = MEMORY_SUBDIR
#: The lines of `.my_agent_core/.gitignore` (relative to it): ignore everything, then take back the
#: ignore file itself and MEMORY.md (git re-includes a file only when its folder is not ignored).
PRIVATE_PATTERNS = [
    "/*",
    f"!/{GITIGNORE_NAME}",
    f"!/{_MEMORY}/",
    f"/{_MEMORY}/*",
    f"!/{_MEMORY}/{FILE_NAMES['memory']}",
]
_MAX_GITIGNORE_BYTES = 1 << 20


def keep_private(folder: Path | str) -> Path:
    """Create `<folder>/.my_agent_core/` if need be (never through a link) and make its `.gitignore`
    keep everything but MEMORY.md out of git; returns the `.my_agent_core` path.

    Every first writer calls this. Raises `PathRefused` when `.my_agent_core` is a link or not a
    folder; a `.gitignore` that cannot be updated is logged (the write that asked goes on)."""
    Path(folder).mkdir(parents=True, exist_ok=True)  # the folder the caller named (as before)
    base = make_folders(folder, _BASE)
    ensure_ignored(base, PRIVATE_PATTERNS)
    return base


def make_memory_dir(mem_dir: Path | str, *, mode: int = 0o777) -> Path:
    """The memory folder `mem_dir`, created if need be. In a workspace's layout
    (`<folder>/.my_agent_core/memory`) never through a link (a cloned repository could plant
    `.my_agent_core` or `memory` as one, aimed at your files) and with the private files git-ignored
    first (`keep_private`); any other folder (one the user named: `--memory-dir`, `--dir`, the
    global profile) as given, its parents included. Raises `PathRefused` or OSError."""
    mem = Path(os.path.abspath(mem_dir))
    if (mem.parent.name, mem.name) != MEMORY_SUBDIR:
        mem.mkdir(mode=mode, parents=True, exist_ok=True)
        return Path(mem_dir)
    workspace = mem.parent.parent
    keep_private(workspace)
    make_folders(workspace, _BASE, _MEMORY, mode=mode)
    return Path(mem_dir)


def keep_private_memory(mem_dir: Path | str) -> None:
    """`keep_private` for the workspace of a memory folder laid out as `<folder>/.my_agent_core/memory`
    (the memory store's files: the lock, the journal, USER.md); other folders (an explicit `--dir`, the
    global user profile) are not a workspace's and are left as they are. Never raises."""
    mem = Path(os.path.abspath(mem_dir))
    if (mem.parent.name, mem.name) != MEMORY_SUBDIR:
        return
    try:
        keep_private(mem.parent.parent)
    except (OSError, PathRefused) as exc:
        logger.warning("private files of %s may be offered to git: %s", mem.parent.parent, exc)


def private_dir(folder: Path | str, name: str, *, create: bool = True) -> Path:
    """`<folder>/.my_agent_core/<name>/`, created (owner-only) and git-ignored on first use.

    Refused (PathRefused) when `.my_agent_core` or `<name>` is a link or anything but a folder inside
    `folder`, so nothing private is ever written through a link a repository planted.
    """
    if not name or "/" in name or name in (".", "..", _MEMORY):
        raise ValueError(f"not a private folder name: {name!r}")
    root = Path(folder)
    base = root / _BASE
    path = base / name
    if create:
        keep_private(root)
        return make_folders(base, name, mode=0o700)
    for part in (base, path):
        if part.is_symlink() or (part.exists() and not part.is_dir()):
            raise PathRefused(
                f"{part} is a link or not a folder; my-agent keeps private data (chat sessions, the "
                "archive) only in a real folder inside the workspace. Move it away and retry."
            )
    if path.exists() and not is_inside(root, path):
        raise PathRefused(f"{path} leads out of the workspace folder {root}; it is not used.")
    return path


def ensure_ignored(base: Path, patterns: list[str]) -> str | None:
    """Make `base/.gitignore` list `patterns` (missing lines appended once; nothing else rewritten).

    Returns None when it does, else why not (also logged): a `.gitignore` that is a link, a FIFO, a
    device or a folder is left alone and never opened; one that is not UTF-8 or cannot be written is
    left as it was."""
    gitignore = base / GITIGNORE_NAME
    try:
        st: os.stat_result | None = os.lstat(gitignore)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return _note(gitignore, f"cannot be checked ({exc.strerror or exc})")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return _note(gitignore, f"is {kind_of(st.st_mode)}, not a plain file, so it is left alone")
    try:
        existing = read_text(gitignore, max_bytes=_MAX_GITIGNORE_BYTES, name=str(gitignore)) or ""
    except NotText:
        return _note(gitignore, "is not UTF-8 text, so it is left alone")
    except PathRefused as exc:
        return _note(gitignore, f"is not read ({exc})")
    have = {line.strip() for line in existing.splitlines()}
    missing = [p for p in patterns if p not in have]
    if not missing:
        return None
    header = [] if GITIGNORE_HEADER in have else [GITIGNORE_HEADER]
    text = existing
    if text and not text.endswith("\n"):
        text += "\n"
    text += "".join(f"{line}\n" for line in [*header, *missing])
    try:
        write_atomic(gitignore, text.encode("utf-8"))
    except OSError as exc:
        return _note(gitignore, f"cannot be written ({exc.strerror or exc})")
    return None


def _note(gitignore: Path, problem: str) -> str:
    note = (
        f"{gitignore} {problem}; git may offer private files (USER.md, the history, sessions, the "
        f"archive) for commit. Replace it with a plain file listing: {' '.join(PRIVATE_PATTERNS)}"
    )
    logger.warning("%s", note)
    return note
