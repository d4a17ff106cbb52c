"""The API key of `my-agent chat` never on its command line: every way that is offered instead gives
the key to the model client, and the command line of the running chat never holds it.

`/proc/<pid>/cmdline` is readable by every process of the user (the not-dumpable mark does not hide
it), so an approved `cat /proc/$PPID/cmdline` would hand a key passed as an argument to the model.
"""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from my_agent_core.api_key import ApiKeyError, read_key_file, resolve_api_key
from my_agent_core.cli import main
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import *  # noqa: F403

KEY = "sk-test-7f3a9c1e5b2d8046"
SERVER = Path(__file__).resolve().parents[1] / "server"
WAIT_S = 120  # a guard against a hang, never a measure: every wait below ends on its condition


def chat_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MY_AGENT_"))}
    env["PYTHONPATH"] = str(SERVER)
    env.update(extra)
    return env


def chat_argv(base_url: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "my_agent_core", "chat", "--model", "m", "--base-url", base_url,
        "--no-memory", "--no-tools", *extra,
    ]  # fmt: skip


def cmdline_of(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


class Chat:
    """A `my-agent chat` process; the fake model records its command line while the chat waits
    for the reply (so the process is certainly running then)."""

    def __init__(self, fake: FakeOpenAI, tmp: Path) -> None:
        self.fake = fake
        self.tmp = tmp
        self.cmdlines: list[bytes] = []
        self.proc: subprocess.Popen[bytes] | None = None
        fake.responder = self._reply

    def _reply(self, _request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc is not None
        self.cmdlines.append(cmdline_of(self.proc.pid))
        return {"content": "hello back"}

    def run(
        self, *extra: str, stdin: bytes = b"hello\n", env: dict[str, str], **popen: Any
    ) -> subprocess.CompletedProcess[bytes]:
        self.proc = subprocess.Popen(
            chat_argv(self.fake.base_url, *extra),
            cwd=self.tmp,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **popen,
        )
        out, err = self.proc.communicate(stdin, timeout=WAIT_S)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)

    def assert_key_used_never_shown(self, done: subprocess.CompletedProcess[bytes]) -> None:
        assert done.returncode == 0, done.stderr.decode()
        assert b"hello back" in done.stdout
        (cmdline,) = self.cmdlines
        assert b"chat" in cmdline and KEY.encode() not in cmdline
        sent = [r.headers.get("authorization") for r in self.fake.requests]
        assert sent and set(sent) == {f"Bearer {KEY}"}  # the probe and the completion
        assert KEY.encode() not in done.stdout + done.stderr


@pytest.fixture
def chat(fake: FakeOpenAI, tmp_path: Path) -> Chat:
    return Chat(fake, tmp_path)


def key_file(tmp_path: Path, mode: int = 0o600, text: str = KEY + "\n") -> Path:
    path = tmp_path / "openai.key"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


# --- each way in, end to end ----------------------------------------------------------------------


def test_from_the_environment(chat: Chat) -> None:
    chat.assert_key_used_never_shown(chat.run(env=chat_env(OPENAI_API_KEY=KEY)))


def test_from_a_file_only_its_owner_can_read(chat: Chat, tmp_path: Path) -> None:
    path = key_file(tmp_path)
    done = chat.run("--api-key-file", str(path), env=chat_env(OPENAI_API_KEY="sk-not-this-one"))
    chat.assert_key_used_never_shown(done)  # the file named on the command line wins


def test_from_the_first_line_of_standard_input(chat: Chat) -> None:
    done = chat.run("--api-key-file", "-", stdin=f"{KEY}\nhello\n".encode(), env=chat_env())
    chat.assert_key_used_never_shown(done)


def test_from_a_file_descriptor(chat: Chat) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, f"{KEY}\n".encode())
    os.close(write_end)
    try:
        done = chat.run(
            "--api-key-file", f"/dev/fd/{read_end}", env=chat_env(), pass_fds=(read_end,)
        )
    finally:
        os.close(read_end)
    chat.assert_key_used_never_shown(done)


