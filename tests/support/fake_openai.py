"""A real, scriptable OpenAI chat-completions server on 127.0.0.1 for tests and benchmarks.

Why: tests must exercise the real `openai` SDK over real HTTP (streaming, errors, timeouts, cancellation)
and compare the raw request bodies byte by byte, without a network or an API key.

Use in-process::

    from tests.support.fake_openai import FakeOpenAI
    with FakeOpenAI([{"content": "hi"}]) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
        ...
        fake.requests[0].body        # the raw bytes the SDK sent
        fake.requests[0].json        # the same, parsed

Or as a process (for the language-server and VS Code end-to-end tests)::

    python tests/support/fake_openai.py --port 0 --script script.json \
        [--usage-format openai|deepseek|llamacpp|none] [--context-window N --context-error-format F]

prints its base URL (``http://127.0.0.1:PORT/v1``) as the first stdout line and serves until killed
(SIGTERM/SIGINT) or until stdin reaches EOF when started with ``--exit-on-stdin-eof``.

Script JSON format
------------------
The script is a JSON list of *responses* (or an object ``{"responses": [...], "default": {...}}``).
Each POST to ``/v1/chat/completions`` consumes the next response; when the list is exhausted the
``default`` response is used if given, otherwise the server answers HTTP 500 "fake script exhausted".
A response is an object; every key is optional:

- ``content`` (str): the assistant text. Streamed in pieces of ``chunk_size`` characters (default 8).
- ``tool_calls`` (list): ``{"id"?, "name", "arguments"}``; ``arguments`` is a JSON string sent verbatim,
  or any other JSON value, encoded with ``json.dumps(value, ensure_ascii=False)``. ``id`` defaults to ``call_<n>``.
  Arguments are streamed in pieces of ``chunk_size`` characters too.
- ``finish_reason`` (str): defaults to ``"tool_calls"`` when there are tool calls, else ``"stop"``.
- ``status`` (int) with ``error`` (object, default ``{"message": "fake error", "type": "server_error"}``):
  answer with this HTTP status and body ``{"error": error}`` instead of a completion. ``body`` (str)
  replaces the JSON error body with raw text.
- ``delay`` (float seconds): wait before sending the headers.
- ``hang`` (bool): never answer (the handler waits until the client disconnects or the server stops).
- ``chunk_delay`` (float seconds): pause between streamed chunks.
- ``hang_after_chunks`` (int): stream that many chunks, then hang (headers and some deltas already sent).
- ``drop_after_chunks`` (int): stream that many chunks, then close the connection abruptly.
- ``stream_error`` (object): after the content chunks, send ``data: {"error": {...}}`` (a mid-stream
  provider error) instead of finishing.
- ``usage``: ``null`` to send no usage at all; an object to override fields of the computed usage
  (``prompt_tokens``, ``completion_tokens``, ``cached_tokens``; ``cached_tokens: null`` omits
  ``prompt_tokens_details``).
- ``raw_sse`` (list of str): send exactly these SSE ``data:`` payloads (then nothing else) instead of
  the generated stream: for malformed-provider tests.
- ``usage_format``: how this response reports usage, overriding the server's ``usage_format``:
  ``"openai"`` (``prompt_tokens_details.cached_tokens``), ``"deepseek"`` (``prompt_cache_hit_tokens``
  rounded down to DeepSeek's 64-token units, and ``prompt_cache_miss_tokens``), ``"llamacpp"`` (plain
  usage, and ``timings: {cache_n, prompt_n, ...}`` on the finishing chunk, as llama-server sends it) or
  ``"none"`` (plain usage: no cache figure at all, like Anthropic's compatible endpoint).
- ``context_error`` (str): answer HTTP 400 with a realistic "prompt too long" body of that provider:
  ``"openai"`` (code ``context_length_exceeded``), ``"deepseek"``, ``"vllm"`` (top-level error object),
  ``"llamacpp"`` (``exceed_context_size_error`` with ``n_prompt_tokens`` / ``n_ctx``),
  ``"llamacpp-old"`` (no figures) or ``"anthropic"``. The window named is the server's
  ``context_window`` (or ``context_window`` in the response, default 4096).

A responder: ``FakeOpenAI(responder=fn)`` (or ``fake.responder = fn``) calls ``fn(request_json)`` for
each chat completion first; a response dict it returns is used, None falls back to the script. For
tests whose answers depend on what was asked (a compaction's save step, its summary request).

A simulated context window: ``FakeOpenAI(context_window=N, context_error_format="openai")`` (or the
attributes of the same names) rejects every request whose prompt is over N tokens with that
provider's error, BEFORE a scripted response is consumed (the response waits for the retry), and the
rejected prompt is not cached.

Usage figures (an honest stand-in for a provider's prefix cache): the *prompt* is the raw bytes of the
request's ``tools`` value followed by the raw bytes of each element of ``messages`` (sliced from the body
exactly as sent, not re-encoded), in that order, as a chat template would lay them out. ``prompt_tokens =
ceil(len(prompt) / 4)``; ``cached_tokens = (longest common byte prefix with the prompt of any earlier
request to this server) // 4``; ``completion_tokens = ceil(len(content + all arguments) / 4)``. Usage is
sent in streaming mode only when the request asks for it (``stream_options.include_usage``), as a last
chunk with ``choices: []``, like OpenAI does.

Recorded requests: ``fake.requests`` (every request) and ``fake.completion_requests`` (chat completions) are
``RecordedRequest`` objects with the raw ``body`` bytes, lower-cased ``headers``, ``outcome`` ("ok" for a
complete completion, else "error", "hang", "dropped", "stream_error", "disconnected") and
``handled_seconds`` (server time, for benchmarks). ``prefix_extension_problem(previous, current)`` returns
None when ``current`` extends ``previous`` byte for byte (same bytes up to the end of the previous
request's last message, more messages, the same bytes after the ``messages`` array), else what differs.

Non-streaming requests (``"stream": false`` or absent) get one ``chat.completion`` JSON object.

Control endpoints (for out-of-process use): ``GET /_fake/requests`` returns ``[{"method", "path", "body",
"handled_seconds"}]`` (body as UTF-8 text) of every request received; ``POST /_fake/script`` with a script body appends its responses
(``?replace=1`` replaces the remaining ones); ``GET /v1/models`` lists one model ``fake-model``.
"""

