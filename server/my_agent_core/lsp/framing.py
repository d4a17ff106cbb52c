"""Reading JSON-RPC frames from stdin so that no malformed header can wedge or kill the server.

pygls' reader trusts `Content-Length`: a missing, negative or short one desynchronises the stream
for good (every later message is read from the wrong place), and a huge one allocates what it
claims before reading (`MemoryError`). This reader resynchronises on the next `Content-Length`
header instead, wherever it appears (a short body leaves the rest of the message glued in front
of the next header), bounds what it buffers (`MAX_BODY_BYTES`; a bigger message is read in
chunks and dropped, and a request among them is answered with an error), and logs a clear line
for each thing it skips. What it cannot recover from (the end of input) ends the loop cleanly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol, TypeGuard

from .pygls_internals import send_error

__all__ = [
    "MAX_BODY_BYTES",
    "Frame",
    "FrameReader",
    "Refused",
    "leading_members",
    "next_message",
    "serve_frames",
]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024  # the largest message kept (a 64 MiB didOpen is already absurd)
MAX_SKIP_BYTES = 1 << 30  # a claim beyond this is not a message: resynchronise instead of skipping
MAX_HEADER_LINE = 8192  # longer header lines keep only their tail (where a glued header sits)
_READ_CHUNK = 1 << 16  # per read from the source (bodies arrive in these chunks)
_HEAD_BYTES = 4096  # of a dropped body, what is kept to find its request id

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*(\S*)[ \t]*\r?\n?$", re.IGNORECASE)
_HEADER_NAME = re.compile(rb"content-length:", re.IGNORECASE)
_SCALAR_MEMBER = re.compile(
    rb'\s*"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?'
    rb"|true|false|null)\s*([,}])"
)


@dataclass(frozen=True, slots=True)
class Frame:
    """One message body, as its header framed it (it may still fail to parse)."""

    body: bytes


@dataclass(frozen=True, slots=True)
class Refused:
    """A message that was read and dropped; `request_id` is set when it was a request to answer."""

    code: int
    message: str
    request_id: int | str | None


class FrameReader:
    """Blocking reader of `Content-Length`-framed messages from a file descriptor or a stream.

    It does its own buffering over `os.read` (or the stream's `read1`): a thread blocked in
    `BufferedReader.readline` on stdin holds the buffer's lock, and Python aborts at exit when a
    daemon thread does that.
    """

    def __init__(self, source: BinaryIO | int) -> None:
        if isinstance(source, int):
            fd = source
            self._raw: Callable[[int], bytes] = lambda n: os.read(fd, n)
        else:
            self._raw = getattr(source, "read1", source.read)
        self._pending = b""  # bytes read from the source but not consumed yet

    def push_back(self, data: bytes) -> None:
        """Bytes to read again before the stream (the start of a message found inside a body)."""
        self._pending = data + self._pending

    def next_frame(self) -> Frame | Refused | None:
        """The next message (None at the end of input)."""
        length: int | None = None
        seen_header = False
        while True:
            line = self._read_line()
            if line is None:
                return None
            if line.strip() == b"":
                if length is not None:
                    return self._read_body(length)
                if seen_header:
                    logger.warning(
                        "framing: a message without a valid Content-Length header was skipped; "
                        "resynchronising on the next Content-Length header"
                    )
                seen_header = False
                continue
            glued = _HEADER_NAME.search(line)
            if glued is not None and glued.start() > 0:
                logger.warning(
                    "framing: %d bytes before a Content-Length header were not part of any "
                    "message (a wrong Content-Length before?); skipped",
                    glued.start(),
                )
                line = line[glued.start() :]
                length = None
            seen_header = True
            match = _CONTENT_LENGTH.match(line)
            if match is None:
                continue  # another header (Content-Type) or garbage: wait for Content-Length
            value = match.group(1)
            if not value.isdigit():
                logger.warning(
                    "framing: invalid Content-Length %r; resynchronising on the next header",
                    value[:40].decode("ascii", "replace"),
                )
                length = None
                continue
            length = int(value)
            if length > MAX_SKIP_BYTES:
                logger.warning(
                    "framing: Content-Length %s is not a plausible message; resynchronising on "
                    "the next Content-Length header",
                    value[:40].decode("ascii", "replace"),
                )
                length = None

    def _read_body(self, length: int) -> Frame | Refused | None:
        if length <= MAX_BODY_BYTES:
            body = self._read_exactly(length)
            return Frame(body) if body is not None else None
        head = self._skip(length)
        if head is None:
            return None
        logger.warning(
            "framing: a %d-byte message is larger than the %d bytes the server accepts; skipped",
            length,
            MAX_BODY_BYTES,
        )
        members = leading_members(head)
        request_id = members.get("id") if "method" in members else None
        return Refused(
            INVALID_REQUEST,
            f"the message is {length} bytes, more than the {MAX_BODY_BYTES} bytes the server "
            "accepts",
            request_id if _is_id(request_id) else None,
        )

    def _read_exactly(self, n: int) -> bytes | None:
        parts = []
        left = n
        while left > 0:
            chunk = self._read(min(left, _READ_CHUNK))
            if not chunk:
                logger.warning("framing: input ended inside a message (%d bytes missing)", left)
                return None
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def _skip(self, n: int) -> bytes | None:
        """Read and drop `n` bytes in chunks; their first bytes are returned (None at EOF)."""
        head = b""
        left = n
        while left > 0:
            chunk = self._read(min(left, _READ_CHUNK))
            if not chunk:
                return None
            if len(head) < _HEAD_BYTES:
                head += chunk[: _HEAD_BYTES - len(head)]
            left -= len(chunk)
        return head

    def _read_line(self) -> bytes | None:
        """One line through `\\n` (None at EOF); of an overlong line only the tail is kept."""
        kept = b""
        while True:
            chunk = self._readline(MAX_HEADER_LINE)
            if not chunk:
                return kept or None
            kept += chunk
            if chunk.endswith(b"\n"):
                return kept
            if len(kept) > MAX_HEADER_LINE:
                kept = kept[-256:]

    def _readline(self, limit: int) -> bytes:
        """Up to `limit` bytes through the next `\\n` (less at the end of input)."""
        while True:
            i = self._pending.find(b"\n", 0, limit)
            if i != -1 or len(self._pending) >= limit:
                end = i + 1 if i != -1 else limit
                line, self._pending = self._pending[:end], self._pending[end:]
                return line
            data = self._raw(_READ_CHUNK)
            if not data:
                line, self._pending = self._pending, b""
                return line
            self._pending += data

    def _read(self, n: int) -> bytes:
        """Up to `n` bytes (fewer when that is what has arrived; b"" at the end of input)."""
        if not self._pending:
            return self._raw(min(n, _READ_CHUNK))
        data, self._pending = self._pending[:n], self._pending[n:]
        return data


def leading_members(head: bytes) -> dict[str, Any]:
    """The scalar members that open a JSON object (`{"jsonrpc": "2.0", "id": 3, "method": ...`).

    Enough to answer a request whose body cannot be kept or parsed: clients write `id` and
    `method` before `params`. Nested values stop the scan.
    """
    text = head.lstrip()
    if not text.startswith(b"{"):
        return {}
    out: dict[str, Any] = {}
    pos = 1
    while True:
        m = _SCALAR_MEMBER.match(text, pos)
        if m is None:
            return out
        try:
            out[json.loads(b'"' + m.group(1) + b'"')] = json.loads(m.group(2))
        except ValueError:
            return out
        if m.group(3) == b"}":
            return out
        pos = m.end()


class MessageSink(Protocol):
    """What `serve_frames` hands messages to (pygls' protocol object)."""

    def structure_message(self, data: dict[str, Any]) -> Any: ...

    def handle_message(self, message: Any) -> None: ...


def _is_id(value: object) -> TypeGuard[int | str]:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


READ_AHEAD = 64  # frames read but not yet handled, at most


@dataclass(frozen=True, slots=True)
class _Message:
    value: Any


def next_message(reader: FrameReader, protocol: MessageSink) -> _Message | Refused | None:
    """The next decoded message, or a refusal to answer, or None at the end of input.

    Decoding happens here, next to the reading, so a body that turns out to hold the start of the
    next message (a header that claimed too much) can give those bytes back to the reader before
    anything else is read.
    """
    while True:
        frame = reader.next_frame()
        if frame is None or isinstance(frame, Refused):
            return frame
        try:
            return _Message(json.loads(frame.body, object_hook=protocol.structure_message))
        except (ValueError, RecursionError) as exc:
            item = _unparsable(reader, protocol, frame.body, exc)
            if item is not None:
                return item


async def serve_frames(
    stop_event: threading.Event,
    reader: FrameReader,
    protocol: MessageSink,
    at_end: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """The message loop: a daemon thread reads and decodes, the event loop handles.

    The reading thread is a daemon and not part of any pool, so a read blocked on stdin never
    keeps the process from exiting (pygls' pool is joined at exit). `at_end` runs when the input
    ends (e.g. let running requests answer before the loop stops).
    """
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[_Message | Refused | None] = asyncio.Queue()
    room = threading.Semaphore(READ_AHEAD)

    def pump() -> None:
        while True:
            room.acquire()
            try:
                item = next_message(reader, protocol)
            except Exception:
                logger.exception("framing: reading the input failed")
                item = None
            try:
                loop.call_soon_threadsafe(items.put_nowait, item)
            except RuntimeError:  # the loop is closed: the server is exiting
                return
            if item is None:
                return

    threading.Thread(target=pump, name="my-agent-stdin", daemon=True).start()
    while not stop_event.is_set():
        item = await items.get()
        room.release()
        if item is None:
            logger.info("framing: end of input")
            if at_end is not None:
                await at_end()
            return
        if isinstance(item, Refused):
            if item.request_id is not None:
                send_error(protocol, item.request_id, item.code, item.message)
            continue
        try:
            protocol.handle_message(item.value)
        except Exception:
            logger.exception("could not handle a message")


def _unparsable(
    reader: FrameReader, protocol: MessageSink, body: bytes, exc: Exception
) -> _Message | Refused | None:
    """A body that is not JSON: give back a message it swallowed, or refuse it (answer a request).

    When the header claimed more than the message (the next message's header is inside the
    body), the rest is pushed back and read again, so that message is not lost.
    """
    glued = _HEADER_NAME.search(body)
    if glued is not None and glued.start() > 0:
        reader.push_back(body[glued.start() :])
        body = body[: glued.start()]
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except (ValueError, RecursionError):
            pass
        else:
            logger.warning("framing: a Content-Length was too long; resynchronised")
            return _Message(message)
    logger.warning("framing: a message that is not valid JSON was skipped (%s)", exc)
    members = leading_members(body[:_HEAD_BYTES])
    request_id = members.get("id")
    if "method" in members and _is_id(request_id):
        return Refused(PARSE_ERROR, f"the message is not valid JSON: {exc}", request_id)
    return None
