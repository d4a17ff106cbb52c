"""Document offsets (code points) <-> LSP positions in the negotiated position encoding.

The linter speaks code-point offsets; LSP columns count UTF-16 code units by default (an emoji
counts 2), or UTF-8 / UTF-32 units when negotiated. Lines break at `\\n`, `\\r\\n` and `\\r` only,
as in LSP (not at the other separators `str.splitlines` knows). Conversions stay O(line) and skip
the encode for text that has no wide characters.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from lsprotocol import types

from my_agent_core.memory.document import MemoryDocument
from my_agent_core.memory.text import common_prefix, common_suffix

__all__ = [
    "UTF8",
    "UTF16",
    "UTF32",
    "LineIndex",
    "PositionConverter",
    "chars_in",
    "line_index",
    "minimal_edit",
    "units_of",
]

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class LineIndex:
    """Text and the offsets its lines start at (LSP breaks): all a converter needs."""

    text: str
    line_starts: tuple[int, ...]


def line_index(text: str) -> LineIndex:
    """The line index of a text without a full parse (for converting a change's range)."""
    return LineIndex(text, (0, *(m.end() for m in _LINE_BREAK.finditer(text))))


class PositionConverter:
    """Offsets <-> positions for one text (a `MemoryDocument` or a `LineIndex`) and one encoding."""

    __slots__ = ("doc", "encoding", "wide")

    def __init__(self, doc: MemoryDocument | LineIndex, encoding: str = UTF16) -> None:
        self.doc = doc
        self.encoding = encoding
        if encoding == UTF32:
            self.wide = False
        elif encoding == UTF8:
            self.wide = not doc.text.isascii()
        else:
            self.wide = _ASTRAL.search(doc.text) is not None

    def position(self, offset: int) -> types.Position:
        """The LSP position of a code-point offset (clamped to the text)."""
        doc = self.doc
        offset = min(max(offset, 0), len(doc.text))
        line = bisect_right(doc.line_starts, offset) - 1
        start = doc.line_starts[line]
        col = offset - start
        if self.wide and col:
            col = units_of(doc.text[start:offset], self.encoding)
        return types.Position(line=line, character=col)

    def range(self, start: int, end: int) -> types.Range:
        """The LSP range of `text[start:end]`."""
        return types.Range(start=self.position(start), end=self.position(end))

    def offset(self, position: types.Position) -> int:
        """The code-point offset of an LSP position (past a line's end means its end, as in LSP)."""
        doc = self.doc
        if position.line >= len(doc.line_starts):
            return len(doc.text)
        line = max(position.line, 0)
        start = doc.line_starts[line]
        end = self._line_end(line)
        units = max(position.character, 0)
        if not self.wide:
            return min(start + units, end)
        return start + chars_in(doc.text[start:end], units, self.encoding)

    def _line_end(self, line: int) -> int:
        """Offset of the end of a line's content (before its line break)."""
        starts, text = self.doc.line_starts, self.doc.text
        if line + 1 < len(starts):
            nxt = starts[line + 1]
            return nxt - 2 if text.startswith("\r\n", nxt - 2) else nxt - 1
        return len(text)


def units_of(text: str, encoding: str) -> int:
    """Length of `text` in the encoding's code units (UTF-8 bytes, UTF-16 units, code points)."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    if _ASTRAL.search(text) is None:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def chars_in(line: str, units: int, encoding: str) -> int:
    """How many code points of `line` fit in `units` code units (a split one is excluded)."""
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    if encoding == UTF16 and _ASTRAL.search(line) is None:
        return min(units, len(line))
    count = 0
    for ch in line:
        cp = ord(ch)
        if encoding == UTF8:
            width = 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        else:
            width = 2 if cp > 0xFFFF else 1
        if width > units:
            break
        units -= width
        count += 1
    return count


def minimal_edit(old: str, new: str) -> tuple[int, int, str] | None:
    """One replacement `(start, end, text)` turning `old` into `new` (None when equal).

    The edit leaves the common prefix and suffix out, and never starts or ends inside a CRLF
    (which has no LSP position).
    """
    if old == new:
        return None
    prefix = common_prefix(old, new)
    suffix = common_suffix(old, new, limit=min(len(old), len(new)) - prefix)
    start, end = prefix, len(old) - suffix
    new_end = len(new) - suffix
    while start > 0 and old[start - 1] == "\r" and start < len(old) and old[start] == "\n":
        start -= 1
    while end < len(old) and end > 0 and old[end - 1] == "\r" and old[end] == "\n":
        end += 1
        new_end += 1
    new_start = start  # the prefix is shared, so shrinking it moves both sides
    return start, end, new[new_start:new_end]