from __future__ import annotations

import argparse
import json
import math
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "FakeOpenAI",
    "RecordedRequest",
    "json_spans",
    "prefix_extension_problem",
    "prompt_bytes",
]

DEFAULT_CHUNK_SIZE = 8


@dataclass
class RecordedRequest:
    """One request as the server received it: raw body bytes, for byte-by-byte comparisons.

    `headers` keys are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float = field(default_factory=time.monotonic)
    handled_seconds: float | None = None  # time in the handler, for benchmarks (server time)
    # "ok" (a complete completion), "error" (HTTP error status), "hang", "dropped", "stream_error",
    # "disconnected" (the client went away mid-stream) or "pending".
    outcome: str = "pending"

    @property
    def succeeded(self) -> bool:
        return self.outcome == "ok"

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


# --- raw JSON spans: slices of the body exactly as sent -------------------------------------------------

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


def json_spans(text: str, start: int = 0) -> dict[str, tuple[int, int]] | list[tuple[int, int]]:
    """The (start, end) character spans of the members of the JSON object or array at `start`."""
    pos = _skip_ws(text, start)
    opener = text[pos]
    if opener not in "{[":
        raise ValueError("not an object or array")
    closer = "}" if opener == "{" else "]"
    pos = _skip_ws(text, pos + 1)
    obj_spans: dict[str, tuple[int, int]] = {}
    arr_spans: list[tuple[int, int]] = []
    if text[pos] == closer:
        return obj_spans if opener == "{" else arr_spans
    while True:
        if opener == "{":
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_ws(text, pos)
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = _skip_ws(text, pos + 1)
        value_start = pos
        _, pos = _DECODER.raw_decode(text, pos)
        if opener == "{":
            obj_spans[key] = (value_start, pos)
        else:
            arr_spans.append((value_start, pos))
        pos = _skip_ws(text, pos)
        if text[pos] == closer:
            return obj_spans if opener == "{" else arr_spans
        if text[pos] != ",":
            raise ValueError("expected ','")
        pos = _skip_ws(text, pos + 1)


def prompt_bytes(body: bytes) -> bytes:
    """The request's `tools` then each of its `messages`, as raw bytes sliced from the body."""
    text = body.decode("utf-8")
    top = json_spans(text)
    assert isinstance(top, dict)
    parts: list[str] = []
    if "tools" in top:
        a, b = top["tools"]
        parts.append(text[a:b])
    if "messages" in top:
        spans = json_spans(text, top["messages"][0])
        assert isinstance(spans, list)
        parts.extend(text[a:b] for a, b in spans)
    return "\n".join(parts).encode("utf-8")


