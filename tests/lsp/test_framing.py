"""Framing that cannot wedge the server: bad `Content-Length` headers are skipped with a log line
and the reader resynchronises on the next header; a huge body is never allocated."""

from __future__ import annotations

import asyncio
import io
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from my_agent_core.lsp import framing
from my_agent_core.lsp.framing import Frame, FrameReader, Refused, leading_members


def frame(body: bytes, length: int | str | None = None) -> bytes:
    header = f"Content-Length: {len(body) if length is None else length}\r\n\r\n"
    return header.encode("ascii") + body


GOOD = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}).encode()


def read_all(data: bytes) -> list[Frame | Refused]:
    reader = FrameReader(io.BytesIO(data))
    out: list[Frame | Refused] = []
    while (item := reader.next_frame()) is not None:
        out.append(item)
    return out


@pytest.mark.parametrize(
    "bad",
    [
        b"Content-Type: application/json\r\n\r\n" + b'{"jsonrpc":"2.0","method":"x"}',  # no length
        frame(b'{"jsonrpc":"2.0","method":"x"}', -5),
        frame(b'{"jsonrpc":"2.0","method":"x"}', "abc"),
        frame(b"", 99999999999999999999),  # absurd: resynchronise, never allocate it
        b"garbage without any header\r\n",
        b"\r\n\r\n",
    ],
)
def test_a_bad_frame_is_skipped_and_the_next_one_is_read(bad: bytes) -> None:
    frames = read_all(bad + frame(GOOD))
    assert frames[-1] == Frame(GOOD)


def test_a_short_content_length_resynchronises_on_the_next_header() -> None:
    body = b'{"jsonrpc":"2.0","id":7,"method":"textDocument/hover","params":{}}'
    frames = read_all(frame(body, 20) + frame(GOOD))
    assert frames == [Frame(body[:20]), Frame(GOOD)]  # the torn first one fails to parse later


def test_a_long_content_length_gives_back_the_message_it_swallowed() -> None:
    class Sink:
        def __init__(self) -> None:
            self.handled: list[Any] = []
            self.errors: list[tuple[Any, int]] = []

        def structure_message(self, data: dict[str, Any]) -> Any:
            return data

        def handle_message(self, message: Any) -> None:
            self.handled.append(message)

        def _send_response(self, msg_id: Any, error: Any = None, **_: Any) -> None:
            self.errors.append((msg_id, error.code))

    first = b'{"jsonrpc":"2.0","method":"initialized","params":{}}'
    data = frame(first, len(first) + len(frame(GOOD))) + frame(GOOD) + frame(GOOD)
    reader = FrameReader(io.BytesIO(data))
    sink = Sink()
    asyncio.run(framing.serve_frames(threading.Event(), reader, sink))  # type: ignore[arg-type]
    assert sink.handled[0] == json.loads(first)
    assert sink.handled[1:] == [json.loads(GOOD), json.loads(GOOD)]


def test_an_oversized_request_is_skipped_in_chunks_and_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(framing, "MAX_BODY_BYTES", 1000)
    big = json.dumps({"jsonrpc": "2.0", "id": "big-1", "method": "x", "params": "p" * 5000})
    frames = read_all(frame(big.encode()) + frame(GOOD))
    assert isinstance(frames[0], Refused) and frames[0].request_id == "big-1"
    assert frames[0].code == -32600 and "5" in frames[0].message
    assert frames[1] == Frame(GOOD)
    note = json.dumps({"jsonrpc": "2.0", "method": "x", "params": "p" * 5000}).encode()
    [refused, good] = read_all(frame(note) + frame(GOOD))
    assert isinstance(refused, Refused) and refused.request_id is None  # a notification
    assert good == Frame(GOOD)


def test_leading_members_reads_the_id_before_nested_values() -> None:
    assert leading_members(b'{"jsonrpc": "2.0", "id": 12, "method": "a/b", "params": {"id": 1') == {
        "jsonrpc": "2.0",
        "id": 12,
        "method": "a/b",
    }
    assert leading_members(b'  {"id": "x\\"y"}') == {"id": 'x"y'}
    assert leading_members(b"[1, 2]") == {}
    assert leading_members(b'{"params": {"id": 3}, "id": 4}') == {}


# --- the real server over a raw pipe -------------------------------------------------------------


class RawServer:
    """`python -m my_agent_core serve` with a thread that splits its stdout into messages."""

    def __init__(self, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MY_AGENT_", "OPENAI_"))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "my_agent_core", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        reader = FrameReader(self.proc.stdout)  # type: ignore[arg-type]
        while isinstance(item := reader.next_frame(), Frame):
            self.messages.put(json.loads(item.body))

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, msg_id: int, method: str, params: Any = None) -> None:
        body = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.write(frame(json.dumps(body).encode()))

    def answer(self, msg_id: int | str) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=30)
            if message.get("id") == msg_id and "method" not in message:
                return message


@pytest.mark.timeout(120)
def test_the_server_answers_after_bad_frames(tmp_path: Path) -> None:
    server = RawServer(tmp_path)
    try:
        server.request(1, "initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert "result" in server.answer(1)
        initialized = {"jsonrpc": "2.0", "method": "initialized", "params": {}}
        server.write(frame(json.dumps(initialized).encode()))
        torn = json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "myAgent/chat/sessions", "params": {"a": 1}}
        ).encode()
        server.write(b"Content-Type: application/json\r\n\r\n" + b'{"jsonrpc":"2.0"}')
        server.write(frame(b'{"jsonrpc":"2.0"}', -5))
        server.write(frame(torn, len(torn) - 4))  # short: the torn request still gets an answer
        server.write(frame(b"", 10**20))
        server.request(3, "myAgent/chat/sessions", {})
        assert server.answer(2)["error"]["code"] == -32700
        assert server.answer(3)["result"] == {"sessions": []}
        padding = "p" * (framing.MAX_BODY_BYTES + 1024)  # 64 MiB: skipped, never held
        huge = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "x", "params": padding})
        server.write(frame(huge.encode()))
        assert server.answer(4)["error"]["code"] == -32600
        server.request(5, "shutdown")
        assert server.answer(5)["result"] is None
        server.write(frame(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode()))
        assert server.proc.wait(timeout=30) == 0
        assert server.proc.stderr is not None
        log = server.proc.stderr.read().decode()
        assert "Content-Length" in log and "resynchronis" in log
        assert "MemoryError" not in log and "Traceback" not in log
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
