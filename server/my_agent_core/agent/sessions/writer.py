"""Session files on disk: the writer that appends one session's records (holding the file's lock),
the lock probes, the owner-only check, and the background fsync.

Each record is one `os.write` on an O_APPEND descriptor; a failed write is undone with `ftruncate`,
so a file is always a valid prefix of what the agent meant to write. The exclusive `flock` a writer
holds dies with its process, so a crashed window never blocks a session.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import queue
import stat
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...paths import NotOwned, owned_by_user, read_tail
from .format import (
    SUFFIX,
    SessionBusy,
    SessionDamaged,
    SessionError,
    SessionHeader,
    SessionNotFound,
    SessionRecord,
    check_id,
    encode_record,
)
from .signing import sign_header

__all__ = [
    "TAIL_BYTES",
    "SessionWriter",
    "check_owned",
    "is_open",
    "remove_unless_open",
    "try_lock",
]

logger = logging.getLogger(__name__)

#: The last commit record is looked for in the last this many bytes for a listing.
TAIL_BYTES = 256 * 1024


def try_lock(fd: int) -> bool:
    """Try the session's exclusive lock; False when another holder has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def check_owned(path: Path) -> os.stat_result | None:
    """The file's status when it is a regular, owner-only file of this user (what this program
    writes); None when it does not exist. Anything else is refused without being read."""
    try:
        return owned_by_user(path)
    except NotOwned as exc:
        if exc.wrong_kind:
            raise SessionDamaged(
                f"{path.name} is not a regular file (a link or a special file); it is not read."
            ) from None
        raise SessionDamaged(
            f"{path.name} was not written by my-agent for you on this machine: session files are "
            f"owner-only (0600) and yours, this one is {stat.S_IMODE(exc.st.st_mode):04o} owned by "
            f"uid {exc.st.st_uid} (a cloned repository may have shipped it). It is not resumed."
        ) from None
    except OSError as exc:
        raise SessionError(f"{path.name} cannot be read: {exc.strerror or exc}.") from None


class _Syncer:
    """One daemon thread that fsyncs session files after their turns, off the turn's path: a record
    is in the kernel (it survives the process) when `write` returns; the fsync makes it survive a
    power cut about a millisecond later."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[int, threading.Event]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fd: int) -> threading.Event:
        done = threading.Event()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="my-agent-fsync", daemon=True
                )
                self._thread.start()
        self._jobs.put((fd, done))
        return done

    def _run(self) -> None:
        while True:
            fd, done = self._jobs.get()
            try:
                os.fsync(fd)
            except OSError:
                logger.warning("fsync of a session file failed", exc_info=True)
            finally:
                done.set()


_SYNCER = _Syncer()


def _close_after_sync(fd: int, synced: list[threading.Event]) -> None:
    """Close a session file once its pending fsync is done (never fsync a reused descriptor)."""
    for event in synced:
        event.wait(10)
    os.close(fd)


class SessionWriter:
    """Appends the records of one open session to its file and holds the file's lock.

    Each record is one `os.write` on an O_APPEND descriptor. A write that fails (a full disk) is
    undone with `ftruncate`, so the file stays a valid prefix; the records not written are kept and
    retried with the next record, and `error` says what went wrong until they are all on disk.
    """

    def __init__(self, path: Path, fd: int, size: int, *, sync: bool = True) -> None:
        self.path = path
        self._fd: int | None = fd
        # A writer dropped without close() (an agent nobody closed) still releases the file and its
        # lock when it is collected, so no session stays locked for the life of the process.
        self._synced: list[threading.Event] = []  # the latest fsync of this file, if any
        self._release = weakref.finalize(self, _close_after_sync, fd, self._synced)
        self._size = size
        self._pending: list[bytes] = []
        self.sync = sync
        self.error: str | None = None

    @classmethod
    def create(cls, directory: Path, header: SessionHeader, *, sync: bool = True) -> SessionWriter:
        """A new session file holding `header` (refused when the id is taken)."""
        path = directory / f"{check_id(header.id)}{SUFFIX}"
        first_line = sign_header(encode_record(header.record()))  # no key, no file
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise SessionError(f"a session with the id {header.id} exists already") from None
        except OSError as exc:
            raise SessionError(
                f"cannot create the session file {path}: {exc.strerror or exc}"
            ) from None
        try_lock(fd)
        writer = cls(path, fd, 0, sync=sync)
        writer._pending.append(first_line)
        writer._flush()
        if writer.error is None and sync:
            with contextlib.suppress(OSError):
                dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        return writer

    @classmethod
    def reopen(cls, record: SessionRecord, *, sync: bool = True) -> SessionWriter:
        """Hold and continue the file `record` was loaded from: a torn last line is cut off, and an
        interrupted turn's invalid tail is rolled back with a `cut` record."""
        path = record.path
        if path is None:
            raise SessionError("this session was not loaded from a file")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise SessionNotFound(f"the session {record.id} no longer exists") from None
        except OSError as exc:
            raise SessionError(f"cannot open {path.name}: {exc.strerror or exc}") from None
        try:
            if not try_lock(fd):
                raise SessionBusy(
                    f"the session {record.id} is open in another window or process; close it "
                    "there first."
                )
            st, now = os.fstat(fd), _stat(path)
            if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                raise SessionNotFound(f"the session {record.id} was deleted meanwhile")
            if st.st_size != record.valid_bytes:
                if st.st_size < record.valid_bytes:
                    raise SessionError(f"{path.name} changed while it was being resumed")
                # Records past the loaded ones: written by another holder since, or a torn line.
                _check_tail_is_torn(path, record.valid_bytes, st.st_size)
                os.ftruncate(fd, record.valid_bytes)
        except BaseException:
            os.close(fd)
            raise
        writer = cls(path, fd, record.valid_bytes, sync=sync)
        if record.interrupted:
            writer.append({"t": "cut", "n": len(record.messages)})
        return writer

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record (after any that an earlier failure left pending)."""
        self._pending.append(encode_record(record))
        self._flush()

    def _flush(self) -> None:
        fd = self._fd
        if fd is None:
            return
        while self._pending:
            data = self._pending[0]
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(errno.ENOSPC, "short write (is the disk full?)")
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self._size)  # never leave half a record
                self.error = (
                    f"the session could not be saved to {self.path}: {exc.strerror or exc}; it "
                    "goes on in memory and is saved again once the disk accepts it"
                )
                return
            self._size += written
            self._pending.pop(0)
        self.error = None

    def commit(self, record: Mapping[str, Any]) -> None:
        """Write the end-of-turn record, then fsync the file off the caller's path."""
        self.append(record)
        fd = self._fd
        if fd is not None and self.sync and self.error is None:
            self._synced[:] = [_SYNCER.submit(fd)]

    def close(self) -> None:
        """Release the file (after its pending fsync; records never written stay unwritten)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        self._release()


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _check_tail_is_torn(path: Path, start: int, end: int) -> None:
    """Refuse to cut complete records that appeared after `start` (another writer's work)."""
    loaded = read_tail(path, max_bytes=min(end - start, TAIL_BYTES), name=path.name)
    tail = loaded[0] if loaded else b""
    if b"\n" in tail:
        raise SessionBusy(f"{path.name} was written by another process while it was being resumed")


def is_open(path: Path) -> bool:
    """True when some process holds the session file's lock (an agent has it open)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return not try_lock(fd)
    finally:
        os.close(fd)  # closing releases the probe's lock


def remove_unless_open(path: Path) -> bool:
    """Unlink `path` while holding its lock; False when someone holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        if not try_lock(fd):
            return False
        os.unlink(path)
        return True
    finally:
        os.close(fd)
