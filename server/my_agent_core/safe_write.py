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

from my_agent_core.paths import PathRefused, kind_of

__all__ = ["TEMP_SUFFIX", "make_folders", "temp_name", "write_atomic"]

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
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def temp_name(target: Path) -> Path:
    """A fresh, unguessable temp path beside `target` (`.NAME.<96 random bits>.tmp`)."""
    return target.with_name(f".{target.name}.{secrets.token_hex(12)}{TEMP_SUFFIX}")


def _current_mode(path: Path) -> int:
    """The bits of the regular file at `path`; for anything else (missing, a link whose own bits are
    0o777, a FIFO) the default less the umask: a planted link never makes the new file writable."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return _DEFAULT_MODE & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (`os.umask` sets it, and
    for that instant another thread's new file would get the bits the umask should remove)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o077)  # the brief window is at least owner-only
    os.umask(umask)
    return umask


def write_atomic(
    path: Path | str,
    data: bytes,
    *,
    mode: int | None = None,
    keep_mode: bool = True,
    before_sync: Callable[[], None] | None = None,
    exclusive: bool = False,
) -> os.stat_result:
    """Replace `path` by `data` (temp + fsync + rename + folder fsync); returns the new file's stat.

    `mode`: the new file's permission bits; without it the existing file's are kept (`keep_mode`) or
    0o666 less the umask is used. `before_sync` runs after the data is written and before the fsync,
    so one disk flush carries both (the memory store appends its journal record there).
    `exclusive`: create `path` only if no file (nor link) has that name, complete or not at all
    (`FileExistsError` otherwise): the temp file is hard-linked to the name instead of renamed over
    it, so of two processes creating one file (a key), exactly one wins and the other reads it.
    Raises OSError; on any failure the original file is untouched and the temp file is gone.
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
                os.fchmod(fd, _DEFAULT_MODE & ~_umask())
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, "the write made no progress")
                view = view[written:]
            if before_sync is not None:
                before_sync()
            os.fsync(fd)
            if exclusive:
                os.link(tmp, target, follow_symlinks=False)  # EEXIST: someone was first
                os.unlink(tmp)
            else:
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


def make_folders(root: Path | str, *names: str, mode: int = 0o777) -> Path:
    """`root/names[0]/names[1]/...`, each missing folder created with `mode` (less the umask), never
    through a link: each step is opened relative to the one before with `O_NOFOLLOW`, so a link a
    cloned repository planted at any step (or swapped in meanwhile) cannot send the folder, or what
    is later written in it, out of `root`. `root` itself is taken as given (the user chose it).

    Raises `PathRefused` (`root` is missing, a step is a link or not a folder) or OSError (cannot be
    created).
    """
    try:
        fd = os.open(root, _FOLDER)
    except FileNotFoundError:
        raise PathRefused(f"{root} does not exist; nothing is created in it.") from None
    try:
        path = Path(root)
        for name in names:
            if not name or name in (".", "..") or os.sep in name:
                raise ValueError(f"not a folder name: {name!r}")
            path = path / name
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, mode, dir_fd=fd)
            try:
                step = os.open(name, _FOLDER | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                try:
                    st_mode = os.lstat(path).st_mode
                    what = "a file" if stat.S_ISREG(st_mode) else kind_of(st_mode)
                except OSError:
                    what = "not a folder"
                raise PathRefused(
                    f"{path} is {what}, not a real folder; my-agent does not create or write "
                    "anything through it (a cloned repository could aim it at your files). Move it "
                    "away and retry."
                ) from None
            os.close(fd)
            fd = step
        return path
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    """Flush the rename itself (best effort: some file systems refuse to fsync a folder)."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
