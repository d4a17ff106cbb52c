"""An open document's text kept as line-aligned chunks, so a keystroke costs its chunk, not the file.

The text is the concatenation of chunks; every chunk but the last ends just after a line break (LSP
breaks: `\\n`, `\\r\\n`, `\\r`), so a line never straddles two chunks. Prefix sums (Fenwick trees)
over the chunk lengths and line-break counts turn an LSP position into an offset and back in
O(log n), and an edit re-chunks only the chunks it touches. Memory files chunk at their delimiter
lines (`memory.document.Piece`, so the linter can reuse everything outside the edit); other files
chunk every few KB of lines (`TextChunk`). The whole text is joined only when someone asks for it,
once per version.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from lsprotocol import types

from my_agent_core.memory.prefix_sums import PrefixSums

from .convert import UTF16, chars_in, units_of

__all__ = [
    "Chunk",
    "ChunkedText",
    "Chunker",
    "Splice",
    "TextChunk",
    "count_breaks",
    "split_lines",
]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
CHUNK_CHARS = 4096  # plain-text chunks hold about this many characters (whole lines)


class Chunk(Protocol):
    """What the chunked text needs of a chunk (`TextChunk`, or a memory file's `Piece`)."""

    text: str
    breaks: int
    index: int

    @property
    def line_starts(self) -> tuple[int, ...]: ...


C = TypeVar("C", bound=Chunk)

#: Cuts a window of text into chunks: (text, at_file_start, at_file_end) -> chunks, or None when
#: the window does not end where a chunk may end (the chunked text then widens it by a chunk).
Chunker = Callable[[str, bool, bool], list[C] | None]


def count_breaks(text: str) -> int:
    """Line breaks in `text` (`\\r\\n` counts once), at C speed."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


class TextChunk:
    """A run of whole lines of a plain document."""

    __slots__ = ("_line_starts", "breaks", "index", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.breaks = count_breaks(text)
        self.index = 0
        self._line_starts: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"TextChunk({self.index}, {len(self.text)} chars)"

    @property
    def line_starts(self) -> tuple[int, ...]:
        if self._line_starts is None:
            self._line_starts = (0, *(m.end() for m in _LINE_BREAK.finditer(self.text)))
        return self._line_starts


def split_lines(window: str, at_start: bool, at_end: bool) -> list[TextChunk]:
    """Plain text cut after line breaks into chunks of about `CHUNK_CHARS` (one chunk when small)."""
    if len(window) <= 2 * CHUNK_CHARS:
        return [TextChunk(window)]
    chunks: list[TextChunk] = []
    pos = 0
    while len(window) - pos > 2 * CHUNK_CHARS:
        found = _LINE_BREAK.search(window, pos + CHUNK_CHARS)
        if found is None:
            break
        cut = found.end()
        chunks.append(TextChunk(window[pos:cut]))
        pos = cut
    chunks.append(TextChunk(window[pos:]))
    return chunks


@dataclass(frozen=True, slots=True)
class Splice(Generic[C]):
    """One edit as the chunk list saw it: `removed` chunks at `first` were replaced by `added`."""

    first: int
    removed: list[C]
    added: list[C]


class ChunkedText(Generic[C]):
    """A document's text as chunks; edits and position conversions in O(log n + edited chunks).

    Not thread-safe by itself: the owner (`buffers.OpenDocument`) serialises edits and reads.
    """

    def __init__(
        self,
        text: str,
        chunker: Chunker[C],
        retype: Callable[[C, int, int, str], C | None] | None = None,
    ) -> None:
        self.chunker = chunker
        self.retype = retype  # optional shortcut for an edit inside one chunk (None: re-chunk)
        chunks = chunker(text, True, True)
        if not chunks:
            raise ValueError("a chunker must return at least one chunk for the whole text")
        self.chunks: list[C] = chunks
        self._texts = [c.text for c in chunks]  # joined from plain strings: twice as fast
        for k, chunk in enumerate(chunks):
            chunk.index = k
        self.chars = PrefixSums(len(c.text) for c in chunks)
        self.lines = PrefixSums(c.breaks for c in chunks)
        self._text: str | None = text

    # ----- the text ----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The whole text (joined once per version)."""
        if self._text is None:
            self._text = "".join(self._texts)
        return self._text

    def __len__(self) -> int:
        return self.chars.total()

    @property
    def line_count(self) -> int:
        return self.lines.total() + 1

    def chunk_start(self, k: int) -> int:
        """Offset where chunk `k` starts."""
        return self.chars.prefix(k)

    def chunk_at(self, offset: int) -> int:
        """Index of the chunk holding `offset` (the last chunk for the end of the text)."""
        k = self.chars.search(offset)
        return min(k, len(self.chunks) - 1)

    # ----- editing -----------------------------------------------------------------------------------
    def replace(
        self, start: int, end: int, new_text: str, *, result: str | None = None
    ) -> Splice[C]:
        """Replace `text[start:end]` (code-point offsets, clamped) with `new_text`.

        `result`: the whole text after the edit, when the caller has it (spares a join).
        """
        size = len(self)
        start = min(max(start, 0), size)
        end = min(max(end, start), size)
        chunks = self.chunks
        first = self.chunk_at(start)
        # an edit at a chunk's start continues the previous chunk's last line when that chunk does
        # not end with `\n` (no line break, or a `\r` the edit may join to a `\n`)
        at_boundary = first > 0 and start == self.chunk_start(first)
        if at_boundary and not chunks[first - 1].text.endswith("\n"):
            first -= 1
        last = self.chunk_at(end)
        base = self.chunk_start(first)
        if first == last and self.retype is not None:
            one = self.retype(chunks[first], start - base, end - base, new_text)
            if one is not None:
                return self._put(first, first, [one], result)
        old = "".join(self._texts[first : last + 1])
        window = old[: start - base] + new_text + old[end - base :]
        while True:
            at_end = last == len(chunks) - 1
            added = self.chunker(window, first == 0, at_end)
            if added:
                break
            if at_end:
                raise ValueError("a chunker must accept a window that reaches the end of the text")
            last += 1
            window += chunks[last].text
        return self._put(first, last, added, result)

    def _put(self, first: int, last: int, added: list[C], result: str | None) -> Splice[C]:
        """chunks[first:last + 1] = added, with the prefix sums and indices updated."""
        chunks = self.chunks
        removed = chunks[first : last + 1]
        chunks[first : last + 1] = added
        self._texts[first : last + 1] = [c.text for c in added]
        if len(added) == len(removed):
            for k, chunk in enumerate(added, start=first):
                chunk.index = k
        else:
            for k in range(first, len(chunks)):
                chunks[k].index = k
        self.chars.splice(first, last + 1, [len(c.text) for c in added])
        self.lines.splice(first, last + 1, [c.breaks for c in added])
        self._text = result
        return Splice(first, removed, added)

    # ----- positions ---------------------------------------------------------------------------------
    def _line_chunk(self, line: int) -> tuple[int, int]:
        """(chunk, line in that chunk) of the chunk where `line` starts (0 <= line < line_count)."""
        k = min(self.lines.search(line - 1), len(self.chunks) - 1)
        local = line - self.lines.prefix(k)
        chunk = self.chunks[k]
        at_chunk_end = local >= len(chunk.line_starts) or (
            local == chunk.breaks and chunk.line_starts[local] == len(chunk.text)
        )
        if at_chunk_end and k + 1 < len(self.chunks):  # the line starts where the next chunk does
            return k + 1, 0
        return k, local

    def offset(self, position: types.Position, encoding: str = UTF16) -> int:
        """The code-point offset of an LSP position (past a line's end means its end, as in LSP)."""
        line = max(position.line, 0)
        if line >= self.line_count:
            return len(self)
        k, local = self._line_chunk(line)
        chunk = self.chunks[k]
        starts = chunk.line_starts
        begin = starts[local]
        stop = _line_end(chunk.text, starts, local)
        col = chars_in(chunk.text[begin:stop], max(position.character, 0), encoding)
        return self.chunk_start(k) + begin + col

    def position(self, offset: int, encoding: str = UTF16) -> types.Position:
        """The LSP position of a code-point offset (clamped to the text)."""
        offset = min(max(offset, 0), len(self))
        k = self.chunk_at(offset)
        base = self.chunk_start(k)
        if offset == base and k > 0 and not self.chunks[k - 1].text.endswith(("\n", "\r")):
            k -= 1  # the end of a last line that has no line break
            base = self.chunk_start(k)
        chunk = self.chunks[k]
        local = offset - base
        starts = chunk.line_starts
        line = bisect_right(starts, local) - 1
        begin = starts[line]
        col = local - begin
        if col:
            col = units_of(chunk.text[begin:local], encoding)
        return types.Position(line=self.lines.prefix(k) + line, character=col)

    def range(self, start: int, end: int, encoding: str = UTF16) -> types.Range:
        """The LSP range of `text[start:end]`."""
        return types.Range(start=self.position(start, encoding), end=self.position(end, encoding))

    def line_of(self, offset: int) -> int:
        """The 0-based line of an offset."""
        return self.position(offset, "utf-32").line

    def line_start(self, line: int) -> int:
        """Offset where a line starts (the end of the text past the last line)."""
        if line >= self.line_count:
            return len(self)
        k, local = self._line_chunk(max(line, 0))
        return self.chunk_start(k) + self.chunks[k].line_starts[local]

    def line_end(self, line: int) -> int:
        """Offset of the end of a line's content (before its line break)."""
        if line >= self.line_count:
            return len(self)
        k, local = self._line_chunk(max(line, 0))
        chunk = self.chunks[k]
        return self.chunk_start(k) + _line_end(chunk.text, chunk.line_starts, local)


def _line_end(text: str, starts: Sequence[int], line: int) -> int:
    if line + 1 < len(starts):
        nxt = starts[line + 1]
        return nxt - 2 if text.startswith("\r\n", nxt - 2) else nxt - 1
    return len(text)
