"""The one parser: memory-file text <-> entries with source ranges.

The store, the linter and the language server all read this module's result, so `§` is split in exactly
one place. Parsing is lossless: every non-whitespace character of the input lands in some entry, whatever
shape a hand edit left the file in; what does not look canonical is reported, never dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate

from my_agent_core.memory.conflicts import (
    MAX_DEPTH,
    Conflicts,
    Resolved,
    find_conflicts,
    has_markers,
    resolved_text,
    without_markers,
)

__all__ = [
    "ENTRY_DELIMITER",
    "SECTION_SIGN",
    "DelimiterKind",
    "DelimiterLine",
    "EmptyEntry",
    "Entry",
    "MemoryDocument",
    "Piece",
    "Pos",
    "StrayDelimiter",
    "budget_used",
    "normalize_entry",
    "parse",
    "reparse",
    "retype_piece",
    "serialize",
    "split_pieces",
    "strip_blanks",
]

SECTION_SIGN = "§"
ENTRY_DELIMITER = f"\n{SECTION_SIGN}\n"
BOM = "\ufeff"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A line holding `§` and nothing but `§` and blanks splits the file; any other line with a `§` is
# reported, never split.
_SIGN = re.compile(SECTION_SIGN)


@dataclass(frozen=True, slots=True, order=True)
class Pos:
    """A 0-based line and column (in code points) in the parsed text."""

    line: int
    col: int


class DelimiterKind(str, Enum):
    """How a delimiter line deviates from the canonical `§`."""

    CANONICAL = "canonical"
    PADDED = "padded"  # blanks around the `§`
    REPEATED = "repeated"  # `§§` or `§ §`: still one split


@dataclass(frozen=True, slots=True)
class DelimiterLine:
    """A line the file is split at; `start`/`end` are offsets of the line's content (no line break)."""

    line: int
    start: int
    end: int
    kind: DelimiterKind


@dataclass(frozen=True, slots=True)
class StrayDelimiter:
    """A `§` on a line with other text: not a split, probably a delimiter that lost its line break.

    `column` is the column of the first `§`; `at_edge` is True when the `§` opens or closes the line
    (then a fix can move it onto its own line), False when it sits inside prose (e.g. "see §3.2").
    """

    line: int
    start: int
    end: int
    column: int
    at_edge: bool


