"""The one parser: memory-file text <-> entries with source ranges.

The store, the linter and the language server all read this module's result, so `§` is split in exactly
one place. Parsing is lossless: every non-whitespace character of the input lands in some entry, whatever
shape a hand edit left the file in; what does not look canonical is reported, never dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate

__all__ = [
    "ENTRY_DELIMITER",
    "SECTION_SIGN",
    "DelimiterKind",
    "DelimiterLine",
    "EmptyEntry",
    "Entry",
    "MemoryDocument",
    "Pos",
    "StrayDelimiter",
    "budget_used",
    "normalize_entry",
    "parse",
    "reparse",
    "serialize",
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
        """The entries the store keeps: file order, one copy of a repeated entry."""
        return list(dict.fromkeys(self.entry_texts))

    @property
    def used(self) -> int:
        """Budget used by the entries as they would be stored (a repeated entry counts once)."""
        return budget_used(self.stored_texts)

    def is_canonical(self) -> bool:
        """True when the store would write exactly this text back (up to one final newline)."""
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


def parse(text: str) -> MemoryDocument:
    """Split memory-file text into entries, delimiter lines and problems, keeping source ranges."""
    line_starts = _line_starts(text)
    body_start = 1 if text.startswith(BOM) else 0

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


def _line_end(text: str, line_starts: list[int], line: int) -> int:
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


# ---------------------------------------------------------------- incremental parsing (the editor)


def _line_of(item: DelimiterLine) -> int:
    return item.line


def _start_of(item: Entry | DelimiterLine) -> int:
    return item.start


def reparse(
    doc: MemoryDocument, start: int, end: int, new_text: str, new_full: str | None = None
) -> MemoryDocument | None:
    """`parse()` of `doc.text` with `[start:end]` replaced, re-parsing only around the edit.

    The one parser still does the work: it parses the window between the delimiter line before the
    edited lines and the one after them (both unchanged), and the parts outside the window are
    shifted. None when the edit is not between two delimiters (the first one excluded) or the window
    does not parse as expected; the caller then parses the whole text. `new_full`: the edited text,
    when the caller has it already.
    """
    text = doc.text
    if new_full is None:
        new_full = text[:start] + new_text + text[end:]
    delta = len(new_text) - (end - start)
    starts = doc.line_starts
    line_s = bisect_right(starts, start) - 1
    line_e = bisect_right(starts, end) - 1
    delims = doc.delimiters
    i_l = bisect_left(delims, line_s, key=_line_of) - 1
    i_r = bisect_right(delims, line_e, key=_line_of)
    if i_l < 1 or i_r >= len(delims):
        return None
    d_l, d_r = delims[i_l], delims[i_r]
    wa = starts[d_l.line]
    window = parse(new_full[wa : d_r.end + delta])
    w_delims = window.delimiters
    old_lines = d_r.line - d_l.line + 1
    dline = len(window.line_starts) - old_lines
    first, last = w_delims[0] if w_delims else None, w_delims[-1] if w_delims else None
    if (
        first is None
        or last is None
        or (first.line, first.start, first.end, first.kind)
        != (0, d_l.start - wa, d_l.end - wa, d_l.kind)
        or (last.line, last.start + wa, last.end + wa, last.kind)
        != (d_r.line - d_l.line + dline, d_r.start + delta, d_r.end + delta, d_r.kind)
    ):
        return None

    def shift_delim(d: DelimiterLine, lines: int, chars: int) -> DelimiterLine:
        return DelimiterLine(d.line + lines, d.start + chars, d.end + chars, d.kind)

    before = delims[:i_l]
    mid = [shift_delim(d, d_l.line, wa) for d in w_delims]
    after = [shift_delim(d, dline, delta) for d in delims[i_r + 1 :]]
    new_delims = (*before, *mid, *after)

    k = bisect_right(doc.entries, d_l.start, key=_start_of)
    j = bisect_right(doc.entries, d_r.end, key=_start_of)
    entries = list(doc.entries[:k])
    n = k
    for e in window.entries:
        entries.append(
            Entry(n, e.text, e.start + wa, e.end + wa, e.segment_start + wa, e.segment_end + wa)
        )
        n += 1
    for e in doc.entries[j:]:
        entries.append(
            Entry(
                n,
                e.text,
                e.start + delta,
                e.end + delta,
                e.segment_start + delta,
                e.segment_end + delta,
            )
        )
        n += 1

    empties = [x for x in doc.empty_entries if x.delimiter.line < d_l.line]
    w_first_empty = not (window.entries and window.entries[0].segment_end == w_delims[1].start)
    if w_first_empty:
        empties.append(EmptyEntry(mid[0]))
    w_index = {id(d): n for n, d in enumerate(w_delims)}
    for x in window.empty_entries:
        n = w_index[id(x.delimiter)]
        if 0 < n < len(w_delims) - 1:
            empties.append(EmptyEntry(mid[n]))
    for x in doc.empty_entries:
        if x.delimiter.line >= d_r.line:
            n = bisect_left(delims, x.delimiter.start, key=_start_of)
            empties.append(EmptyEntry(new_delims[n - i_r + len(before) + len(mid) - 1]))

    strays = [x for x in doc.stray_delimiters if x.line < d_l.line]
    strays += [
        StrayDelimiter(x.line + d_l.line, x.start + wa, x.end + wa, x.column, x.at_edge)
        for x in window.stray_delimiters
    ]
    strays += [
        StrayDelimiter(x.line + dline, x.start + delta, x.end + delta, x.column, x.at_edge)
        for x in doc.stray_delimiters
        if x.line > d_r.line
    ]
    line_starts = (
        *starts[: d_l.line],
        *(wa + x for x in window.line_starts),
        *(x + delta for x in starts[d_r.line + 1 :]),
    )
    return MemoryDocument(
        text=new_full,
        entries=tuple(entries),
        delimiters=new_delims,
        stray_delimiters=tuple(strays),
        empty_entries=tuple(empties),
        line_starts=line_starts,
    )
