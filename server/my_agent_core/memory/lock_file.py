"""The `.lock` of one memory folder, held open between edits, and the hold an edit takes on it.

Opening and closing the lock file on every edit cost as much as the rest of the store's own work, so
its descriptor stays open and an edit only `flock`s it. Open is checked once, when it is opened (a
link out of the folder, anything but a regular file); it is re-opened after a fork (a child must not
share its parent's open file, whose lock the parent's flock would also take) and when the file was
deleted or replaced under us (the name no longer gives the file held), so every process always locks
the file the others open by that name. That last check is the edit's look at the folder's own files
(`OwnFiles.look`), taken right after the `flock` and handed on to the edit, which needs it next: one
look an edit, under the lock. `lock.py` does the bounded wait and names the holder.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
from types import TracebackType

from my_agent_core.layout import LOCK_NAME
from my_agent_core.memory import lock as flock_wait
from my_agent_core.memory.errors import (
    MemoryEditError,
    MemoryLockTimeout,
    MemoryWriteError,
    Unavailable,
)
from my_agent_core.memory.own_files import OwnFiles

__all__ = ["FolderHold", "LockFile"]

#: How many forks separate this process from the one that imported this module: the descriptor is
#: re-opened in a forked child (each edit checks, so without a `getpid` system call).
_FORKS = [0]
os.register_at_fork(after_in_child=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))


class LockFile:
    """The lock file of one folder (`files.dir`), its descriptor kept open by the process that
    opened it. `private`: the folder is created owner-only (the user's own profile folder)."""

    __slots__ = ("_at", "_fd", "_held", "_pid", "files", "path", "private")

    def __init__(self, files: OwnFiles, *, private: bool = False) -> None:
        self.files = files
        self.path = files.dir / LOCK_NAME
        self.private = private
        self._fd: int | None = None
        self._pid = -1  # the fork generation that opened `_fd`
        self._held = (-1, -1)  # (device, inode) of the open file
        #: Where `.lock` is in the folder's look at its own files (None: not among them).
        self._at = files.names.index(LOCK_NAME) if LOCK_NAME in files.names else None

    def acquire(self, deadline: float) -> int:
        """Lock `.lock` (waiting until `deadline`, a `time.monotonic()` value) and return its
        descriptor. Raises `Unavailable` (a link out, not a regular file), `lock.LockTimeout`
        and `OSError` (the folder or file cannot be created or opened).

        Once locked, the folder's own files are looked at (`OwnFiles.look`): `.lock` must still
        be the file held, the one every other process opens by that name; the look then serves
        the edit (`OwnFiles.offer`), which would take it next anyway."""
        while True:
            fd = self._fd
            opened = fd is None or self._pid != _FORKS[0]
            if opened:
                fd = self._open()
            assert fd is not None
            flock_wait.acquire(fd, deadline - time.monotonic())
            if self._at is not None:
                look = self.files.look()
                named = look[self._at]
                if (
                    named is not None
                    and stat.S_ISREG(named.st_mode)
                    and (named.st_dev, named.st_ino) == self._held
                ):
                    self.files.offer(look)
                    return fd
            # Not the named file, or no look: the file's own count of names decides (a file
            # system whose `lstat` and `fstat` disagree on inodes must not make this loop forever).
            if (opened or self._at is None) and os.fstat(fd).st_nlink > 0:
                return fd
            os.close(fd)  # deleted or replaced under us: lock the new one
            self._fd = None

    def release(self, fd: int) -> None:
        self.files.withdraw()
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _open(self) -> int:
        # An open lock is re-checked only when re-opened: swapping the file for a link unlinks the
        # inode we hold (st_nlink 0 in `acquire`), which brings us back here.
        self.files.refuse_outside_link(self.path)
        folder = self.files.dir
        if self.private and not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = flock_wait.open_lock_file(self.path)  # O_NOFOLLOW, and only a regular file
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EINVAL):
                raise
            raise Unavailable(
                f"{LOCK_NAME} in {folder} is not a regular file ({exc.strerror}); move it away "
                "and retry (the store recreates it)."
            ) from None
        st = os.fstat(fd)
        self._held = (st.st_dev, st.st_ino)
        self._fd = fd
        self._pid = _FORKS[0]
        return fd

    def close(self) -> None:
        """Close the descriptor, if this process opened it (a forked child's copy is its
        parent's to close)."""
        if self._fd is not None and self._pid == _FORKS[0]:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None


class FolderHold:
    """One edit's hold on a folder: the store's thread lock (threads of one store wait for each
    other), then the folder's `flock`, both within `timeout` seconds; `what` names the locked
    thing in messages. A failure raises the store's error for it and holds nothing."""

    __slots__ = ("_fd", "lock", "thread_lock", "timeout", "what")

    def __init__(
        self, lock: LockFile, thread_lock: threading.RLock, timeout: float, what: str
    ) -> None:
        self.lock = lock
        self.thread_lock = thread_lock
        self.timeout = max(0.0, timeout)
        self.what = what
        self._fd = -1

    def __enter__(self) -> None:
        timeout = self.timeout
        deadline = time.monotonic() + timeout
        if not self.thread_lock.acquire(timeout=timeout):
            raise MemoryLockTimeout(
                f"{self.what} is locked by another thread of this process for {timeout:g} s; "
                "nothing was written. Retry."
            )
        try:
            self._fd = self._acquire(deadline)
        except BaseException:
            self.thread_lock.release()
            raise

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.lock.release(self._fd)
        finally:
            self.thread_lock.release()

    def _acquire(self, deadline: float) -> int:
        try:
            return self.lock.acquire(deadline)
        except Unavailable as exc:
            raise MemoryEditError(str(exc)) from None
        except flock_wait.LockTimeout as exc:
            holder = exc.holder
            if holder is None:
                who, end = "another process", f"end the process that holds {LOCK_NAME}"
            else:
                who, end = str(holder), "end that process"
            raise MemoryLockTimeout(
                f"{self.what} is locked by {who} for {exc.waited:.3g} s; nothing was written. "
                f"Retry, or {end}.",
                holder,
            ) from None
        except OSError as exc:
            raise MemoryWriteError(
                f"Cannot lock the memory folder ({self.lock.path}: {exc.strerror}); "
                "nothing was written."
            ) from None
