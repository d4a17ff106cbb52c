"""Git conflict markers in a memory file: found, matched into blocks, and resolved the driver's way.

A clone whose `.gitattributes` routes MEMORY.md to the `my-agent-memory` driver but whose config
has no such driver gets git's text merge: `<<<<<<<`, `|||||||` (diff3), `=======` and `>>>>>>>`
lines inside the file. Read as entries, those lines would reach every prompt, and a store write
would copy them back. So the one parser (`document.py`, which asks this module) reads a
conflicted file the way the merge driver would have merged it: each conflict block's sides are
merged entry by entry (`memory/merge.py`; the base side from diff3 when git wrote one, else the
text around the block) and the file's entries are the result, both sides kept, no marker line.
The store, the snapshot, the linter's quick fix and the driver all go through here, so they agree.

What counts (git's own format): a line that starts with 7 or more `<`, `|` or `>` and then ends or
goes on after a blank (git writes a label there), or a line of only as many `=`. A block is
`<` ... (`|` ...) `=` ... `>` with markers of one size; markers of another size inside it belong to
a side (a conflict inside a conflicted file) and are resolved with that side, at most
`MAX_DEPTH` levels deep. A `<`, `|` or `>` line outside every block (left over from a resolution
by hand) holds no memory, only a label: it is dropped from the entries and flagged by the linter.
A lone `=======` is left as text: a Markdown heading underline looks the same.

Every scan is linear: the marker regex starts only at a line start and consumes its line.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from my_agent_core.memory.merge import Merged

__all__ = [
    "MAX_DEPTH",
    "ConflictBlock",
    "ConflictSpan",
    "Conflicts",
    "MarkerLine",
    "Resolved",
    "SpanResolution",
    "find_conflicts",
    "has_markers",
    "marker_lines",
    "match_blocks",
    "resolve_span",
    "resolved_text",
    "spans_of",
    "without_markers",
]

#: Conflicts inside a side of a conflict are resolved this many levels deep; deeper markers are
#: dropped as strays (a hostile file cannot make the parser recurse without end).
MAX_DEPTH = 4
_MIN_SIZE = 7  # git's default `conflict-marker-size`
_HINTS = ("<" * _MIN_SIZE, ">" * _MIN_SIZE, "|" * _MIN_SIZE)
# From a line start (after `\n`, after a lone `\r`, or the file's start with its BOM) one run of
# a marker character and the rest of that line: each match consumes its line, so the scan is linear.
_MARKER = re.compile(
    r"(?:^|(?<=\r))\ufeff?(?P<run><{7,}|>{7,}|\|{7,}|={7,})(?P<rest>[^\r\n]*)", re.MULTILINE
)


@dataclass(frozen=True, slots=True)
class MarkerLine:
    """One marker line: `kind` is `<`, `|`, `=` or `>`; offsets of the line's start, the end of its
    content and the end of its line break (= `end` at the end of the text)."""

    kind: str
    size: int
    start: int
    end: int
    after: int

    def shifted(self, delta: int) -> MarkerLine:
        return MarkerLine(
            self.kind, self.size, self.start + delta, self.end + delta, self.after + delta
        )


@dataclass(frozen=True, slots=True)
class ConflictBlock:
    """`<<<<<<< ours ||||||| base ======= theirs >>>>>>>` (the base part only with diff3)."""

    open: MarkerLine
    base: MarkerLine | None
    split: MarkerLine
    close: MarkerLine

    @property
    def start(self) -> int:
        return self.open.start

    @property
    def end(self) -> int:
        """Just past the closing marker's line break."""
        return self.close.after

    def ours(self, text: str) -> str:
        return text[self.open.after : (self.base or self.split).start]

    def base_text(self, text: str) -> str | None:
        return None if self.base is None else text[self.base.after : self.split.start]

    def theirs(self, text: str) -> str:
        return text[self.split.after : self.close.start]

    def shifted(self, delta: int) -> ConflictBlock:
        return ConflictBlock(
            self.open.shifted(delta),
            None if self.base is None else self.base.shifted(delta),
            self.split.shifted(delta),
            self.close.shifted(delta),
        )


