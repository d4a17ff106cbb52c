"""Copies of hand-edited memory files, kept in `.backups/` before the store rewrites them.

A file someone edited by hand (not in the store's canonical form) may hold formatting or text the
store would normalise away, so its exact bytes are copied first. The copy goes through
`safe_write.write_atomic` like every file the product writes (an unguessable temp name, fsync,
rename): it is complete on disk before the rewrite, or the rewrite is refused, and a failed copy (a
full disk) leaves nothing behind, so it never pushes a real backup out of the newest `MAX_BACKUPS`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
import time
from pathlib import Path

from my_agent_core.memory.errors import MemoryEditError, MemoryWriteError
from my_agent_core.safe_write import TEMP_SUFFIX, write_atomic

__all__ = ["BACKUP_DIR", "MAX_BACKUPS", "back_up", "stale_temp_files"]

BACKUP_DIR = ".backups"
MAX_BACKUPS = 20


def back_up(folder: Path, name: str, raw: str) -> None:
    """Copy `raw` (the text of the file `name` of `folder`) to `folder/.backups/`, owner-only, and
    keep the newest `MAX_BACKUPS` copies of that file. Raises `MemoryEditError` when `.backups` is
    not a plain folder and `MemoryWriteError` when the disk refuses the copy."""
    backups = folder / BACKUP_DIR
    if backups.is_symlink() or (backups.exists() and not backups.is_dir()):
        raise MemoryEditError(
            f"{name} was edited by hand and must be backed up before the store rewrites "
            f"it, but {backups} is not a plain folder (a link or a file); move it away and retry."
        )
    now = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now / 1e9))
    final = backups / f"{name}.{stamp}.{now % 1_000_000_000:09d}.{os.getpid()}.bak"
    try:
        backups.mkdir(mode=0o700, exist_ok=True)
        # the exact bytes: valid UTF-8 round-trips
        write_atomic(final, raw.encode("utf-8"), mode=0o600)
    except OSError as exc:
        raise MemoryWriteError(
            f"{name} was edited by hand and is backed up before the store rewrites it, but the "
            f"backup could not be written ({exc.strerror or exc}); nothing was written."
        ) from None
    _prune(backups, name)


def _prune(backups: Path, name: str) -> None:
    """Delete the copies of `name` past the newest `MAX_BACKUPS`, and empty leftovers (a failed
    copy of an older version), which never count towards it."""
    kept = 0
    for old in sorted(backups.glob(f"{name}.*.bak"), reverse=True):
        with contextlib.suppress(OSError):
            st = old.lstat()
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_size and kept < MAX_BACKUPS:
                kept += 1
                continue
            old.unlink()


def stale_temp_files(folder: Path) -> list[Path]:
    """Temp files of copies that died mid-write in `folder/.backups/` (never through a link)."""
    backups = folder / BACKUP_DIR
    try:
        if not stat.S_ISDIR(os.lstat(backups).st_mode):
            return []
        names = os.listdir(backups)
    except OSError:
        return []
    # `.NAME.<stamp>.bak.<random>.tmp` from write_atomic; `.NAME.<stamp>.bak.tmp` from older versions
    return [backups / n for n in names if fnmatch.fnmatchcase(n, f".*.bak*{TEMP_SUFFIX}")]
