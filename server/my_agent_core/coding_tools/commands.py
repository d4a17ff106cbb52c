"""run_command's engine: a shell command in its own process group, bounded in time and in output.

The command starts in a new session, so the terminal's Ctrl-C does not reach it and its whole
process group (children, grandchildren) can be stopped at once: SIGTERM, a grace period, then
SIGKILL, on timeout, on cancel, and for anything it left running in the background after its shell
exited. Output is captured head and tail (the middle of a flood is cut), so memory stays bounded,
and an `OutputListener` may watch it live (new text at most every quarter second, a flood's latest
part only), so an editor can show a running command's output.
The command's environment never carries the server's own secrets (the model endpoint's API key, the
archive's PostgreSQL DSN): a command's output goes back to the model, and tests or scripts it runs
may print or send their environment anywhere.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from .seams import CancelToken

__all__ = [
    "SECRET_ENV_NAMES",
    "Captured",
    "CommandOutcome",
    "LiveOutput",
    "OutputListener",
    "is_secret_name",
    "run_shell",
    "scrubbed_environment",
]

Ending = Literal["exited", "timeout", "cancelled"]
Stream = Literal["stdout", "stderr"]

#: Hears a running command's new output: the stream and its text (decoded, without ANSI escapes).
OutputListener = Callable[[Stream, str], None]

log = logging.getLogger(__name__)

_POLL_S = 0.05
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# An escape sequence cut by a chunk boundary: held back until the rest arrives.
_ANSI_UNFINISHED = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*)?$")
_LIVE_INTERVAL_S = 0.25
_LIVE_MAX_CHARS = 8_000
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


class LiveOutput:
    """A running command's new output for an `OutputListener`: decoded as it arrives (a character
    cut by a chunk boundary waits for its other bytes), cleaned of ANSI escapes and carriage
    returns, and handed over at most every `interval` seconds with at most `max_chars` per stream
    (a flood shows its latest part and says how much it skipped), so a chatty command cannot flood
    the editor with notifications. `feed` runs on the reader threads, `flush` on the waiting one."""

    def __init__(
        self,
        listener: OutputListener,
        *,
        interval: float = _LIVE_INTERVAL_S,
        max_chars: int = _LIVE_MAX_CHARS,
    ) -> None:
        self._listener = listener
        self._interval = interval
        self._max = max(1, max_chars)
        self._lock = threading.Lock()
        self._decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace")
            for name in ("stdout", "stderr")
        }
        self._pending: dict[Stream, str] = {"stdout": "", "stderr": ""}
        self._skipped: dict[Stream, int] = {"stdout": 0, "stderr": 0}
        self._due = 0.0

    def feed(self, stream: Stream, chunk: bytes) -> None:
        with self._lock:
            text = self._pending[stream] + self._decoders[stream].decode(chunk)
            # Keep a margin over max_chars: an escape sequence at the cut must stay whole.
            keep = self._max + 64
            if len(text) > keep:
                self._skipped[stream] += len(text) - keep
                text = text[-keep:]
            self._pending[stream] = text

    def flush(self, *, final: bool = False) -> None:
        """Hands the new text to the listener (when `interval` has passed, or always when `final`)."""
        now = time.monotonic()
        if not final and now < self._due:
            return
        self._due = now + self._interval
        out: list[tuple[Stream, str]] = []
        with self._lock:
            for stream in ("stdout", "stderr"):
                text = self._pending[stream]
                if final:
                    text += self._decoders[stream].decode(b"", final=True)
                    held = ""
                else:
                    match = _ANSI_UNFINISHED.search(text)
                    held = (
                        text[match.start() :] if match else text[-1:] if text[-1:] == "\r" else ""
                    )
                    text = text[: len(text) - len(held)]
                self._pending[stream] = held
                skipped, self._skipped[stream] = self._skipped[stream], 0
                clean = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
                if len(clean) > self._max:
                    skipped += len(clean) - self._max
                    clean = clean[-self._max :]
                if skipped:
                    clean = f"[... {skipped:,} characters skipped ...]\n{clean}"
                if clean:
                    out.append((stream, clean))
        for stream, text in out:
            try:
                self._listener(stream, text)
            except Exception:
                log.exception("a command output listener failed")


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
    on_output: OutputListener | None = None,
) -> CommandOutcome:
    """Run `command` with stdin closed; returns when it and every process of its group are gone.
    Its environment is `env` (default: this process's) without the secrets (`scrubbed_environment`);
    `on_output` hears its output while it runs (see `LiveOutput`), the last of it before this returns."""
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
    live = LiveOutput(on_output) if on_output is not None else None
    readers = [_reader(proc.stdout, out, live, "stdout"), _reader(proc.stderr, err, live, "stderr")]
    deadline = started + timeout_s
    ending: Ending = "exited"
    while proc.poll() is None:
        if live is not None:
            live.flush()
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
    if live is not None:
        live.flush(final=True)
    code = proc.wait()
    return CommandOutcome(
        ending=ending,
        exit_code=code if ending == "exited" else None,
        stdout=out,
        stderr=err,
        seconds=time.monotonic() - started,
        stopped_leftovers=leftovers,
    )


def _reader(
    stream: IO[bytes], sink: Captured, live: LiveOutput | None, name: Stream
) -> threading.Thread:
    def pump() -> None:
        fd = stream.fileno()
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(fd, 65536):
                sink.feed(chunk)
                if live is not None:
                    live.feed(name, chunk)
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
