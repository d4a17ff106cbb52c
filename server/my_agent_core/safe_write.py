"""The ONE way the product writes a file: a temp file nobody can predict or plant, then a rename.

A cloned repository may ship symbolic links under any name it can guess (`.gitignore.<pid>.tmp`, one
per likely pid), so a temp name must be unguessable and its open must refuse to follow a link or to
reuse an existing file (`O_CREAT | O_EXCL | O_NOFOLLOW`). The temp file lives in the target's folder
(a rename never crosses file systems), is flushed to disk before the rename, and the folder is flushed
after it, so a crash leaves the old file or the new one, never half of each.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "temp_name", "write_atomic"]

#: Every temp file ends so (the lock holder's sweep and `.gitignore` patterns match on it).
TEMP_SUFFIX = ".tmp"
_CREATE = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_DEFAULT_MODE = 0o666


def temp_name(target: Path) -> Path:
    """A fresh, unguessable temp path beside `target` (`.NAME.<96 random bits>.tmp`)."""
    return target.with_name(f".{target.name}.{secrets.token_hex(12)}{TEMP_SUFFIX}")


def _current_mode(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return _DEFAULT_MODE & ~umask


def write_atomic(
    path: Path | str,
    data: bytes,
    *,
    mode: int | None = None,
    keep_mode: bool = True,
    before_sync: Callable[[], None] | None = None,
) -> os.stat_result:
    """Replace `path` by `data` (temp + fsync + rename + folder fsync); returns the new file's stat.

    `mode`: the new file's permission bits; without it the existing file's are kept (`keep_mode`) or
    0o666 less the umask is used. `before_sync` runs after the data is written and before the fsync,
    so one disk flush carries both (the memory store appends its journal record there). Raises
    OSError; on any failure the original file is untouched and the temp file is gone.
    """
    target = Path(path)
    if mode is None:
        mode = _current_mode(target) if keep_mode else None
    fd = -1
    tmp = target
    for _ in range(16):  # a collision of 96 random bits means someone is planting names: give up
        tmp = temp_name(target)
        try:
            fd = os.open(tmp, _CREATE, 0o600 if mode is None else mode & 0o777)
            break
        except FileExistsError:
            continue
    if fd < 0:
        raise OSError(errno.EEXIST, f"cannot create a temporary file beside {target.name}")
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)  # exactly these bits, whatever the umask
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(fd, _DEFAULT_MODE & ~umask)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, "the write made no progress")
                view = view[written:]
            if before_sync is not None:
                before_sync()
            os.fsync(fd)
            os.replace(tmp, target)
            result = os.fstat(fd)  # after the rename, which sets its ctime
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(target.parent)
    return result


def _sync_folder(folder: Path) -> None:
    """Flush the rename itself (best effort: some file systems refuse to fsync a folder)."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
