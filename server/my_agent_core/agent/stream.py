"""One streamed model request: assemble text and tool-call deltas on a worker thread we can abandon.

Why a worker thread: closing an SDK stream from another thread does not wake a read blocked in the
socket, and nothing can interrupt a request still waiting for its headers. The caller waits on a queue
instead, so `cancel()` returns control at once; the worker is told to stop and its socket is shut down.
The worker is reused across steps (`StreamWorker`) so a step costs two thread hand-offs, not a thread start.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..tools import clean_text
from .client import ChunkStream
from .usage import RequestUsage, read_usage

__all__ = ["StepResult", "StreamAssembler", "StreamCancelled", "StreamingRequest"]


@dataclass
class ToolCallSlot:
    """A tool call being assembled from deltas; `arguments` is kept exactly as received."""

    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)

    @property
    def arguments(self) -> str:
        return "".join(self.parts)


@dataclass
class StepResult:
    """What one model response said: text, tool calls (in order), usage figures, finish reason."""

    text: str
    tool_calls: list[ToolCallSlot]
    usage: RequestUsage | None
    finish_reason: str | None


class StreamAssembler:
    """Feeds `ChatCompletionChunk`s; returns each text delta so it can be streamed on.

    Model text may carry lone surrogates (half an emoji at a chunk boundary): what it returns is
    valid text. A high surrogate at the end of a delta waits for the next one, which may complete
    the pair, so the streamed deltas add up to exactly the step's final (clean) text."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._held = ""
        self._slots: dict[int, ToolCallSlot] = {}
        self._order: list[int] = []
        self._usage: object = None
        self._timings: object = None
        self.finish_reason: str | None = None

    @property
    def usage(self) -> RequestUsage | None:
        """The usage of the response so far: the last `usage` object, with llama.cpp's `timings`
        (which may arrive in another chunk; the SDK keeps the unknown field in `model_extra`)."""
        return read_usage(self._usage, self._timings)

    def feed(self, chunk: Any) -> str:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = usage
        extra = getattr(chunk, "model_extra", None)
        if isinstance(extra, dict) and extra.get("timings") is not None:
            self._timings = extra["timings"]
        choices = getattr(chunk, "choices", None) or []
        if not choices:
            return ""
        choice = choices[0]
        if getattr(choice, "finish_reason", None):
            self.finish_reason = choice.finish_reason
        delta = getattr(choice, "delta", None)
        if delta is None:
            return ""
        for call in getattr(delta, "tool_calls", None) or []:
            self._feed_call(call)
        text = getattr(delta, "content", None) or ""
        if not text:
            return ""
        self._text.append(text)
        text = self._held + text
        self._held = text[-1] if "\ud800" <= text[-1] <= "\udbff" else ""
        return clean_text(text[: len(text) - len(self._held)])

    def flush(self) -> str:
        """The delta held back at the end of the stream (a lone high surrogate, as U+FFFD)."""
        held, self._held = self._held, ""
        return clean_text(held)

    def _feed_call(self, call: Any) -> None:
        given = getattr(call, "index", None)
        call_id = getattr(call, "id", None) or ""
        index: int
        if isinstance(given, int):
            index = given
        else:  # some providers omit the index: a new id starts a new call
            last = self._order[-1] if self._order else None
            same = last is not None and (not call_id or self._slots[last].id in ("", call_id))
            index = last if same and last is not None else len(self._order)
        slot = self._slots.get(index)
        if slot is None:
            slot = self._slots[index] = ToolCallSlot()
            self._order.append(index)
        if call_id and not slot.id:
            slot.id = call_id
        function = getattr(call, "function", None)
        if function is not None:
            name = getattr(function, "name", None) or ""
            if name and name != slot.name:  # providers that repeat the full name on each delta
                slot.name += name
            arguments = getattr(function, "arguments", None)
            if arguments:
                slot.parts.append(arguments)

    def result(self) -> StepResult:
        """The step, with every text the model produced made valid (it goes into the history)."""
        calls = [self._slots[i] for i in self._order]
        for call in calls:
            call.id, call.name = clean_text(call.id), clean_text(call.name)
            call.parts = [clean_text(call.arguments)]
        text = clean_text("".join(self._text))
        return StepResult(text, calls, self.usage, self.finish_reason)


class StreamCancelled(Exception):
    """Raised in the waiting thread when the request was cancelled."""


_CANCELLED = object()


def _shutdown_socket(stream: ChunkStream) -> None:
    """Best effort: wake a read blocked on the stream's socket (closing alone does not)."""
    try:
        response = getattr(stream, "response", None)  # an openai Stream's httpx response
        network = response.extensions.get("network_stream") if response is not None else None
        sock = network.get_extra_info("socket") if network is not None else None
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:
        pass
    with contextlib.suppress(Exception):
        stream.close()


class StreamingRequest:
    """One `create()` + stream iteration, run by a `StreamWorker`; `wait()` returns the assembled step."""

    def __init__(self, create: Callable[[], ChunkStream], on_text: Callable[[str], None]) -> None:
        self._create = create
        self._on_text = on_text
        self._box: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: ChunkStream | None = None

    @property
    def cancelled(self) -> bool:
        return self._stop.is_set()

    def cancel(self) -> None:
        """Stop the request from any thread; `wait()` raises `StreamCancelled` promptly."""
        self._stop.set()
        self._box.put(_CANCELLED)
        with self._lock:
            stream = self._stream
        if stream is not None:
            threading.Thread(target=_shutdown_socket, args=(stream,), daemon=True).start()

    def wait(self) -> StepResult:
        item = self._box.get()
        if item is _CANCELLED:
            raise StreamCancelled()
        kind, value = item
        if kind == "error":
            raise value
        result: StepResult = value
        return result

    def run(self) -> None:
        """Called on the worker thread."""
        stream: ChunkStream | None = None
        outcome: tuple[str, Any] | None = None
        try:
            stream = self._create()
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                return
            assembler = StreamAssembler()
            for chunk in stream:
                if self._stop.is_set():
                    return
                text = assembler.feed(chunk)
                if text and not self._stop.is_set():
                    self._on_text(text)
            tail = assembler.flush()
            if tail and not self._stop.is_set():
                self._on_text(tail)
            outcome = ("ok", assembler.result())
        except BaseException as exc:
            outcome = ("error", exc)
        finally:
            if stream is not None and self._stop.is_set():
                _shutdown_socket(stream)
            elif stream is not None:
                with contextlib.suppress(Exception):
                    stream.close()
            if outcome is not None:  # last: the waiting thread resumes with nothing left to do here
                self._box.put(outcome)


class StreamWorker:
    """A reusable daemon thread running requests one at a time (no thread start per model step).

    It exits after `idle_seconds` without work, so a dropped Agent leaves no thread behind. After a
    cancelled request the Agent starts using a new worker: the old one may still be blocked in I/O.
    """

    def __init__(self, idle_seconds: float = 30.0) -> None:
        self.idle_seconds = idle_seconds
        self._jobs: queue.SimpleQueue[StreamingRequest] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._alive = False

    def submit(self, request: StreamingRequest) -> None:
        with self._lock:
            self._jobs.put(request)
            if not self._alive:
                self._alive = True
                threading.Thread(target=self._loop, name="my-agent-stream", daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._alive = False
                        return
                continue
            job.run()
            del job  # an idle worker must not keep the last request (and its agent) alive