class _KeyedEndpoint(BaseHTTPRequestHandler):
    """An endpoint that wants KEY: 401 without it, an empty model list with it."""

    seen: list[str | None]
    on_key: threading.Event

    def do_GET(self) -> None:
        auth = self.headers.get("Authorization")
        type(self).seen.append(auth)
        ok = auth == f"Bearer {KEY}"
        body = {"object": "list", "data": []} if ok else {"error": {"message": "bad key"}}
        data = json.dumps(body).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if ok:
            type(self).on_key.set()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def keyed_endpoint() -> Iterator[tuple[str, type[_KeyedEndpoint]]]:
    handler = type("Handler", (_KeyedEndpoint,), {"seen": [], "on_key": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


class _Terminal:
    """The master side of a pseudo-terminal: everything the chat shows, gathered by a thread."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.shown = b""
        self._changed = threading.Condition()
        threading.Thread(target=self._gather, daemon=True).start()

    def _gather(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                chunk = b""
            with self._changed:
                self.shown += chunk
                self._changed.notify_all()
            if not chunk:
                return

    def wait_for(self, text: bytes) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: text in self.shown, WAIT_S), self.shown

    def type(self, line: str) -> None:
        os.write(self.master, f"{line}\n".encode())


def test_from_a_hidden_prompt_when_the_endpoint_asks_for_one(
    keyed_endpoint: tuple[str, type[_KeyedEndpoint]], tmp_path: Path
) -> None:
    """On a terminal with no key configured, a refusal (401) makes the chat ask, without echo."""
    url, endpoint = keyed_endpoint
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        chat_argv(url),
        cwd=tmp_path,
        env=chat_env(TERM="dumb"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    terminal = _Terminal(master)
    try:
        terminal.wait_for(b"API key for the model endpoint")
        terminal.type(KEY)
        assert endpoint.on_key.wait(WAIT_S)
        terminal.wait_for(b"Commands:")
        running = cmdline_of(proc.pid)
        terminal.type("/exit")
        assert proc.wait(WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert b"chat" in running and KEY.encode() not in running
    assert endpoint.seen == ["Bearer no-key", f"Bearer {KEY}"]  # refused, asked, then used
    assert KEY.encode() not in terminal.shown  # not echoed


def test_a_refused_key_without_a_terminal_exits_2(
    keyed_endpoint: tuple[str, type[_KeyedEndpoint]], tmp_path: Path
) -> None:
    url, _endpoint = keyed_endpoint
    done = subprocess.run(
        chat_argv(url),
        cwd=tmp_path,
        env=chat_env(OPENAI_API_KEY="sk-wrong"),
        input=b"hello\n",
        capture_output=True,
        timeout=WAIT_S,
    )
    assert done.returncode == 2
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("my-agent: ") and "refused the API key (HTTP 401)" in line
    assert "sk-wrong" not in line


# --- the flag that is gone ------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["--api-key", KEY], [f"--api-key={KEY}"], ["--api-key"]])
def test_a_key_on_the_command_line_is_refused_with_what_to_use(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["chat", "--model", "m", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--api-key is not accepted" in err and "/proc/PID/cmdline" in err
    assert "OPENAI_API_KEY" in err and "--api-key-file" in err
    assert KEY not in err  # the refusal never echoes it


# --- the key file's checks, and the order of the ways ---------------------------------------------


def test_a_file_others_can_read_is_refused(tmp_path: Path) -> None:
    for mode in (0o644, 0o640, 0o604):
        path = key_file(tmp_path, mode)
        with pytest.raises(ApiKeyError, match=f"mode {mode:04o}.*chmod 600") as refused:
            read_key_file(str(path))
        assert KEY not in str(refused.value)
    assert read_key_file(str(key_file(tmp_path, 0o400))) == KEY  # its benign twins
    assert read_key_file(str(key_file(tmp_path, 0o600, f"\ufeff  {KEY}\r\n"))) == KEY


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "holds no API key"),
        ("\n \n", "holds no API key"),
        (f"{KEY}\nsk-second-line\n", "alone, on one line"),
        (f"OPENAI_API_KEY = {KEY}", "alone, on one line"),
        (f"{KEY}\x1b[2K", "alone, on one line"),
    ],
)
def test_a_file_that_does_not_hold_just_a_key_is_refused(
    tmp_path: Path, text: str, why: str
) -> None:
    with pytest.raises(ApiKeyError, match=why) as refused:
        read_key_file(str(key_file(tmp_path, 0o600, text)))
    assert KEY not in str(refused.value)


def test_what_is_not_a_key_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ApiKeyError, match="not a regular file or a pipe"):
        read_key_file(str(tmp_path))
    with pytest.raises(ApiKeyError, match="cannot open"):
        read_key_file(str(tmp_path / "missing.key"))
    big = key_file(tmp_path, 0o600, "k" * 70_000)
    with pytest.raises(ApiKeyError, match="far too large"):
        read_key_file(str(big))


def test_the_order_of_the_ways(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "from-env"}
    asked: list[str] = []

    def prompt(text: str) -> str:
        asked.append(text)
        return "typed-key"

    def resolve(key_file: str | None, environ: dict[str, str], ask: bool, stdin: str = "") -> Any:
        return resolve_api_key(
            key_file, environ=environ, stdin=io.StringIO(stdin), ask=ask, prompt=prompt
        )

    path = str(key_file(tmp_path))
    assert resolve(path, env, ask=True) == KEY
    assert resolve("-", env, ask=True, stdin="from-stdin\nhello\n") == "from-stdin"
    assert resolve(None, env, ask=True) == "from-env"
    assert asked == []
    assert resolve(None, {}, ask=False) is None  # not a terminal: no prompt
    assert resolve(None, {}, ask=True) == "typed-key" and len(asked) == 1
