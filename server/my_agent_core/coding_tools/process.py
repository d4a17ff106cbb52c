"""A helper process (ripgrep) read line by line, stopped on cancel or timeout; its input, if any,
written by a thread of its own (a process blocked on a full output pipe never blocks our writes)."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .seams import CancelToken

__all__ = ["StreamedRun"]


@dataclass
class StreamedRun:
    """One helper process whose stdout lines are read as they come; killed on cancel, timeout or
    close.

    stderr is drained by a thread so a chatty process can never block on a full pipe.
    """

    args: list[str]
    cwd: Path
    cancel: CancelToken | None = None
    timeout_s: float = 60.0
    input: bytes | None = None

    def __post_init__(self) -> None:
        self.stopped: str | None = None  # "cancelled" | "timeout" once we killed it
        self._proc = subprocess.Popen(
            self.args,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL if self.input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._stderr: list[bytes] = []
        self._done = threading.Event()
        self._threads = [
            threading.Thread(target=self._drain, daemon=True),
            threading.Thread(target=self._watch, daemon=True),
        ]
        if self.input is not None:
            self._threads.append(threading.Thread(target=self._feed, daemon=True))
        for thread in self._threads:
            thread.start()

    def _feed(self) -> None:
        stream = self._proc.stdin
        assert stream is not None and self.input is not None
        try:
            stream.write(self.input)
        except (OSError, ValueError):
            pass  # it stopped reading (killed, or done: `--max-count` reached)
        finally:
            with contextlib.suppress(OSError):
                stream.close()

    def _drain(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        total = 0
        while chunk := stream.read(8192):
            if total < 64 * 1024:
                self._stderr.append(chunk)
            total += len(chunk)

    def _watch(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not self._done.wait(0.05):
            if self.cancel is not None and self.cancel.is_set():
                self._kill("cancelled")
                return
            if time.monotonic() > deadline:
                self._kill("timeout")
                return

    def _kill(self, why: str) -> None:
        if self._proc.poll() is None:
            self.stopped = why
            self._proc.kill()

    def lines(self) -> Iterator[bytes]:
        assert self._proc.stdout is not None
        yield from self._proc.stdout

    def close(self) -> tuple[int, str]:
        """Stop the process if it still runs; (exit code, stderr text)."""
        self._done.set()
        if self._proc.poll() is None:
            self._proc.kill()
        code = self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._threads[0].join(5)
        return code, b"".join(self._stderr).decode("utf-8", errors="replace")