def prefix_extension_problem(previous: bytes, current: bytes) -> str | None:
    """None when `current` extends `previous` byte for byte: the same bytes up to the end of the previous
    request's last message, more messages after it, and the same bytes after the `messages` array."""
    prev_text, cur_text = previous.decode("utf-8"), current.decode("utf-8")
    prev_top, cur_top = json_spans(prev_text), json_spans(cur_text)
    assert isinstance(prev_top, dict) and isinstance(cur_top, dict)
    if list(prev_top) != list(cur_top):
        return f"top-level keys differ: {list(prev_top)} vs {list(cur_top)}"
    prev_msgs = json_spans(prev_text, prev_top["messages"][0])
    cur_msgs = json_spans(cur_text, cur_top["messages"][0])
    assert isinstance(prev_msgs, list) and isinstance(cur_msgs, list)
    if len(cur_msgs) <= len(prev_msgs):
        return f"no new messages ({len(prev_msgs)} then {len(cur_msgs)})"
    end = len(prev_text[: prev_msgs[-1][1]].encode("utf-8")) if prev_msgs else 0
    if previous[:end] != current[:end]:
        at = _common_prefix(previous[:end], current[:end])
        return (
            f"bytes differ at offset {at}: {previous[at : at + 60]!r} vs {current[at : at + 60]!r}"
        )
    prev_tail = previous[len(prev_text[: prev_top["messages"][1]].encode("utf-8")) :]
    cur_tail = current[len(cur_text[: cur_top["messages"][1]].encode("utf-8")) :]
    if prev_tail != cur_tail:
        return f"the fields after `messages` differ: {prev_tail[:80]!r} vs {cur_tail[:80]!r}"
    return None


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # binary search on equal prefixes: fast for long prompts
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# --- the server -----------------------------------------------------------------------------------------


class FakeOpenAI:
    """A threaded HTTP server that answers chat completions from a script and records every request."""

    def __init__(
        self,
        script: list[dict[str, Any]] | dict[str, Any] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "fake-model",
        usage_format: str = "openai",
        context_window: int | None = None,
        context_error_format: str = "openai",
        responder: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    ) -> None:
        self.model = model
        self.responder = responder
        self.usage_format = usage_format
        self.context_window = context_window
        self.context_error_format = context_error_format
        self.requests: list[RecordedRequest] = []
        self._responses: list[dict[str, Any]] = []
        self._default: dict[str, Any] | None = None
        self._prompts: list[bytes] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._call_counter = 0
        self.completions_served = 0
        self.load_script(script or [])
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = _QuietServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread: threading.Thread | None = None

    # script management
    def load_script(
        self, script: list[dict[str, Any]] | dict[str, Any], *, replace: bool = False
    ) -> None:
        """Append (or replace with) the responses of a script; see the module docstring for the format."""
        if isinstance(script, dict):
            responses = list(script.get("responses", []))
            default = script.get("default")
        else:
            responses, default = list(script), None
        with self._lock:
            if replace:
                self._responses = []
            self._responses.extend(responses)
            if default is not None or replace:
                self._default = default

    def add(self, *responses: dict[str, Any]) -> None:
        """Append scripted responses."""
        self.load_script(list(responses))

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._responses)

    def _next_response(self) -> dict[str, Any]:
        with self._lock:
            if self._responses:
                return self._responses.pop(0)
            if self._default is not None:
                return dict(self._default)
        return {
            "status": 500,
            "error": {"message": "fake script exhausted", "type": "server_error"},
        }

    def _new_call_id(self) -> str:
        with self._lock:
            self._call_counter += 1
            return f"call_{self._call_counter}"

    # lifecycle
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # recorded data helpers
    @property
    def completion_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.rstrip("/").endswith("/chat/completions")]

    def prompt_tokens(self, body: bytes) -> int:
        """The fake's token count of a request's prompt (what usage would report), not cached."""
        return max(1, math.ceil(len(self._prompt(body)) / 4))

    @staticmethod
    def _prompt(body: bytes) -> bytes:
        try:
            return prompt_bytes(body)
        except (ValueError, AssertionError, UnicodeDecodeError, IndexError):
            return body

    def _usage_for(self, body: bytes, completion_text: str) -> dict[str, Any]:
        prompt = self._prompt(body)
        with self._lock:
            cached = max((_common_prefix(prompt, p) for p in self._prompts), default=0)
            self._prompts.append(prompt)
        prompt_tokens = max(1, math.ceil(len(prompt) / 4))
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": math.ceil(len(completion_text.encode("utf-8")) / 4),
            "cached_tokens": min(cached // 4, prompt_tokens),
        }


