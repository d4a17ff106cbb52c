"""Finding and running ripgrep: the fast path of search_text and list_files.

`rg` comes from the machine (Debian's `ripgrep`), from a configured path, or from the editor (VS
Code ships one under `node_modules/@vscode/ripgrep/bin/`). It is always run with `--no-config`, so
neither the environment nor a cloned repository can add flags (such as a preprocessor that runs a
program), and with the flags that make it see the same files as the pure-Python walker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .seams import CancelToken

__all__ = ["BASE_FLAGS", "RipgrepRun", "editor_ripgrep_paths", "find_ripgrep"]

BASE_FLAGS: tuple[str, ...] = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-messages",
)

_BUNDLED = (
    ("node_modules", "@vscode", "ripgrep", "bin", "rg"),
    ("node_modules.asar.unpacked", "@vscode", "ripgrep", "bin", "rg"),
)


def editor_ripgrep_paths(app_root: str | os.PathLike[str]) -> list[Path]:
    """Where VS Code (`vscode.env.appRoot`) or code-server (`lib/vscode`) keeps its ripgrep."""
    return [Path(app_root).joinpath(*parts) for parts in _BUNDLED]


@lru_cache(maxsize=16)
def _works(path: str) -> bool:
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.startswith(b"ripgrep")


def find_ripgrep(
    configured: str | None = None, *, app_roots: Sequence[str | os.PathLike[str]] = ()
) -> str | None:
    """The first working `rg`: the configured path, then PATH, then the editors' bundled copies."""
    candidates: list[str] = []
    if configured:
        candidates.append(os.path.expanduser(configured))
    found = shutil.which("rg")
    if found:
        candidates.append(found)
    for app_root in app_roots:
        candidates.extend(str(path) for path in editor_ripgrep_paths(app_root))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and _works(candidate):
            return candidate
    return None


@dataclass
class RipgrepRun:
    """One rg process whose stdout lines are read as they come; killed on cancel, timeout or close.

    stderr is drained by a thread so a chatty rg can never block on a full pipe.
    """

    args: list[str]
    cwd: Path
    cancel: CancelToken | None = None
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        self.stopped: str | None = None  # "cancelled" | "timeout" once we killed it
        self._proc = subprocess.Popen(
            self.args,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._stderr: list[bytes] = []
        self._done = threading.Event()
        self._threads = [
            threading.Thread(target=self._drain, daemon=True),
            threading.Thread(target=self._watch, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

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
        """Stop rg if it still runs; (exit code, stderr text)."""
        self._done.set()
        if self._proc.poll() is None:
            self._proc.kill()
        code = self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._threads[0].join(5)
        return code, b"".join(self._stderr).decode("utf-8", errors="replace")