@dataclass(frozen=True, slots=True)
class EmptyEntry:
    """Two splits with nothing between them (or a split at the start or end of the file).

    `delimiter` is the delimiter line whose removal drops the empty entry.
    """

    delimiter: DelimiterLine


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry: its normalised text and where its (stripped) text stands in the source."""

    index: int
    text: str
    start: int  # offset of the first non-blank character
    end: int  # offset just past the last non-blank character
    segment_start: (
        int  # offset where the entry's segment starts (just after the previous delimiter)
    )
    segment_end: int  # offset where the segment ends (start of the next delimiter line, or EOF)


@dataclass(frozen=True, slots=True)
class MemoryDocument:
    """A parsed memory file: entries with source ranges plus what the linter needs to know."""

    text: str
    entries: tuple[Entry, ...]
    delimiters: tuple[DelimiterLine, ...]
    stray_delimiters: tuple[StrayDelimiter, ...]
    empty_entries: tuple[EmptyEntry, ...]
    line_starts: tuple[int, ...] = field(repr=False)

    @property
    def entry_texts(self) -> list[str]:
        """The entries as the store keeps them (normalised, in file order, duplicates included)."""
        return [entry.text for entry in self.entries]

    @property
    def has_bom(self) -> bool:
        return self.text.startswith(BOM)

    @property
    def stored_texts(self) -> list[str]:
        """The entries the store keeps: file order, one copy of a repeated entry. A file with git
        conflict markers: the entries of both sides, merged as the merge driver would have (see
        `conflicts.py`), never a marker line."""
        return self.resolved_texts()

    @property
    def conflicts(self) -> Conflicts:
        """The git conflict blocks and stray marker lines of the file (empty: none)."""
        return find_conflicts(self.text)

    def resolved_texts(self, depth: int = 0) -> list[str]:
        """`stored_texts`, for a text that is itself one side of a conflict `depth` levels deep."""
        if has_markers(self.text):
            if depth >= MAX_DEPTH:
                return parse(without_markers(self.text)).stored_texts
            conflicts = self.conflicts
            if conflicts:
                return parse(self.resolve(conflicts, depth).text).stored_texts
        return list(dict.fromkeys(self.entry_texts))

    def resolve(self, conflicts: Conflicts | None = None, depth: int = 0) -> Resolved:
        """The file with each conflict resolved the driver's way (both sides kept as entries) and
        every stray marker line deleted, with the entries both sides changed; the text itself when
        it has no conflict."""
        found = self.conflicts if conflicts is None else conflicts
        if not found:
            return Resolved(self.text)
        delimiters = [(d.start, _after_line(self.text, d.end)) for d in self.delimiters]
        body_start = 1 if self.has_bom else 0
        return resolved_text(self.text, found, delimiters, body_start, depth=depth)

    @property
    def used(self) -> int:
        """Budget used by the entries as they would be stored (a repeated entry counts once)."""
        return budget_used(self.stored_texts)

    def is_canonical(self) -> bool:
        """True when the store would write exactly this text back (up to one final newline)."""
        if has_markers(self.text) and self.conflicts:
            return False
        canonical = serialize(self.entry_texts)
        return self.text in (canonical, canonical.rstrip("\n"))

    def pos_at(self, offset: int) -> Pos:
        """The line/column of an offset (offsets past a line's end clamp to that line's end)."""
        line = bisect_right(self.line_starts, offset) - 1
        return Pos(line, offset - self.line_starts[line])

    def offset_at(self, pos: Pos) -> int:
        """The offset of a line/column; out-of-range positions clamp to the text."""
        if pos.line >= len(self.line_starts):
            return len(self.text)
        start = self.line_starts[max(pos.line, 0)]
        end = self.line_end(max(pos.line, 0))
        return min(start + max(pos.col, 0), end)

    def line_end(self, line: int) -> int:
        """Offset of the end of a line's content (before its line break)."""
        return _line_end(self.text, self.line_starts, line)

    def line_span_with_break(self, line: int) -> tuple[int, int]:
        """Offsets that cover a whole line including one adjacent line break (for deleting it)."""
        start = self.line_starts[line]
        if line + 1 < len(self.line_starts):
            return start, self.line_starts[line + 1]
        if line > 0:  # the last line: take the line break before it instead
            return self.line_end(line - 1), len(self.text)
        return start, len(self.text)

    def entry_at(self, offset: int) -> Entry | None:
        """The entry whose segment contains the offset (None on a delimiter line or blank edge)."""
        for entry in self.entries:  # entries are few; a bisect is not worth the index
            if entry.segment_start <= offset <= entry.segment_end:
                return entry
        return None

    def removal_span(self, entry: Entry) -> tuple[int, int]:
        """Offsets to delete so that `entry` and one delimiter next to it disappear cleanly."""
        i = entry.index
        if i + 1 < len(self.entries):  # the entry, its trailing blanks and the delimiter after it
            return entry.start, self.entries[i + 1].start
        if i > 0:  # the last entry: from the end of the previous one
            return self.entries[i - 1].end, entry.end
        return entry.start, entry.end


def normalize_entry(text: str) -> str:
    """Entry text as the store keeps it: `\\n` line ends, surrounding whitespace stripped."""
    return strip_blanks(_LINE_BREAK.sub("\n", text))


def strip_blanks(text: str) -> str:
    """`str.strip()` that also treats U+FEFF (zero-width no-break space, a stray BOM) as blank.

    Without it an entry that starts with U+FEFF would turn into the file's BOM on the next write and
    vanish."""
    stripped = text.strip()
    while stripped[:1] == BOM or stripped[-1:] == BOM:
        stripped = stripped.strip(BOM).strip()
    return stripped


def serialize(entries: list[str]) -> str:
    """The canonical file text of a list of (normalised) entries."""
    return ENTRY_DELIMITER.join(entries) + "\n" if entries else ""


def budget_used(entries: list[str]) -> int:
    """Characters (code points) the entries take in the file, delimiters included."""
    return len(ENTRY_DELIMITER.join(entries))


