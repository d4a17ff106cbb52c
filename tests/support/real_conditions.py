"""Real failure conditions for the store's tests: a full disk, an I/O error, a lock held by another
process, another user. Nothing is mocked: each helper sets the condition up with the system's own
tools and skips the test with a clear reason where the machine does not allow it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

__all__ = [
    "NOBODY",
    "PAGE",
    "as_other_user",
    "fill_disk",
    "held_lock",
    "io_error_file",
    "tiny_disk",
]

PAGE = 4096  # tmpfs counts its size in pages of this many bytes
NOBODY = 65534


@contextlib.contextmanager
def tiny_disk(folder: Path, size: int = 256 * 1024) -> Iterator[Path]:
    """A tmpfs of `size` bytes mounted on `folder` (created): writes past it fail with ENOSPC."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a tiny tmpfs needs root and mount(8) (not available here)")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill_disk(folder: Path, *, leave_pages: int = 0) -> Path:
    """Fill the file system of `folder` with a filler file, then free `leave_pages` pages again."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        chunk = b"\0" * PAGE
        while True:
            try:
                if os.write(fd, chunk) < PAGE:
                    break
            except OSError:
                break
        size = os.fstat(fd).st_size // PAGE * PAGE
        os.ftruncate(fd, max(0, size - leave_pages * PAGE))
    finally:
        os.close(fd)
    return filler


@contextlib.contextmanager
def io_error_file(path: Path) -> Iterator[Path]:
    """`path` (created) bind-mounted onto this process's /proc/<pid>/mem: opening it works, reading
    it from this process fails with EIO (offset 0 is never mapped)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a bind mount needs root and mount(8) (not available here)")
    path.touch()
    done = subprocess.run(
        ["mount", "--bind", f"/proc/{os.getpid()}/mem", str(path)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"bind mounts are not permitted here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def held_lock(lock_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Another process (`flock LOCK sleep`) holding an exclusive flock on `lock_path` until the
    block ends; yields that process (its pid is the holder)."""
    if shutil.which("flock") is None:
        pytest.skip("flock(1) from util-linux is not installed")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    # -o: flock itself holds the lock (its child does not inherit it), so ending flock frees it.
    holder = subprocess.Popen(
        ["flock", "-o", str(lock_path), "sleep", "600"], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # wait until it really holds the lock
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                break
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
            if holder.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("flock did not take the lock")
            time.sleep(0.01)
        yield holder
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()


def as_other_user() -> list[str]:
    """A command prefix that runs the rest as user `nobody` (root only; skips otherwise)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("running as another user needs root and setpriv(1)")
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
