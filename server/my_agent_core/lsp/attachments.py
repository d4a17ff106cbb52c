"""Editor context for one chat turn: `myAgent/chat/send`'s `context: [{uri, range?}]` -> Attachments.

The text is read the way the user sees it: the unsaved buffer first, then the file on disk through
the one path check (`paths.resolve_inside`, `read_regular`). It goes into THAT turn's user message
(the agent frames it as data), never the system prompt. A malformed item is a -32602; an item that
cannot be used (another scheme, outside the session's folder, missing, a FIFO, binary, too large)
becomes an attachment holding only a note, so the turn still goes on and the model knows why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from my_agent_core.memory.render import Attachment
from my_agent_core.paths import PathRefused, read_regular, resolve_inside

from .convert import PositionConverter, line_index
from .params import invalid
from .uris import uri_to_path

if TYPE_CHECKING:
    from .buffers import Buffers

__all__ = ["MAX_CONTEXT_ITEMS", "ContextRef", "parse_context", "read_attachments"]

MAX_CONTEXT_ITEMS = 20
#: A file on disk is read up to this much (the rendered attachment keeps 16,000 characters anyway).
READ_MAX_BYTES = 4 * 1024 * 1024
_MAX_URI = 8192
_MAX_POSITION = 10_000_000
_BINARY_PROBE = 8192


@dataclass(frozen=True)
class ContextRef:
    """One validated context item: a URI and an optional LSP range."""

    uri: str
    range: types.Range | None = None


def parse_context(value: Any) -> list[ContextRef]:
    """`context` as sent (omitted / null: none); -32602 with the reason for a malformed one."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid("`context` must be an array of {uri, range?} objects")
    if len(value) > MAX_CONTEXT_ITEMS:
        raise invalid(f"`context` holds {len(value)} items; at most {MAX_CONTEXT_ITEMS} are sent")
    refs = []
    for number, item in enumerate(value, start=1):
        where = f"`context` item {number}"
        if not isinstance(item, dict):
            raise invalid(f"{where} must be an object {{uri, range?}}")
        uri = item.get("uri")
        if not isinstance(uri, str) or not uri or len(uri) > _MAX_URI:
            raise invalid(f"{where}: `uri` must be a non-empty string")
        try:
            uri.encode("utf-8")
        except UnicodeEncodeError:
            raise invalid(f"{where}: `uri` is not valid Unicode") from None
        rng = item.get("range")
        refs.append(ContextRef(uri, None if rng is None else _range(rng, where)))
    return refs


def _range(value: Any, where: str) -> types.Range:
    if not isinstance(value, dict):
        raise invalid(f"{where}: `range` must be {{start, end}}")
    start, end = (_position(value.get(key), f"{where}: `range.{key}`") for key in ("start", "end"))
    if (end.line, end.character) < (start.line, start.character):
        start, end = end, start
    return types.Range(start=start, end=end)


def _position(value: Any, where: str) -> types.Position:
    if not isinstance(value, dict):
        raise invalid(f"{where} must be {{line, character}}")
    numbers = []
    for key in ("line", "character"):
        n = value.get(key)
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _MAX_POSITION:
            raise invalid(f"{where}.{key} must be a non-negative integer")
        numbers.append(n)
    return types.Position(line=numbers[0], character=numbers[1])


def read_attachments(
    refs: list[ContextRef], folder: Path, buffers: Buffers, encoding: str
) -> list[Attachment]:
    """The attachments of a turn, in order (call from a worker thread: it may read files)."""
    return [_read(ref, folder, buffers, encoding) for ref in refs]


def _read(ref: ContextRef, folder: Path, buffers: Buffers, encoding: str) -> Attachment:
    path = uri_to_path(ref.uri) if ref.uri.startswith("file:") else None
    if path is None:
        return Attachment(ref.uri, note="not a file of the workspace folder; it was not read")
    try:
        real = resolve_inside(folder, str(path), what="attached file")
    except PathRefused as exc:
        return Attachment(str(path), note=str(exc))
    source = os.path.relpath(real, os.path.realpath(folder))
    lines = _lines(ref.range)
    doc = buffers.get(ref.uri) or buffers.document_at(real)
    if doc is not None:
        text = doc.text if ref.range is None else doc.text_in(ref.range)
        return Attachment(source, text, *lines, note="" if text else "the selection is empty")
    try:
        data = read_regular(real, max_bytes=READ_MAX_BYTES, truncate=True, name=source)
    except PathRefused as exc:
        return Attachment(source, note=str(exc))
    if data is None:
        return Attachment(source, note=f"{source} does not exist (it may have been deleted)")
    if b"\x00" in data[:_BINARY_PROBE]:
        return Attachment(source, note=f"{source} is a binary file; it was not attached")
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    note = ""
    if len(data) == READ_MAX_BYTES:
        note = f"only the first {READ_MAX_BYTES:,} bytes of the file were read"
    if ref.range is not None:
        converter = PositionConverter(line_index(text), encoding)
        start, end = converter.offset(ref.range.start), converter.offset(ref.range.end)
        text = text[start:end]
        if not text:
            note = note or "the selection is empty (or past the end of the file on disk)"
    return Attachment(source, text, *lines, note=note)


def _lines(rng: types.Range | None) -> tuple[int | None, int | None]:
    """1-based first and last line of a range; a selection ending at column 0 does not count
    that line (as the chat's chips show it)."""
    if rng is None:
        return None, None
    last = rng.end.line
    if rng.end.character == 0 and last > rng.start.line:
        last -= 1
    return rng.start.line + 1, last + 1