def parse(text: str, *, at_file_start: bool = True) -> MemoryDocument:
    """Split memory-file text into entries, delimiter lines and problems, keeping source ranges.

    `at_file_start=False` parses a piece from the middle of a file: a leading U+FEFF is then text,
    not the file's byte-order mark.
    """
    line_starts = _line_starts(text)
    body_start = 1 if at_file_start and text.startswith(BOM) else 0

    # Only lines holding a `§` matter, and they are few: find them in C, classify them in Python.
    delimiters: list[DelimiterLine] = []
    strays: list[StrayDelimiter] = []
    seen_line = -1
    for sign in _SIGN.finditer(text):
        line = bisect_right(line_starts, sign.start()) - 1
        if line == seen_line:
            continue
        seen_line = line
        start = max(line_starts[line], body_start)
        end = _line_end(text, line_starts, line)
        content = text[start:end]
        bare = strip_blanks(content)
        if not strip_blanks(bare.replace(SECTION_SIGN, "")):  # only `§` and blanks: a split
            if content == SECTION_SIGN:
                kind = DelimiterKind.CANONICAL
            elif bare.count(SECTION_SIGN) > 1:
                kind = DelimiterKind.REPEATED
            else:
                kind = DelimiterKind.PADDED
            delimiters.append(DelimiterLine(line, start, end, kind))
        else:
            shown = bare
            column = text.index(SECTION_SIGN, start, end) - line_starts[line]
            at_edge = shown.startswith(SECTION_SIGN) or shown.endswith(SECTION_SIGN)
            strays.append(StrayDelimiter(line, start, end, column, at_edge))

    entries: list[Entry] = []
    empties: list[EmptyEntry] = []
    seg_start = body_start
    opened_by: DelimiterLine | None = None
    for n in range(len(delimiters) + 1):
        seg_end = delimiters[n].start if n < len(delimiters) else len(text)
        raw = text[seg_start:seg_end]
        stripped = strip_blanks(raw)
        if stripped:
            lead = raw.index(stripped)
            start = seg_start + lead
            entries.append(
                Entry(
                    index=len(entries),
                    text=normalize_entry(stripped),
                    start=start,
                    end=start + len(stripped),
                    segment_start=seg_start,
                    segment_end=seg_end,
                )
            )
        elif delimiters:  # a lone empty file is not an empty entry
            culprit = opened_by if opened_by is not None else delimiters[0]
            if not empties or empties[-1].delimiter is not culprit:
                empties.append(EmptyEntry(culprit))
        if n < len(delimiters):
            opened_by = delimiters[n]
            seg_start = _after_line(text, opened_by.end)
    return MemoryDocument(
        text=text,
        entries=tuple(entries),
        delimiters=tuple(delimiters),
        stray_delimiters=tuple(strays),
        empty_entries=tuple(empties),
        line_starts=tuple(line_starts),
    )


def _line_starts(text: str) -> list[int]:
    """Offsets where lines start (C-speed for the common `\\n`-only text)."""
    if "\r" in text:
        return [0, *(m.end() for m in _LINE_BREAK.finditer(text))]
    return [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1])]


def _line_end(text: str, line_starts: Sequence[int], line: int) -> int:
    if line + 1 < len(line_starts):
        next_start = line_starts[line + 1]
        return next_start - 2 if text.startswith("\r\n", next_start - 2) else next_start - 1
    return len(text)


def _after_line(text: str, end: int) -> int:
    """Offset just past the line break that ends at `end` (or `end` at EOF)."""
    if text.startswith("\r\n", end):
        return end + 2
    if end < len(text) and text[end] in "\r\n":
        return end + 1
    return end


# ---------------------------------------------------------------- pieces (incremental parsing)


class Piece:
    """One segment of a file with the delimiter line that closes it: the unit an editor re-parses.

    A file is the concatenation of its pieces: piece `k` runs from just after delimiter line `k - 1`
    (its line break included) to just after delimiter line `k`, and the last piece holds what
    follows the last delimiter (possibly nothing). A line is a delimiter or not by its own content,
    so each piece parses on its own exactly as it does inside the file. The parse objects are
    shared with the document the piece was cut from: `base` is where the piece starts in that
    document, and every `local_*` offset is relative to the piece.
    """

    __slots__ = (
        "_line_starts",
        "base",
        "base_line",
        "breaks",
        "delimiter",
        "entry",
        "index",
        "strays",
        "text",
    )

    def __init__(
        self,
        text: str,
        base: int,
        base_line: int,
        entry: Entry | None,
        delimiter: DelimiterLine | None,
        strays: tuple[StrayDelimiter, ...],
        breaks: int,
    ) -> None:
        self.text = text
        self.base = base
        self.base_line = base_line  # the line `base` is on, in that document
        self.entry = entry
        self.delimiter = delimiter
        self.strays = strays
        self.breaks = breaks  # line breaks in the piece (a line break is `\n`, `\r\n` or `\r`)
        self.index = 0  # position in the file's list of pieces (kept by the owner of the list)
        self._line_starts: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"Piece({self.index}, {self.text!r})"

    @property
    def line_starts(self) -> tuple[int, ...]:
        """Offsets (in the piece) where its lines start; one more than `breaks`."""
        if self._line_starts is None:
            self._line_starts = tuple(_line_starts(self.text))
        return self._line_starts

    @property
    def entry_text(self) -> str | None:
        """The entry as the store keeps it, or None for a blank segment (an empty entry)."""
        return self.entry.text if self.entry is not None else None

    def local(self, offset: int) -> int:
        """An offset of the parsed document the piece was cut from, relative to the piece."""
        return offset - self.base

    def local_line(self, line: int) -> int:
        """A line of the parsed document the piece was cut from, relative to the piece."""
        return line - self.base_line

    def view(self) -> tuple[object, ...]:
        """Everything the piece says, in piece-relative terms (equal views: equal pieces)."""
        entry = self.entry
        d = self.delimiter
        return (
            self.text,
            self.breaks,
            None
            if entry is None
            else (
                entry.text,
                self.local(entry.start),
                self.local(entry.end),
                self.local(entry.segment_start),
                self.local(entry.segment_end),
            ),
            None
            if d is None
            else (self.local_line(d.line), self.local(d.start), self.local(d.end), d.kind),
            tuple(
                (
                    self.local_line(x.line),
                    self.local(x.start),
                    self.local(x.end),
                    x.column,
                    x.at_edge,
                )
                for x in self.strays
            ),
        )


