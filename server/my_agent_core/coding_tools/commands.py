"""run_command's engine: a shell command in its own process group, bounded in time and in output.

The command starts in a new session, so the terminal's Ctrl-C does not reach it and its whole
process group (children, grandchildren) can be stopped at once: SIGTERM, a grace period, then
SIGKILL, on timeout, on cancel, and for anything it left running in the background after its shell
exited. Output is captured head and tail (the middle of a flood is cut), so memory stays bounded.
The command's environment never carries the server's own secrets (the model endpoint's API key, the
archive's PostgreSQL DSN): a command's output goes back to the model, and tests or scripts it runs
may print or send their environment anywhere.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from .seams import CancelToken

__all__ = [
    "SECRET_ENV_NAMES",
    "Captured",
    "CommandOutcome",
    "is_secret_name",
    "run_shell",
    "scrubbed_environment",
]

Ending = Literal["exited", "timeout", "cancelled"]

_POLL_S = 0.05
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_QUIET_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "NO_COLOR": "1",
    "TERM": "dumb",
}

#: Variables that hold the server's secrets (the model endpoint's key, the archive's DSN) or the keys
#: of other model providers a user may have exported for their editor.
SECRET_ENV_NAMES = frozenset(
    {
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "AZURE_OPENAI_AD_TOKEN",
        "ANTHROPIC_API_KEY",
        "DEEPSEEK_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "OPENROUTER_API_KEY",
        "TOGETHER_API_KEY",
        "FIREWORKS_API_KEY",
        "XAI_API_KEY",
        "DASHSCOPE_API_KEY",
        "MOONSHOT_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "MY_AGENT_PG_DSN",
    }
)
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "DSN", "CREDENTIAL")
_MIN_SECRET_VALUE = 8  # shorter values are too common to scrub by value ("1", "true", a path)


def is_secret_name(name: str) -> bool:
    """True for a variable a command must not see: a known secret, or one of our own (`MY_AGENT_*`)
    or the OpenAI SDK's (`OPENAI_*`) whose name says it holds a key, token, password or DSN."""
    upper = name.upper()
    if upper in SECRET_ENV_NAMES:
        return True
    if upper.startswith(("MY_AGENT_", "OPENAI_")):
        return any(word in upper for word in _SECRET_WORDS)
    return False


def scrubbed_environment(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the secrets (`is_secret_name`), nor any other variable that holds one of their
    values (a copy such as `export KEY=$OPENAI_API_KEY` must not leak it under another name)."""
    secrets = {
        value
        for name, value in env.items()
        if is_secret_name(name) and len(value) >= _MIN_SECRET_VALUE
    }
    return {
        name: value
        for name, value in env.items()
        if not is_secret_name(name) and not any(secret in value for secret in secrets)
    }


class Captured:
    """The first and last `cap // 2` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, cap: int) -> None:
        self._half = max(1, cap // 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > self._half:
                del self._tail[: len(self._tail) - self._half]

    @property
    def cut(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def text(self) -> str:
        head = _ANSI.sub("", self._head.decode("utf-8", errors="replace"))
        if not self._tail:
            return head
        tail = _ANSI.sub("", self._tail.decode("utf-8", errors="replace"))
        if self.cut <= 0:
            return _ANSI.sub("", (self._head + self._tail).decode("utf-8", errors="replace"))
        return (
            f"{head}\n[... {self.cut:,} bytes cut from the middle; to see them, rerun with the "
            f"output redirected to a file and use search_text or read_file on it ...]\n{tail}"
        )


@dataclass(frozen=True)
class CommandOutcome:
    """How a command ended: `exit_code` (None when it was stopped), its output, the time it took,
    and whether processes it left behind had to be stopped."""

    ending: Ending
    exit_code: int | None
    stdout: Captured
    stderr: Captured
    seconds: float
    stopped_leftovers: bool = False


def shell_argv(command: str) -> list[str]:
    """bash when the machine has it (models write bash), else POSIX sh."""
    shell = shutil.which("bash") or "/bin/sh"
    return [shell, "-c", command]


def run_shell(
    command: str,
    cwd: Path,
    *,
    timeout_s: float,
    output_bytes: int,
    cancel: CancelToken | None = None,
    kill_grace_s: float = 2.0,
    env: Mapping[str, str] | None = None,
) -> CommandOutcome:
    """Run `command` with stdin closed; returns when it and every process of its group are gone.
    Its environment is `env` (default: this process's) without the secrets (`scrubbed_environment`)."""
    environment = scrubbed_environment(os.environ if env is None else env)
    environment.update(_QUIET_ENV)
    started = time.monotonic()
    proc = subprocess.Popen(
        shell_argv(command),
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    pgid = proc.pid  # the session leader's pid is the group's id
    out, err = Captured(output_bytes), Captured(output_bytes)
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_reader(proc.stdout, out), _reader(proc.stderr, err)]
    deadline = started + timeout_s
    ending: Ending = "exited"
    while proc.poll() is None:
        if cancel is not None and cancel.is_set():
            ending = "cancelled"
            break
        left = deadline - time.monotonic()
        if left <= 0:
            ending = "timeout"
            break
        if cancel is not None:
            cancel.wait(min(_POLL_S, left))
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(min(_POLL_S, left))
    leftovers = False
    if ending != "exited":
        _stop_group(pgid, proc, kill_grace_s)
    else:
        # The shell is done; wait briefly for the pipes, then stop whatever it left running.
        for reader in readers:
            reader.join(0.2)
        if _group_alive(pgid):
            leftovers = True
            _stop_group(pgid, proc, kill_grace_s)
    for reader in readers:
        reader.join(5)
    code = proc.wait()
    return CommandOutcome(
        ending=ending,
        exit_code=code if ending == "exited" else None,
        stdout=out,
        stderr=err,
        seconds=time.monotonic() - started,
        stopped_leftovers=leftovers,
    )


def _reader(stream: IO[bytes], sink: Captured) -> threading.Thread:
    def pump() -> None:
        fd = stream.fileno()
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(fd, 65536):
                sink.feed(chunk)
        with contextlib.suppress(OSError):
            stream.close()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def _stop_group(pgid: int, proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the whole group, SIGKILL what is still there after `grace_s`."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            pass
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            proc.poll()  # reap the shell, so it does not count as alive
            if not _group_alive(pgid):
                return
            time.sleep(_POLL_S)


def _group_alive(pgid: int) -> bool:
    """Whether any process of group `pgid` still runs (zombies do not count: they hold nothing and
    a container's init may never reap them)."""
    proc_dir = "/proc"
    if not os.path.isdir(proc_dir):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for name in os.listdir(proc_dir):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc_dir}/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after it
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False