@dataclass(frozen=True, slots=True)
class Conflicts:
    """The blocks of a text, and the `<`, `|`, `>` marker lines that belong to none (strays)."""

    blocks: tuple[ConflictBlock, ...] = ()
    strays: tuple[MarkerLine, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.blocks or self.strays)


@dataclass(frozen=True, slots=True)
class ConflictSpan:
    """The entries a group of blocks touches: `text[start:end]` from the start of the segment the
    first block opens in to the end of the segment the last one closes in (delimiter lines inside
    the blocks included, the delimiter lines around the span not)."""

    start: int
    end: int
    blocks: tuple[ConflictBlock, ...]


@dataclass(frozen=True, slots=True)
class SpanResolution:
    """A span resolved the driver's way: its entries, and the text that replaces it."""

    merged: Merged
    replacement: str

    @property
    def entries(self) -> tuple[str, ...]:
        return self.merged.entries


def has_markers(text: str) -> bool:
    """Cheap test (C-speed substring searches) that a text may hold a conflict."""
    return any(hint in text for hint in _HINTS)


def marker_lines(text: str) -> list[MarkerLine]:
    """Every marker line of `text`, in order (see the module docstring for what counts)."""
    if not has_markers(text) and "=" * _MIN_SIZE not in text:
        return []
    found: list[MarkerLine] = []
    for match in _MARKER.finditer(text):
        run, rest = match.group("run"), match.group("rest")
        kind = run[0]
        if kind == "=":
            if rest.strip(" \t"):
                continue
        elif rest and rest[0] not in " \t":
            continue
        end = match.end()
        after = end + 2 if text.startswith("\r\n", end) else min(end + 1, len(text))
        found.append(MarkerLine(kind, len(run), match.start("run"), end, after))
    return found


def match_blocks(markers: Sequence[MarkerLine]) -> Conflicts:
    """Marker lines (in text order) -> blocks and strays, in one pass.

    Inside an open block only markers of its size count; a second `<` of that size abandons the
    open block (its markers become strays) and opens a new one; a block never closed leaves its
    markers as strays. A `=` outside a block is text, not a stray.
    """
    blocks: list[ConflictBlock] = []
    strays: list[MarkerLine] = []
    open_: MarkerLine | None = None
    base: MarkerLine | None = None
    split: MarkerLine | None = None

    def abandon() -> None:
        strays.extend(m for m in (open_, base, split) if m is not None and m.kind != "=")

    for marker in markers:
        if open_ is None:
            if marker.kind == "<":
                open_ = marker
            elif marker.kind != "=":
                strays.append(marker)
            continue
        if marker.size != open_.size:
            continue  # a marker of a conflict inside a side: resolved with that side
        kind = marker.kind
        if kind == "<":
            abandon()
            open_, base, split = marker, None, None
        elif kind == "|" and base is None and split is None:
            base = marker
        elif kind == "=" and split is None:
            split = marker
        elif kind == ">" and split is not None:
            blocks.append(ConflictBlock(open_, base, split, marker))
            open_, base, split = None, None, None
        # anything else is text of the side it stands in (a `|` or `=` line among theirs)
    if open_ is not None:
        abandon()
    strays.sort(key=lambda m: m.start)
    return Conflicts(tuple(blocks), tuple(strays))


def find_conflicts(text: str) -> Conflicts:
    """The conflict blocks and stray markers of a text."""
    if not has_markers(text):
        return Conflicts()
    return match_blocks(marker_lines(text))


def spans_of(
    blocks: Sequence[ConflictBlock], segment_of: Callable[[int], tuple[int, int]]
) -> list[ConflictSpan]:
    """Group blocks by the entries they touch. `segment_of(offset)` gives the (start, end) of the
    entry segment holding that offset (between the delimiter lines around it); blocks whose
    segments overlap share one span."""
    spans: list[ConflictSpan] = []
    for block in blocks:
        start = segment_of(block.start)[0]
        end = segment_of(block.close.start)[1]
        if spans and start < spans[-1].end:
            last = spans[-1]
            spans[-1] = ConflictSpan(last.start, max(last.end, end), (*last.blocks, block))
        else:
            spans.append(ConflictSpan(start, end, (block,)))
    return spans