def split_pieces(doc: MemoryDocument) -> list[Piece]:
    """Cut a parsed document into pieces (one per delimiter line, plus the tail), without re-parsing."""
    text = doc.text
    starts = doc.line_starts
    pieces: list[Piece] = []
    entries = doc.entries
    strays = doc.stray_delimiters
    e = s = 0
    begin = 0
    for n in range(len(doc.delimiters) + 1):
        delimiter = doc.delimiters[n] if n < len(doc.delimiters) else None
        end = _after_line(text, delimiter.end) if delimiter is not None else len(text)
        entry = None
        if e < len(entries) and entries[e].start < end:
            entry = entries[e]
            e += 1
        first = s
        while s < len(strays) and strays[s].start < end:
            s += 1
        first_line = bisect_right(starts, begin) - 1
        breaks = bisect_right(starts, end) - 1 - first_line
        pieces.append(
            Piece(
                text[begin:end], begin, first_line, entry, delimiter, tuple(strays[first:s]), breaks
            )
        )
        begin = end
    for k, piece in enumerate(pieces):
        piece.index = k
    return pieces


def reparse(window: str, *, at_file_start: bool, at_file_end: bool) -> list[Piece] | None:
    """Pieces of an edited run of whole pieces, parsed on its own (the editor's re-parse).

    `window` is the text of consecutive pieces after an edit inside them. Unless it reaches the end
    of the file, it must still end just after a delimiter line; when the edit removed that
    delimiter (or glued the next line to it) this returns None and the caller widens the window
    by the next piece. Only the window is parsed, so typing costs the size of the edited entries,
    not of the file.
    """
    doc = parse(window, at_file_start=at_file_start)
    if at_file_end:
        return split_pieces(doc)
    last = doc.delimiters[-1] if doc.delimiters else None
    if last is None or _after_line(window, last.end) != len(window):
        return None
    return split_pieces(doc)[:-1]  # the empty tail after the window's last delimiter is not a piece


_STRUCTURAL = re.compile(f"[\r\n{SECTION_SIGN}{BOM}]")


def retype_piece(piece: Piece, start: int, end: int, new_text: str) -> Piece | None:
    """The piece after typing inside its entry (offsets relative to the piece), without a parse.

    Only for edits that cannot change what the parser sees beyond the entry's text: no line
    break, `§` or U+FEFF typed or deleted, the edit within the entry, the entry's first and last
    characters still non-blank, and no stray `§` or CR in the piece. None otherwise: then
    `reparse` does it. Equal to what `parse` gives (checked with hypothesis, as `reparse`).
    """
    entry = piece.entry
    if entry is None or piece.strays or "\r" in piece.text:
        return None
    e_start, e_end = piece.local(entry.start), piece.local(entry.end)
    if not e_start <= start <= end <= e_end:
        return None
    text = piece.text
    if _STRUCTURAL.search(new_text) or _STRUCTURAL.search(text, start, end):
        return None
    raw = text[e_start:start] + new_text + text[end:e_end]
    if not raw or _blank(raw[0]) or _blank(raw[-1]):
        return None
    delta = len(new_text) - (end - start)
    base = piece.base
    new_entry = Entry(
        entry.index,
        raw,
        entry.start,
        entry.end + delta,
        entry.segment_start,
        entry.segment_end + delta,
    )
    d = piece.delimiter
    delimiter = None if d is None else DelimiterLine(d.line, d.start + delta, d.end + delta, d.kind)
    new = Piece(
        text[:start] + new_text + text[end:],
        base,
        piece.base_line,
        new_entry,
        delimiter,
        (),
        piece.breaks,
    )
    new.index = piece.index
    return new


def _blank(ch: str) -> bool:
    return ch.isspace() or ch == BOM
