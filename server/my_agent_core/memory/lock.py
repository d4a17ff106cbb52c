"""The memory folder's lock, waited for with a bound, and who holds it when the wait runs out.

A `flock` held by a process that never lets go (a hung chat, a stopped debugger, `flock .lock sleep`)
would otherwise hang every edit forever: the CLI, the tool and language-server requests that then
never answer and pin their worker threads. So the wait polls with a deadline and the failure names
the holder (Linux lists flock holders in /proc/locks), so the user knows what to end.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LockHolder", "LockTimeout", "acquire", "holder_of", "open_lock_file"]

_FIRST_POLL = 0.0005  # seconds; doubled after every miss...
_LAST_POLL = 0.01  # ...up to this, so a freed lock is taken within 10 ms
_COMMAND_CHARS = 60


@dataclass(frozen=True, slots=True)
class LockHolder:
    """The process that holds a lock: its pid and a short form of its command line (None: unknown)."""

    pid: int
    command: str | None

    def __str__(self) -> str:
        return f"pid {self.pid}" + (f" ({self.command})" if self.command else "")


class LockTimeout(Exception):
    """The lock was still held when the wait ran out (`waited` seconds)."""

    def __init__(self, waited: float, holder: LockHolder | None) -> None:
        super().__init__(f"still locked after {waited:.3g} s")
        self.waited = waited
        self.holder = holder


_OPEN_LOCK = (
    os.O_RDWR
    | os.O_CREAT
    | os.O_NONBLOCK
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def open_lock_file(path: Path | str) -> int:
    """A descriptor of the lock file at `path`, created owner-only when missing.

    A lock file is opened with `O_CREAT` and no rename, so it is the one file whose open itself must
    refuse what a cloned repository could plant there: a link (`O_NOFOLLOW`: the open fails rather
    than create or touch a file elsewhere) and a FIFO or device (`O_NONBLOCK`, then refused as not a
    regular file). Raises OSError whose `strerror` says which.
    """
    try:
        fd = os.open(path, _OPEN_LOCK, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "it is a symbolic link", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "it is not a regular file", str(path))
    return fd


def acquire(fd: int, timeout: float) -> None:
    """Take an exclusive flock on `fd`, waiting at most `timeout` seconds (raises `LockTimeout`).

    Uncontended, this is one non-blocking flock; contended, it polls, since a blocking flock cannot
    be interrupted from another thread without signals."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    start = time.monotonic()
    deadline = start + max(0.0, timeout)
    delay = _FIRST_POLL
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LockTimeout(time.monotonic() - start, holder_of(fd))
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, _LAST_POLL)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            continue


def holder_of(fd: int) -> LockHolder | None:
    """The process holding a flock on the file of `fd`, from /proc/locks (None when unknown)."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read(1 << 20).splitlines()
    except OSError:
        return None
    device = (os.major(st.st_dev), os.minor(st.st_dev))
    same_inode: int | None = None
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2146387 0 EOF"; "1: -> FLOCK ..." is a waiter.
        if len(parts) < 6 or parts[1] != "FLOCK":
            continue
        try:
            pid = int(parts[4])
            major, minor, inode = parts[5].split(":")
            if int(inode) != st.st_ino:
                continue
            if (int(major, 16), int(minor, 16)) == device:
                return LockHolder(pid, command_of(pid))
        except ValueError:
            continue
        same_inode = pid  # a stacked file system may report another device number
    return LockHolder(same_inode, command_of(same_inode)) if same_inode else None


def command_of(pid: int) -> str | None:
    """A short, printable form of a process's command line ("my-agent chat"), or None."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(4096)
    except OSError:
        return None
    args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    if not args:
        return None
    first, rest = os.path.basename(args[0]), args[1:]
    if first.startswith("python") and rest:  # `python -m pkg ...` / `python script ...`
        if rest[0] == "-m" and len(rest) > 1:
            first, rest = rest[1], rest[2:]
        elif not rest[0].startswith("-"):
            first, rest = os.path.basename(rest[0]), rest[1:]
    text = " ".join([first, *rest])
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"
