"""A helper process (ripgrep) read line by line, stopped on cancel or timeout; its input, if any,
written by a thread of its own (a process blocked on a full output pipe never blocks our writes).
`KillWatch` is the stop itself, shared with the regex worker (`untrusted_regex.py`)."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .seams import CancelToken

__all__ = ["KillWatch", "StreamedRun"]


class KillWatch:
    """A thread that kills `proc` once `cancel` is set or the monotonic `deadline` passes;
    `stopped` then says which ("cancelled" | "timeout"). `done()` ends the watch."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        *,
        deadline: float,
        cancel: CancelToken | None,
        every_s: float = 0.05,
    ) -> None:
        self.stopped: str | None = None
        self._proc = proc
        self._deadline = deadline
        self._cancel = cancel
        self._every_s = every_s
        self._done = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def done(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(self._every_s):
            if self._cancel is not None and self._cancel.is_set():
                self._kill("cancelled")
                return
            if time.monotonic() > self._deadline:
                self._kill("timeout")
                return

    def _kill(self, why: str) -> None:
        if self._proc.poll() is None:
            self.stopped = why
            self._proc.kill()


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
        self._proc = subprocess.Popen(
            self.args,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL if self.input is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._stderr: list[bytes] = []
        self._watch = KillWatch(
            self._proc, deadline=time.monotonic() + self.timeout_s, cancel=self.cancel
        )
        self._threads = [threading.Thread(target=self._drain, daemon=True)]
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

    @property
    def stopped(self) -> str | None:
        """Why the watch killed it ("cancelled" or "timeout"); None while it was not."""
        return self._watch.stopped

    def lines(self) -> Iterator[bytes]:
        assert self._proc.stdout is not None
        yield from self._proc.stdout

    def close(self) -> tuple[int, str]:
        """Stop the process if it still runs; (exit code, stderr text)."""
        self._watch.done()
        if self._proc.poll() is None:
            self._proc.kill()
        code = self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._threads[0].join(5)
        return code, b"".join(self._stderr).decode("utf-8", errors="replace")
