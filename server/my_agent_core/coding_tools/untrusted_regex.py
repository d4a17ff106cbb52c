"""Running a model's regex where it can be stopped: a child process, killed at the call's deadline.

The pure-Python search (ripgrep missing) and the search of unsaved editor text without ripgrep
match with Python's backtracking `re`. A pattern such as `(a+)+$` can take years on one line, and
a match in C neither checks a deadline nor lets other threads run, so the matching happens in
`regex_worker.py`, one process per search_text call, fed one text at a time; a watcher kills it
when the call's deadline passes or the turn is cancelled, and the caller gets `RegexStopped`.
"""

from __future__ import annotations

import contextlib
import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import IO

from .process import KillWatch
from .seams import CancelToken

__all__ = ["RegexProcess", "RegexRefused", "RegexStopped"]

_WORKER = Path(__file__).with_name("regex_worker.py")


class RegexRefused(ValueError):
    """Python's `re` cannot compile the pattern; `str(exc)` is its reason."""


class RegexStopped(Exception):
    """The regex ran past the deadline ("timeout") or the turn was cancelled ("cancelled")."""


class RegexProcess:
    """One child matching one pattern; `lines(data)` answers for one text. Use as a context
    manager (the child is killed on exit)."""

    def __init__(
        self, pattern: str, *, limit: int, deadline: float, cancel: CancelToken | None = None
    ) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._watch = KillWatch(self._proc, deadline=deadline, cancel=cancel, every_s=0.02)
        try:
            self._send(json.dumps({"pattern": pattern, "limit": limit}).encode("utf-8") + b"\n")
            answer = self._receive()
        except BaseException:
            self.close()
            raise
        if not isinstance(answer, dict) or "error" in answer:
            self.close()
            detail = answer.get("error") if isinstance(answer, dict) else answer
            raise RegexRefused(str(detail))

    def __enter__(self) -> RegexProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lines(self, data: bytes) -> list[tuple[int, str, int]]:
        """(line number, line, column) of the first matching lines of `data`."""
        self._send(struct.pack(">Q", len(data)) + data)
        answer = self._receive()
        if not isinstance(answer, list):
            raise RegexStopped(self.stopped or "failed")
        return [(int(n), str(line), int(column)) for n, line, column in answer]

    @property
    def stopped(self) -> str | None:
        """Why the watch killed the child ("cancelled" or "timeout"); None while it was not."""
        return self._watch.stopped

    def close(self) -> None:
        self._watch.done()
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _send(self, payload: bytes) -> None:
        stdin: IO[bytes] | None = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(payload)
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise RegexStopped(self.stopped or "failed") from None

    def _receive(self) -> object:
        stdout: IO[bytes] | None = self._proc.stdout
        assert stdout is not None
        try:
            line = stdout.readline()
        except (ValueError, OSError):
            line = b""
        if not line:
            raise RegexStopped(self.stopped or "failed")
        return json.loads(line)