class _QuietServer(ThreadingHTTPServer):
    """Clients that hang up (cancelled or timed-out requests) are expected here: no tracebacks."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # silence the default stderr log
        return

    # plumbing
    def _headers(self) -> dict[str, str]:
        return {key.lower(): value for key, value in self.headers.items()}

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: Any, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _wait_until_gone(self) -> None:
        """Hang: return when the client disconnects or the server stops."""
        sock = self.connection
        while not self.fake._stopping.is_set():
            try:
                readable, _, _ = select.select([sock], [], [], 0.05)
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    break
            except (OSError, ValueError):
                break
        self.close_connection = True

    def _sleep(self, seconds: float) -> bool:
        """Sleep; False when the server is stopping."""
        return not self.fake._stopping.wait(seconds) if seconds > 0 else True

    # routes
    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.fake.requests.append(RecordedRequest("GET", path, self._headers(), b""))
        if path == "/_fake/requests":
            items = [
                {
                    "method": r.method,
                    "path": r.path,
                    "body": r.body.decode("utf-8", "replace"),
                    "handled_seconds": r.handled_seconds,
                }
                for r in self.fake.requests
                if not r.path.startswith("/_fake/")
            ]
            self._send_json(200, items)
        elif path.rstrip("/").endswith("/models"):
            self._send_json(
                200, {"object": "list", "data": [{"id": self.fake.model, "object": "model"}]}
            )
        else:
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_POST(self) -> None:
        started = time.perf_counter()
        record = RecordedRequest("POST", urlsplit(self.path).path, self._headers(), b"")
        try:
            self._post(record)
        finally:
            record.handled_seconds = time.perf_counter() - started

    def _post(self, record: RecordedRequest) -> None:
        parts = urlsplit(self.path)
        body = record.body = self._read_body()
        self.fake.requests.append(record)
        if parts.path == "/_fake/script":
            replace = parse_qs(parts.query).get("replace", ["0"])[0] not in ("0", "")
            self.fake.load_script(json.loads(body or b"[]"), replace=replace)
            self._send_json(200, {"remaining": self.fake.remaining})
            return
        if not parts.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(
                404, {"error": {"message": f"no route {parts.path}", "type": "not_found"}}
            )
            return
        try:
            request = json.loads(body)
        except ValueError:
            self._send_json(
                400, {"error": {"message": "body is not JSON", "type": "invalid_request"}}
            )
            return
        window = self.fake.context_window
        if window is not None and self.fake.prompt_tokens(body) > window:
            record.outcome = "error"
            self._context_error(self.fake.context_error_format, body, window)
            return
        responder = self.fake.responder
        answer = responder(request) if responder is not None else None
        response = answer if answer is not None else self.fake._next_response()
        self.fake.completions_served += 1
        if response.get("hang"):
            record.outcome = "hang"
            self._wait_until_gone()
            return
        if not self._sleep(float(response.get("delay", 0))):
            return
        if "context_error" in response:
            record.outcome = "error"
            window = int(response.get("context_window") or self.fake.context_window or 4096)
            self._context_error(str(response["context_error"]), body, window)
            return
        if "status" in response:
            error = response.get("error", {"message": "fake error", "type": "server_error"})
            raw = response["body"].encode("utf-8") if "body" in response else None
            record.outcome = "error"
            self._send_json(int(response["status"]), {"error": error}, raw)
            return
        if request.get("stream"):
            record.outcome = self._stream(request, body, response, record)
        else:
            record.outcome = "ok"  # before the answer goes out: the client may act on it at once
            self._complete(request, body, response)

    # completions
    def _tool_calls(self, response: dict[str, Any]) -> list[dict[str, str]]:
        calls = []
        for call in response.get("tool_calls") or []:
            args = call.get("arguments", "{}")
            calls.append(
                {
                    "id": call.get("id") or self.fake._new_call_id(),
                    "name": call.get("name", ""),
                    "arguments": args
                    if isinstance(args, str)
                    else json.dumps(args, ensure_ascii=False),
                }
            )
        return calls

    def _context_error(self, flavour: str, body: bytes, window: int) -> None:
        """HTTP 400 with the body a provider sends for a prompt longer than its context window."""
        n = self.fake.prompt_tokens(body)
        payload = _context_error_body(flavour, n, window)
        self._send_json(400, payload, json.dumps(payload).encode("utf-8"))

    def _figures(self, body: bytes, response: dict[str, Any], text: str) -> dict[str, Any] | None:
        if "usage" in response and response["usage"] is None:
            return None
        figures = self.fake._usage_for(body, text)
        figures.update(response.get("usage") or {})
        figures["format"] = response.get("usage_format", self.fake.usage_format)
        return figures

    @staticmethod
    def _usage(figures: dict[str, Any] | None) -> dict[str, Any] | None:
        """The `usage` object of a response in the figures' format."""
        if figures is None:
            return None
        usage: dict[str, Any] = {
            "prompt_tokens": figures["prompt_tokens"],
            "completion_tokens": figures["completion_tokens"],
            "total_tokens": figures["prompt_tokens"] + figures["completion_tokens"],
        }
        cached = figures.get("cached_tokens")
        fmt = figures["format"]
        if fmt == "openai" and cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        elif fmt == "deepseek" and cached is not None:
            hit = cached // 64 * 64  # DeepSeek caches whole 64-token units
            usage["prompt_cache_hit_tokens"] = hit
            usage["prompt_cache_miss_tokens"] = figures["prompt_tokens"] - hit
        return usage

    @staticmethod
    def _timings(figures: dict[str, Any] | None) -> dict[str, Any] | None:
        """llama-server's `timings` object (llamacpp format only)."""
        if figures is None or figures["format"] != "llamacpp":
            return None
        cached = figures.get("cached_tokens") or 0
        return {
            "cache_n": cached,
            "prompt_n": figures["prompt_tokens"] - cached,
            "prompt_ms": 1.5,
            "prompt_per_second": 1000.0,
            "predicted_n": figures["completion_tokens"],
            "predicted_ms": 2.5,
            "predicted_per_second": 400.0,
        }

    def _complete(self, request: dict[str, Any], body: bytes, response: dict[str, Any]) -> None:
        calls = self._tool_calls(response)
        content = response.get("content")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        text = (content or "") + "".join(c["arguments"] for c in calls)
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.fake.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": response.get(
                        "finish_reason", "tool_calls" if calls else "stop"
                    ),
                }
            ],
        }
        figures = self._figures(body, response, text)
        usage, timings = self._usage(figures), self._timings(figures)
        if usage is not None:
            payload["usage"] = usage
        if timings is not None:
            payload["timings"] = timings
        self._send_json(200, payload)

    def _stream(
        self,
        request: dict[str, Any],
        body: bytes,
        response: dict[str, Any],
        record: RecordedRequest,
    ) -> str:
        """Stream the response; the outcome is recorded BEFORE the last payload goes out, because the
        client may send its next request the moment it reads it (a test then sees no "pending")."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        payloads = response.get("raw_sse")
        if payloads is None:
            payloads = self._chunks(request, body, response)
        payloads = list(payloads)
        final = "stream_error" if "stream_error" in response else "ok"
        chunk_delay = float(response.get("chunk_delay", 0))
        hang_after = response.get("hang_after_chunks")
        drop_after = response.get("drop_after_chunks")
        try:
            for count, data in enumerate(payloads):
                if hang_after is not None and count >= hang_after:
                    self._wait_until_gone()
                    return "hang"
                if drop_after is not None and count >= drop_after:
                    self._drop()
                    return "dropped"
                if count and not self._sleep(chunk_delay):
                    return "disconnected"
                if count == len(payloads) - 1:
                    record.outcome = final
                self._write_chunk(f"data: {data}\n\n".encode())
            record.outcome = final
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return "disconnected"
        return final

    def _drop(self) -> None:
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _chunks(self, request: dict[str, Any], body: bytes, response: dict[str, Any]) -> list[str]:
        size = max(1, int(response.get("chunk_size", DEFAULT_CHUNK_SIZE)))
        model = request.get("model", self.fake.model)
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            return json.dumps(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                },
                ensure_ascii=False,
            )

        out = [chunk({"role": "assistant", "content": ""})]
        content = response.get("content") or ""
        out.extend(chunk({"content": content[i : i + size]}) for i in range(0, len(content), size))
        calls = self._tool_calls(response)
        for index, call in enumerate(calls):
            head = {"index": index, "id": call["id"], "type": "function"}
            out.append(
                chunk(
                    {"tool_calls": [{**head, "function": {"name": call["name"], "arguments": ""}}]}
                )
            )
            args = call["arguments"]
            for i in range(0, len(args), size):
                piece = {"index": index, "function": {"arguments": args[i : i + size]}}
                out.append(chunk({"tool_calls": [piece]}))
        if "stream_error" in response:
            out.append(json.dumps({"error": response["stream_error"]}))
            return out
        finish = response.get("finish_reason", "tool_calls" if calls else "stop")
        text = content + "".join(c["arguments"] for c in calls)
        figures = self._figures(body, response, text)
        timings = self._timings(figures)
        finishing = json.loads(chunk({}, finish))
        if timings is not None:  # llama-server puts its timings on the finishing chunk
            finishing["timings"] = timings
        out.append(json.dumps(finishing, ensure_ascii=False))
        usage = self._usage(figures)
        if usage is not None and (request.get("stream_options") or {}).get("include_usage"):
            out.append(
                json.dumps(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                )
            )
        out.append("[DONE]")
        return out


def _context_error_body(flavour: str, n: int, window: int) -> dict[str, Any]:
    """What each provider answers (HTTP 400) for a prompt of `n` tokens over a `window`."""
    if flavour == "openai":
        return {
            "error": {
                "message": (
                    f"This model's maximum context length is {window} tokens. However, your "
                    f"messages resulted in {n} tokens. Please reduce the length of the messages."
                ),
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if flavour == "deepseek":
        return {
            "error": {
                "message": (
                    f"This model's maximum context length is {window} tokens. However, you "
                    f"requested {n} tokens ({n} in the messages, 0 in the completion). Please "
                    "reduce the length of the messages or completion."
                ),
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        }
    if flavour == "vllm":
        return {
            "object": "error",
            "message": (
                f"This model's maximum context length is {window} tokens. However, you requested "
                f"{n + 16} tokens ({n} in the messages, 16 in the completion). Please reduce the "
                "length of the messages or completion."
            ),
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    if flavour == "llamacpp":
        return {
            "error": {
                "code": 400,
                "message": (
                    f"request ({n} tokens) exceeds the available context size ({window} tokens), "
                    "try increasing it"
                ),
                "type": "exceed_context_size_error",
                "n_prompt_tokens": n,
                "n_ctx": window,
            }
        }
    if flavour == "llamacpp-old":
        return {
            "error": {
                "code": 400,
                "message": (
                    "the request exceeds the available context size, try increasing the context "
                    "size or enable context shift"
                ),
                "type": "invalid_request_error",
            }
        }
    if flavour == "anthropic":
        return {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"prompt is too long: {n} tokens > {window} maximum",
            },
        }
    raise ValueError(f"unknown context_error flavour {flavour!r}")


def main(argv: list[str] | None = None) -> int:
    """Run the fake server as a process; the first stdout line is its base URL."""
    parser = argparse.ArgumentParser(description="Scriptable fake OpenAI chat-completions server.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON script (see the module docstring)")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument(
        "--usage-format", default="openai", choices=["openai", "deepseek", "llamacpp", "none"]
    )
    parser.add_argument("--context-window", type=int, default=None, help="reject longer prompts")
    parser.add_argument("--context-error-format", default="openai")
    parser.add_argument(
        "--exit-on-stdin-eof", action="store_true", help="stop when stdin is closed"
    )
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else []
    fake = FakeOpenAI(
        script,
        host=args.host,
        port=args.port,
        model=args.model,
        usage_format=args.usage_format,
        context_window=args.context_window,
        context_error_format=args.context_error_format,
    ).start()
    print(fake.base_url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    if args.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