def resolve_span(text: str, span: ConflictSpan, *, depth: int = 0) -> SpanResolution:
    """Merge the sides of a span's blocks entry by entry, as the merge driver would have.

    Ours is the span with every block replaced by its ours part, theirs likewise; the base is the
    diff3 base part when git wrote one, else nothing (the text around the blocks is common to all
    three), and an entry each side added that is similar to one the other side added is taken
    for one entry both changed (`merge.pair_additions`: placed together, reported).
    `replacement` is the merged entries in canonical form, ending with a line break.
    """
    # Here: document.py imports this module (its parser finds the conflict blocks), and the merge
    # reads entries with that parser.
    from my_agent_core.memory.document import ENTRY_DELIMITER
    from my_agent_core.memory.merge import merge_entries, pair_additions

    versions: dict[str, list[str]] = {"base": [], "ours": [], "theirs": []}
    pos = span.start
    for block in span.blocks:
        common = text[pos : block.start]
        base = block.base_text(text)
        for side, part in (
            ("base", base or ""),
            ("ours", block.ours(text)),
            ("theirs", block.theirs(text)),
        ):
            versions[side] += (common, part)
        pos = block.end
    tail = text[pos : span.end]
    entries = {
        side: _entries("".join((*parts, tail)), depth + 1) for side, parts in versions.items()
    }
    merged = merge_entries(entries["base"], entries["ours"], entries["theirs"])
    if any(block.base is None for block in span.blocks):  # no base: similar additions are edits
        merged = pair_additions(merged, entries["base"], entries["ours"], entries["theirs"])
    replacement = ENTRY_DELIMITER.join(merged.entries) + "\n" if merged.entries else ""
    return SpanResolution(merged, replacement)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A conflicted text resolved: the new text, and the entries both sides changed differently
    (ours, theirs), kept next to each other."""

    text: str
    both_changed: tuple[tuple[str, str], ...] = ()


def resolved_text(
    text: str,
    conflicts: Conflicts,
    delimiters: Sequence[tuple[int, int]],
    body_start: int,
    *,
    depth: int = 0,
) -> Resolved:
    """`text` with every span of blocks replaced by its resolution and every stray marker line
    outside them deleted. `delimiters`: (start of line, end of its line break) of each delimiter
    line, in order; `body_start`: where the first segment starts (after a BOM)."""
    spans = spans_of(conflicts.blocks, _segment_finder(text, delimiters, body_start))
    cuts: list[tuple[int, int, str]] = []
    pairs: list[tuple[str, str]] = []
    for span in spans:
        resolution = resolve_span(text, span, depth=depth)
        cuts.append((span.start, span.end, resolution.replacement))
        pairs += resolution.merged.both_changed
    starts = [span.start for span in spans]
    for stray in conflicts.strays:
        k = bisect_right(starts, stray.start) - 1
        if k >= 0 and stray.start < spans[k].end:
            continue  # inside a span: resolved with it
        cuts.append((stray.start, stray.after, ""))
    cuts.sort()
    out: list[str] = []
    pos = 0
    for start, end, new in cuts:
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return Resolved("".join(out), tuple(pairs))


def _segment_finder(
    text: str, delimiters: Sequence[tuple[int, int]], body_start: int
) -> Callable[[int], tuple[int, int]]:
    starts = [d[0] for d in delimiters]

    def segment_of(offset: int) -> tuple[int, int]:
        k = bisect_right(starts, offset)  # delimiter lines starting at or before the offset
        begin = delimiters[k - 1][1] if k > 0 else body_start
        j = bisect_left(starts, offset)
        end = starts[j] if j < len(starts) else len(text)
        return begin, end

    return segment_of


def without_markers(text: str) -> str:
    """`text` without its marker lines, `=======` included (past `MAX_DEPTH`: no more resolving,
    and a separator there is one far more likely than a heading's underline)."""
    cuts = [(m.start, m.after) for m in marker_lines(text)]
    if not cuts:
        return text
    out: list[str] = []
    pos = 0
    for start, end in cuts:
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _entries(text: str, depth: int) -> list[str]:
    """The stored entries of one side (its own conflicts resolved, up to `MAX_DEPTH`)."""
    from my_agent_core.memory.document import parse  # here: document.py imports this module

    return parse(text).resolved_texts(depth)
