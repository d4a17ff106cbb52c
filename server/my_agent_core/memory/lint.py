"""The memory linter: findings on a parsed memory file, each carrying its own fix (ruff-style).

Every rule reads the one parse of `document.py`, so the editor, `my-agent lint` and the store
agree on what an entry is. A finding's fix is a list of text edits computed with the finding, so a
quick fix never re-lints. The rules work from the file's pieces (`document.Piece`: an entry and
the delimiter line after it), so the editor keeps them up to date as it types (`LiveLint`) and a
one-shot `lint()` is the same code run once. Every rule is linear in the file size.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Protocol

import ahocorasick

from my_agent_core.memory.conflicts import (
    ConflictBlock,
    ConflictSpan,
    MarkerLine,
    SpanResolution,
    marker_lines,
    match_blocks,
    resolve_span,
    spans_of,
)
from my_agent_core.memory.document import (
    ENTRY_DELIMITER,
    SECTION_SIGN,
    DelimiterKind,
    MemoryDocument,
    Piece,
    parse,
    split_pieces,
)
from my_agent_core.memory.prefix_sums import PrefixSums
from my_agent_core.memory.safety import SafetyIssue, describe_finding, scan
from my_agent_core.memory.text import common_prefix, common_suffix

if TYPE_CHECKING:
    from my_agent_core.memory.merge_pairs import MergePair

__all__ = [
    "AMBIGUOUS_ENTRY",
    "CODES",
    "CONFLICT_MARKER",
    "DRIVER_NOT_SET_UP",
    "DUPLICATE_ENTRY",
    "EMPTY_ENTRY",
    "MALFORMED_DELIMITER",
    "MERGE_PAIR",
    "NEAR_BUDGET",
    "NON_CANONICAL",
    "OVER_BUDGET",
    "POSSIBLE_SECRET",
    "UNSAFE_CONTENT",
    "ContainmentIndex",
    "DocumentLayout",
    "Finding",
    "Fix",
    "LintCache",
    "LiveLint",
    "PieceLayout",
    "Related",
    "Severity",
    "TextEdit",
    "apply_edits",
    "apply_fixes",
    "contained_in",
    "driver_notice",
    "fix_all",
    "lint",
    "merge_pair_findings",
    "select_edits",
    "shortest_address",
]

OVER_BUDGET = "over-budget"
NEAR_BUDGET = "near-budget"
DUPLICATE_ENTRY = "duplicate-entry"
MALFORMED_DELIMITER = "malformed-delimiter"
EMPTY_ENTRY = "empty-entry"
UNSAFE_CONTENT = "unsafe-content"
AMBIGUOUS_ENTRY = "ambiguous-entry"
NON_CANONICAL = "non-canonical"
POSSIBLE_SECRET = "possible-secret"
CONFLICT_MARKER = "conflict-marker"
MERGE_PAIR = "merge-pair"
DRIVER_NOT_SET_UP = "driver-not-set-up"

#: Every code the linter emits, with a one-line description (the README and `--help` list these).
CODES: dict[str, str] = {
    OVER_BUDGET: "the entries take more characters than the store's limit (error)",
    NEAR_BUDGET: "usage is past the near-budget share of the limit (warning)",
    DUPLICATE_ENTRY: "an entry repeats an earlier one; the store keeps only the first (warning)",
    MALFORMED_DELIMITER: "a delimiter line that is not exactly `§`, or a `§` glued to text",
    EMPTY_ENTRY: "two delimiters with nothing between them, or one at the file's start or end",
    UNSAFE_CONTENT: "injection, exfiltration or invisible characters; the store blocks it (error)",
    AMBIGUOUS_ENTRY: "an entry contained in another: only its exact full text addresses it",
    NON_CANONICAL: "the store would rewrite the file differently on its next write (hint)",
    POSSIBLE_SECRET: "looks like an API key, token or private key: it would go into every prompt",
    CONFLICT_MARKER: "git conflict markers left by a text merge (error); quick fix: keep both sides",
    MERGE_PAIR: "two versions of one entry a merge kept (both sides changed it); keep one (hint)",
    DRIVER_NOT_SET_UP: "`.gitattributes` names the memory merge driver but this clone has not run "
    "`my-agent git-setup` (warning, MEMORY.md)",
}

# Credentials with a recognisable shape (few false positives); memory is sent with every request and
# often committed, so a secret in it leaks twice.
_SECRET = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|xox[abposr]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,})"
    r"|-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"
)


class Severity(IntEnum):
    """Finding severities, with the LSP DiagnosticSeverity values."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4


@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace `text[start:end]` (code-point offsets into the linted text) with `new_text`."""

    start: int
    end: int
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A named set of edits that resolves one finding; `fix_all` fixes also run in "fix all"."""

    title: str
    edits: tuple[TextEdit, ...]
    fix_all: bool = True


@dataclass(frozen=True, slots=True)
class Related:
    """Another place a finding refers to (the first copy of a duplicate, the containing entry)."""

    start: int
    end: int
    message: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem at `text[start:end]`, with its fixes (the first is the preferred one)."""

    code: str
    severity: Severity
    message: str
    start: int
    end: int
    fixes: tuple[Fix, ...] = ()
    related: tuple[Related, ...] = ()


_EDGE_START = re.compile(f"^[\\s\ufeff]*{SECTION_SIGN}[{SECTION_SIGN}\\s\ufeff]*")
# Starts only where a run of blanks and signs starts: from inside a long one it was quadratic.
_EDGE_END = re.compile(
    f"(?<![{SECTION_SIGN}\\s\ufeff])[\\s\ufeff]*{SECTION_SIGN}[{SECTION_SIGN}\\s\ufeff]*$"
)


class LintCache:
    """Memo of the per-entry scans between lints of successive versions of one file.

    Safety and secret scans depend on the entry text alone, so a keystroke in a big file re-scans
    only the entry it changed (bounded: the memo is cleared when it grows past `MAX_SCANS`).
    """

    MAX_SCANS = 50_000

    def __init__(self) -> None:
        self.scans: dict[str, tuple[SafetyIssue, ...]] = {}
        self.secrets: dict[str, tuple[tuple[int, int], ...]] = {}

    def scan(self, raw: str) -> tuple[SafetyIssue, ...]:
        found = self.scans.get(raw)
        if found is None:
            if len(self.scans) >= self.MAX_SCANS:
                self.scans.clear()
            found = self.scans[raw] = tuple(scan(raw))
        return found

    def find_secrets(self, raw: str) -> tuple[tuple[int, int], ...]:
        found = self.secrets.get(raw)
        if found is None:
            if len(self.secrets) >= self.MAX_SCANS:
                self.secrets.clear()
            found = self.secrets[raw] = tuple(m.span() for m in _SECRET.finditer(raw))
        return found


class PieceLayout(Protocol):
    """A file cut into pieces, and where its pieces and lines are: what the linter reads.

    The language server's chunked text is one (positions in O(log n)); `lint()` builds one over
    a parsed document.
    """

    @property
    def chunks(self) -> list[Piece]: ...

    @property
    def text(self) -> str: ...

    def __len__(self) -> int: ...

    def chunk_start(self, k: int) -> int: ...

    def chunk_at(self, offset: int) -> int: ...

    def line_of(self, offset: int) -> int: ...

    def line_start(self, line: int) -> int: ...

    def line_end(self, line: int) -> int: ...

    @property
    def line_count(self) -> int: ...


class DocumentLayout:
    """`PieceLayout` of a parsed document (for one-shot lints: the CLI, tests, a file just opened)."""

    def __init__(self, doc: MemoryDocument) -> None:
        self.doc = doc
        self.chunks = split_pieces(doc)
        self._starts = [p.base for p in self.chunks]

    @property
    def text(self) -> str:
        return self.doc.text

    def __len__(self) -> int:
        return len(self.doc.text)

    def chunk_start(self, k: int) -> int:
        return self._starts[k]

    def chunk_at(self, offset: int) -> int:
        return max(bisect_right(self._starts, offset) - 1, 0)

    def line_of(self, offset: int) -> int:
        return self.doc.pos_at(offset).line

    def line_start(self, line: int) -> int:
        starts = self.doc.line_starts
        return starts[line] if line < len(starts) else len(self.doc.text)

    def line_end(self, line: int) -> int:
        return self.doc.line_end(line)

    @property
    def line_count(self) -> int:
        return len(self.doc.line_starts)


def lint(
    doc: MemoryDocument, *, limit: int, near_share: float = 0.9, cache: LintCache | None = None
) -> list[Finding]:
    """All findings of a document, sorted by position (`cache`: reuse scans across versions)."""
    return LiveLint(DocumentLayout(doc), cache).findings(limit=limit, near_share=near_share)


@dataclass(frozen=True, slots=True)
class _Local:
    """A piece's own findings, with offsets relative to the piece (shifted when reported)."""

    delimiters: tuple[Finding, ...]
    unsafe: tuple[Finding, ...]
    secrets: tuple[Finding, ...]
    fixable_delimiter: bool
    prev_break: str | None  # the line break before the piece it was computed with (last piece)


class LiveLint:
    """The findings of one memory file, kept up to date piece by piece as it is edited.

    Every rule is computed from per-piece facts (each piece's entry, delimiter and own findings,
    computed once when the piece appears) and a few structures updated from what changed: the
    copies of each entry text (duplicates), prefix sums of what each first copy adds to the budget
    (over/near budget), which distinct texts lie inside another (ambiguous entries), the blank
    pieces (empty entries) and the non-canonical pieces. An edit costs the pieces it replaced,
    not the file, plus one C-speed search of the file for each new entry text (its containers);
    `findings()` costs the number of findings, and the run of non-canonical pieces when there is
    one.
    """

    def __init__(self, layout: PieceLayout, cache: LintCache | None = None) -> None:
        self.layout = layout
        self.cache = cache if cache is not None else LintCache()
        self.copies: dict[str, list[Piece]] = {}  # entry text -> its pieces, in file order
        self.duplicated: set[str] = set()  # texts with two or more copies
        self.blank: set[Piece] = set()  # pieces whose segment is blank (empty entries)
        self.local: dict[Piece, _Local] = {}  # pieces with findings of their own
        self.fixable_delimiters = 0  # pieces with a fixable malformed-delimiter finding
        self.with_cr = 0  # pieces holding a `\r` (entry text then differs from the source)
        #: pieces holding git conflict marker lines (piece-relative), and how many of them hold a
        #: `<`, `|` or `>` one (a lone `=======` is a Markdown underline as often as not)
        self.markers: dict[Piece, tuple[MarkerLine, ...]] = {}
        self.conflict_pieces = 0
        self._resolutions: dict[tuple[str, tuple[ConflictBlock, ...]], SpanResolution] = {}
        self.containment = ContainmentIndex()
        pieces = layout.chunks
        for piece in pieces:
            self._add(piece)
        self.budget = PrefixSums(self._budget_value(p) for p in pieces)
        self.blanks = PrefixSums(int(p.entry is None) for p in pieces)
        # pieces that differ from what the store would write there
        self.odd = PrefixSums(int(not _canonical_piece(p)) for p in pieces)
        self.containment.rebuild(list(self.copies))

    # ----- keeping up with edits ---------------------------------------------------------------------
    def splice(self, first: int, removed: Sequence[Piece], added: Sequence[Piece]) -> None:
        """Pieces `removed` were replaced by `added` at index `first` (the layout already shows it)."""
        pieces = self.layout.chunks
        touched: set[str] = set()
        gone: list[str] = []
        # Each touched text's first copy before the edit: only a first copy counts for the budget,
        # and an edit elsewhere can make it a later copy (or make a later one the first).
        first_before: dict[str, Piece] = {}
        for piece in (*removed, *added):
            text = piece.entry_text
            if text is not None and text not in first_before and text in self.copies:
                first_before[text] = self.copies[text][0]
        for piece in removed:
            text = self._remove(piece)
            if text is not None:
                touched.add(text)
                if text not in self.copies:
                    gone.append(text)
        new: list[str] = []
        for piece in added:
            text = piece.entry_text
            if text is not None:
                touched.add(text)
                if text not in self.copies:
                    new.append(text)
            self._add(piece)
        stop = first + len(removed)
        self.blanks.splice(first, stop, [int(p.entry is None) for p in added])
        self.odd.splice(first, stop, [int(not _canonical_piece(p)) for p in added])
        if len(added) != len(removed):
            self.budget = PrefixSums(self._budget_value(p) for p in pieces)
        else:
            for piece in added:
                self.budget.set(piece.index, self._budget_value(piece))
            for text in touched:
                copies = self.copies.get(text)
                if copies:
                    self.budget.set(copies[0].index, self._budget_value(copies[0]))
                old = first_before.get(text)
                if old is not None and old.index < len(pieces) and pieces[old.index] is old:
                    self.budget.set(old.index, self._budget_value(old))
        gone_set = set(new) & set(gone)  # texts that left and came back: nothing changed for them
        self.containment.change(
            [t for t in gone if t not in gone_set],
            [t for t in new if t not in gone_set],
            self._containers_of,
        )

    def _add(self, piece: Piece) -> None:
        entry = piece.entry
        if entry is None:
            self.blank.add(piece)
        else:
            copies = self.copies.get(entry.text)
            if copies is None:
                self.copies[entry.text] = [piece]
            else:
                copies.insert(bisect_right(copies, piece.index, key=_index_of), piece)
                self.duplicated.add(entry.text)
        local = self._local_findings(piece)
        if local is not None:
            self.local[piece] = local
            self.fixable_delimiters += local.fixable_delimiter
        if "\r" in piece.text:
            self.with_cr += 1
        if any(hint in piece.text for hint in _MARKER_HINT) or "=" * 7 in piece.text:
            found = tuple(marker_lines(piece.text))
            if found:
                self.markers[piece] = found
                self.conflict_pieces += any(m.kind != "=" for m in found)

    def _remove(self, piece: Piece) -> str | None:
        text = piece.entry_text
        if text is None:
            self.blank.discard(piece)
        else:
            copies = self.copies[text]
            copies.remove(piece)
            if len(copies) < 2:
                self.duplicated.discard(text)
            if not copies:
                del self.copies[text]
        local = self.local.pop(piece, None)
        if local is not None:  # a piece without findings of its own has no fixable delimiter
            self.fixable_delimiters -= local.fixable_delimiter
        self.with_cr -= "\r" in piece.text
        found = self.markers.pop(piece, None)
        if found is not None:
            self.conflict_pieces -= any(m.kind != "=" for m in found)
        return text

    def _budget_value(self, piece: Piece) -> int:
        text = piece.entry_text
        if text is None or self.copies[text][0] is not piece:
            return 0
        return len(text) + len(ENTRY_DELIMITER)

    def _containers_of(self, inner: str) -> Iterator[str]:
        """The current entry texts (other than `inner`) that contain `inner`."""
        layout = self.layout
        if self.with_cr:  # entry texts differ from their source: search their join instead
            texts = list(self.copies)
            yield from _containers_in_join(
                ENTRY_DELIMITER.join(texts), _starts(texts), texts, inner
            )
            return
        hay = layout.text
        pos = hay.find(inner)
        while pos != -1:
            k = layout.chunk_at(pos)
            piece = layout.chunks[k]
            entry = piece.entry
            if entry is None:  # cannot happen (a match is non-blank text inside a segment)
                pos = hay.find(inner, pos + 1)
                continue
            base = layout.chunk_start(k)
            start, end = base + piece.local(entry.start), base + piece.local(entry.end)
            if start <= pos and pos + len(inner) <= end and entry.text != inner:
                yield entry.text
            pos = hay.find(inner, max(end, pos + 1))

    # ----- findings ----------------------------------------------------------------------------------
    def findings(self, *, limit: int, near_share: float = 0.9) -> list[Finding]:
        """All findings of the current text, sorted by position."""
        findings: list[Finding] = []
        findings += self._budget(limit, near_share)
        findings += self._duplicates()
        delimiters, unsafe, secrets = self._local()
        findings += delimiters
        empties = self._empty_entries()
        findings += empties
        findings += unsafe
        findings += secrets
        findings += self._ambiguous()
        conflicts = self._conflicts() if self.conflict_pieces else []
        findings += conflicts
        if not self.fixable_delimiters and not empties and not conflicts:
            findings += self._non_canonical()
        findings.sort(key=lambda f: (f.start, f.end, f.severity))
        return findings

    def entry_number(self, piece: Piece) -> int:
        """0-based index of a piece's entry among the file's entries (blank segments skipped)."""
        return piece.index - self.blanks.prefix(piece.index)

    def _span(self, piece: Piece) -> tuple[int, int]:
        """Absolute offsets of a piece's entry (stripped text)."""
        entry = piece.entry
        assert entry is not None
        base = self.layout.chunk_start(piece.index)
        return base + piece.local(entry.start), base + piece.local(entry.end)

    def _budget(self, limit: int, near_share: float) -> list[Finding]:
        # The store keeps one copy of a repeated entry, so usage counts first copies only: the figure
        # matches the Memory view, the status bar and the store's own refusals.
        total = self.budget.total()
        if not total:
            return []
        pieces = self.layout.chunks
        step = len(ENTRY_DELIMITER)
        used = total - step
        share = used / limit if limit > 0 else float("inf")
        if used > limit:
            first = pieces[self.budget.search(limit + step)]
            last = pieces[self.budget.search(total - 1)]
            percent = f" ({share:.0%})" if limit > 0 else ""
            msg = (
                f"Memory is over budget: {used}/{limit} chars{percent}. Entries from "
                f"#{self.entry_number(first) + 1} on do not fit; the store refuses additions until "
                "entries are removed or consolidated."
            )
            start, _ = self._span(first)
            _, end = self._span(last)
            return [Finding(OVER_BUDGET, Severity.ERROR, msg, start, end)]
        near_share = min(max(near_share, 0.0), 1.0)
        if near_share < 1.0 and used > near_share * limit:
            first = pieces[
                self.budget.search(near_share * limit + step)
            ]  # the entry that tipped it
            msg = (
                f"Memory is near its budget: {used}/{limit} chars ({share:.0%}, warning past "
                f"{near_share:.0%}). Consolidate entries before the agent's next additions are "
                "refused."
            )
            start, end = self._span(first)
            return [Finding(NEAR_BUDGET, Severity.WARNING, msg, start, end)]
        return []

    def _duplicates(self) -> list[Finding]:
        findings = []
        budget_total = self.budget.total()
        for text in self.duplicated:
            original, *later = self.copies[text]
            o_start, o_end = self._span(original)
            line = self.layout.line_of(o_start) + 1
            msg = (
                f"Duplicate of entry #{self.entry_number(original) + 1} (line {line}); the store "
                "keeps only the first copy, so this one is not in the prompt and goes at the next "
                "write."
            )
            related = (Related(o_start, o_end, "first copy"),)
            for piece in later:
                start, end = self._span(piece)
                # in the trailing run of duplicates (no kept entry after it): take the delimiter
                # before it, so removing any set of duplicates never leaves a dangling delimiter
                trailing = budget_total == self.budget.prefix(piece.index + 1)
                fix = Fix("Remove this duplicate entry", (self._removal(piece, trailing),))
                findings.append(
                    Finding(DUPLICATE_ENTRY, Severity.WARNING, msg, start, end, (fix,), related)
                )
        return findings

    def _removal(self, piece: Piece, trailing: bool) -> TextEdit:
        """Delete an entry and one delimiter next to it (composes with the other removals)."""
        start, end = self._span(piece)
        pieces = self.layout.chunks
        if trailing:
            k = piece.index - 1
            while pieces[k].entry is None:
                k -= 1
            return TextEdit(self._span(pieces[k])[1], end, "")
        k = piece.index + 1
        while pieces[k].entry is None:
            k += 1
        return TextEdit(start, self._span(pieces[k])[0], "")

    def _local(self) -> tuple[list[Finding], list[Finding], list[Finding]]:
        """Each piece's own findings, at their place in the file."""
        delimiters: list[Finding] = []
        unsafe: list[Finding] = []
        secrets: list[Finding] = []
        pieces = self.layout.chunks
        tail = pieces[-1]
        if tail.strays and len(pieces) > 1:  # its fixes may use the line break before it
            local = self.local.get(tail)
            if local is not None and local.prev_break != _trailing_break(pieces[-2].text):
                self._refresh_local(tail)
        for piece, local in self.local.items():
            base = self.layout.chunk_start(piece.index)
            delimiters += (_shifted(f, base) for f in local.delimiters)
            unsafe += (_shifted(f, base) for f in local.unsafe)
            secrets += (_shifted(f, base) for f in local.secrets)
        return delimiters, unsafe, secrets

    def _refresh_local(self, piece: Piece) -> None:
        old = self.local.pop(piece, None)
        if old is not None:
            self.fixable_delimiters -= old.fixable_delimiter
        new = self._local_findings(piece)
        if new is not None:
            self.local[piece] = new
            self.fixable_delimiters += new.fixable_delimiter

    def _local_findings(self, piece: Piece) -> _Local | None:
        """The piece's own findings (None when it has none: the common case, kept cheap)."""
        d = piece.delimiter
        prev_break = None
        delimiters: tuple[Finding, ...] = ()
        if piece.strays or (d is not None and d.kind is not DelimiterKind.CANONICAL):
            pieces = self.layout.chunks
            k = piece.index
            if piece.strays and 0 < k < len(pieces) and pieces[k] is piece:
                prev_break = _trailing_break(pieces[k - 1].text)
            delimiters = _delimiter_findings(piece, prev_break)
        unsafe, secrets = _entry_findings(piece, self.cache)
        if not (delimiters or unsafe or secrets):
            return None
        fixable = any(f.fixes for f in delimiters)
        return _Local(delimiters, unsafe, secrets, fixable, prev_break)

    def _empty_entries(self) -> list[Finding]:
        pieces = self.layout.chunks
        if len(pieces) < 2 or not self.blank:
            return []
        has_entries = len(pieces) > self.blanks.total()
        msg = (
            "Empty entry: a delimiter with nothing before or after it."
            if has_entries
            else "Only delimiters, no entries: the file holds nothing."
        )
        culprits = sorted({max(p.index - 1, 0) for p in self.blank})
        layout = self.layout
        findings = []
        for k in culprits:
            piece = pieces[k]
            d = piece.delimiter
            assert d is not None
            base = layout.chunk_start(k)
            start, end = base + piece.local(d.start), base + piece.local(d.end)
            line = layout.line_of(start)
            begin = layout.line_start(line)
            if line + 1 < layout.line_count:
                span = (begin, layout.line_start(line + 1))
            elif line > 0:
                span = (layout.line_end(line - 1), len(layout))
            else:
                span = (begin, len(layout))
            fix = Fix("Remove the extra delimiter", (TextEdit(span[0], span[1], ""),))
            findings.append(Finding(EMPTY_ENTRY, Severity.WARNING, msg, start, end, (fix,)))
        return findings

    def _ambiguous(self) -> list[Finding]:
        if not self.containment.complete:
            msg = (
                "Not checked for entries contained in others: they overlap too much to check "
                "quickly (a file this repetitive is probably not hand-written memory)."
            )
            return [Finding(AMBIGUOUS_ENTRY, Severity.INFORMATION, msg, 0, 0)]
        findings = []
        for inner, outers in self.containment.contained().items():
            piece = self.copies[inner][0]
            outer = min((self.copies[o][0] for o in outers), key=_index_of)
            o_start, o_end = self._span(outer)
            line = self.layout.line_of(o_start) + 1
            msg = (
                f"Entry is contained in entry #{self.entry_number(outer) + 1} (line {line}): only "
                "its exact full text addresses it in replace/remove; a shorter old_text also "
                "matches the other entry."
            )
            related = (Related(o_start, o_end, "the entry that contains it"),)
            start, end = self._span(piece)
            findings.append(
                Finding(AMBIGUOUS_ENTRY, Severity.WARNING, msg, start, end, (), related)
            )
        return findings

    def _non_canonical(self) -> list[Finding]:
        """Where the file first differs from the store's serialization, and the fix that rewrites it.

        Only the run of pieces from the first that differs (or the last entry, whose delimiter the
        store would drop) to the last that differs is compared: every piece outside it is exactly
        what the store writes there, so the cost follows the edited region, not the file.
        """
        odd = self.odd.total()
        if not odd or not self.copies:
            return []
        layout = self.layout
        pieces = layout.chunks
        n = len(pieces)
        last_entry = self._last_entry_piece()
        first = min(self.odd.search(0), last_entry)
        last = self.odd.search(odd - 1)
        begin = layout.chunk_start(first)
        end = layout.chunk_start(last + 1) if last + 1 < n else len(layout)
        text = "".join(pieces[k].text for k in range(first, last + 1))
        canonical = "".join(_canonical_chunk(pieces[k], last_entry) for k in range(first, last + 1))
        prefix = common_prefix(text, canonical)
        suffix = common_suffix(text, canonical, limit=min(len(text), len(canonical)) - prefix)
        at = begin + prefix
        edits = [TextEdit(at, end - suffix, canonical[prefix : len(canonical) - suffix])]
        if last + 1 < n and not pieces[-1].text.endswith("\n"):
            edits.append(TextEdit(len(layout), len(layout), "\n"))  # the store's final newline
        line = layout.line_of(at)
        start, stop = layout.line_start(line), layout.line_end(line)
        msg = (
            "Not in the store's canonical form (entries stripped, `\\n§\\n` between them, LF line "
            "ends, no BOM); the store rewrites it so on its next write. Format Document does it now."
        )
        fix = Fix("Rewrite the file in canonical form", tuple(edits), fix_all=False)
        return [Finding(NON_CANONICAL, Severity.HINT, msg, start, max(stop, start), (fix,))]

    def _conflicts(self) -> list[Finding]:
        """`conflict-marker` errors: each conflict block (the fix keeps both sides as entries, the
        one resolution of `conflicts.py`, so the store and the driver agree), and each marker line
        left outside a block (the fix deletes it). No fix is in fix-all: a person resolving the
        conflict by hand must not see it resolved on save."""
        layout = self.layout
        pieces = sorted(self.markers, key=_index_of)
        markers = [m.shifted(layout.chunk_start(p.index)) for p in pieces for m in self.markers[p]]
        found = match_blocks(markers)
        if not found:
            self._resolutions = {}
            return []
        findings: list[Finding] = []
        kept: dict[tuple[str, tuple[ConflictBlock, ...]], SpanResolution] = {}
        for span in spans_of(found.blocks, self._segment_of):
            resolution = self._resolution(span, kept)
            fix = Fix(
                "Keep both sides as entries (as the merge driver does)",
                (TextEdit(span.start, span.end, resolution.replacement),),
                fix_all=False,
            )
            pairs = len(resolution.merged.both_changed)
            both = (
                f" {pairs} entr{'y was' if pairs == 1 else 'ies were'} changed on both sides: the "
                "fix keeps both versions next to each other."
                if pairs
                else ""
            )
            for block in span.blocks:
                first = layout.line_of(block.start) + 1
                last = layout.line_of(block.close.start) + 1
                msg = (
                    f"Unresolved git conflict (lines {first}-{last}): git merged this file as "
                    "text (it does where the `my-agent-memory` merge driver is not set up). The "
                    "agent reads "
                    "both sides as entries and the next memory write keeps both, so no marker "
                    "reaches a prompt. Quick fix: keep both sides as entries; or run `my-agent "
                    "git-setup` and redo the merge (`git checkout -m <this file>`); or edit it "
                    f"by hand.{both}"
                )
                findings.append(
                    Finding(
                        CONFLICT_MARKER, Severity.ERROR, msg, block.start, block.close.end, (fix,)
                    )
                )
        for stray in found.strays:
            msg = (
                "A git conflict marker line left from a merge (its block is incomplete); it holds "
                "no memory. Delete it."
            )
            fix = Fix("Delete the marker line", (TextEdit(stray.start, stray.after, ""),), False)
            findings.append(
                Finding(CONFLICT_MARKER, Severity.ERROR, msg, stray.start, stray.end, (fix,))
            )
        self._resolutions = kept
        return findings

    def _segment_of(self, offset: int) -> tuple[int, int]:
        """Absolute (start, end) of the entry segment holding `offset` (a marker line's)."""
        k = self.layout.chunk_at(offset)
        piece = self.layout.chunks[k]
        base = self.layout.chunk_start(k)
        entry = piece.entry
        if entry is None:  # cannot happen: a marker line is text of a segment
            return base, base + len(piece.text)
        return base + piece.local(entry.segment_start), base + piece.local(entry.segment_end)

    def _resolution(
        self,
        span: ConflictSpan,
        kept: dict[tuple[str, tuple[ConflictBlock, ...]], SpanResolution],
    ) -> SpanResolution:
        """The span resolved, remembered by its text from the last `findings()` (typing in one
        entry merges that span again, not every conflict of the file); `kept` collects this
        pass's, which replace the memo after it."""
        text = self.layout.text[span.start : span.end]
        blocks = tuple(b.shifted(-span.start) for b in span.blocks)
        key = (text, blocks)
        found = self._resolutions.get(key) or kept.get(key)
        if found is None:
            found = resolve_span(text, ConflictSpan(0, len(text), blocks))
        kept[key] = found
        return found

    def _last_entry_piece(self) -> int:
        """Index of the last piece that holds an entry (there is one)."""
        filled = len(self.layout.chunks) - self.blanks.total()
        lo, hi = 0, len(self.layout.chunks) - 1  # smallest i with i + 1 - blanks[:i + 1] == filled
        while lo < hi:
            mid = (lo + hi) // 2
            if mid + 1 - self.blanks.prefix(mid + 1) >= filled:
                hi = mid
            else:
                lo = mid + 1
        return lo


def _index_of(piece: Piece) -> int:
    return piece.index


_MARKER_HINT = "<" * 7, ">" * 7, "|" * 7


def driver_notice(layout: PieceLayout, message: str) -> Finding:
    """`driver-not-set-up` on the first line of MEMORY.md (`team/git_setup.DriverStatus.notice`);
    its fix is a command, not an edit: the editor offers a button that runs `my-agent git-setup`."""
    end = layout.line_end(0) if layout.line_count else 0
    return Finding(DRIVER_NOT_SET_UP, Severity.WARNING, message, 0, end)


def merge_pair_findings(layout: PieceLayout, pairs: Iterable[MergePair]) -> list[Finding]:
    """`merge-pair` hints: for each recorded pair of versions a merge kept (`merge_pairs.py`) whose
    two texts are both entries of the file, a hint on each with the fix "Keep this one" (which
    removes the other version and one delimiter next to it). Costs two searches of the text per
    pair, not the file's entries."""
    findings: list[Finding] = []
    for pair in pairs:
        first, second = _entry_piece(layout, pair.first), _entry_piece(layout, pair.second)
        if first is None or second is None or first is second:
            continue
        for this, other in ((first, second), (second, first)):
            start, end = _piece_span(layout, this)
            o_start, o_end = _piece_span(layout, other)
            line = layout.line_of(o_start) + 1
            msg = (
                f"Changed on both sides of a merge: this entry and the one at line {line} are two "
                "versions of one entry, and the merge kept both. Keep one (or merge them by hand "
                "into one)."
            )
            fix = Fix("Keep this one", (_removal_edit(layout, other),), fix_all=False)
            related = (Related(o_start, o_end, "the other version"),)
            findings.append(Finding(MERGE_PAIR, Severity.HINT, msg, start, end, (fix,), related))
    return findings


def _entry_piece(layout: PieceLayout, text: str) -> Piece | None:
    """The first piece whose entry is `text` (a search of the text, then the piece it lands in)."""
    hay = layout.text
    pos = hay.find(text)
    while pos != -1:
        k = layout.chunk_at(pos)
        piece = layout.chunks[k]
        if piece.entry is not None and piece.entry.text == text:
            start, _end = _piece_span(layout, piece)
            if start == pos:
                return piece
        pos = hay.find(text, pos + 1)
    return None


def _piece_span(layout: PieceLayout, piece: Piece) -> tuple[int, int]:
    entry = piece.entry
    assert entry is not None
    base = layout.chunk_start(piece.index)
    return base + piece.local(entry.start), base + piece.local(entry.end)


def _removal_edit(layout: PieceLayout, piece: Piece) -> TextEdit:
    """Delete an entry and one delimiter next to it (the one after it, or before the last one)."""
    pieces = layout.chunks
    start, end = _piece_span(layout, piece)
    for k in range(piece.index + 1, len(pieces)):
        if pieces[k].entry is not None:
            return TextEdit(start, _piece_span(layout, pieces[k])[0], "")
    for k in range(piece.index - 1, -1, -1):
        if pieces[k].entry is not None:
            return TextEdit(_piece_span(layout, pieces[k])[1], end, "")
    return TextEdit(start, end, "")


def _canonical_chunk(piece: Piece, last_entry: int) -> str:
    """What the store writes for a piece: its entry and a delimiter (the last entry: a newline)."""
    if piece.entry is None:
        return ""
    return piece.entry.text + ("\n" if piece.index == last_entry else ENTRY_DELIMITER)


def _canonical_piece(piece: Piece) -> bool:
    """Whether the piece is exactly what the store would write there (the last piece, the only one
    without a delimiter, may end without the final newline)."""
    text = piece.entry_text
    if text is None:
        return False
    if piece.delimiter is None:
        return piece.text in (text, text + "\n")
    return piece.text == text + ENTRY_DELIMITER


def _trailing_break(text: str) -> str | None:
    if text.endswith("\r\n"):
        return "\r\n"
    if text.endswith(("\n", "\r")):
        return text[-1]
    return None


def _shifted(finding: Finding, delta: int) -> Finding:
    """A piece-relative finding placed in the file."""
    if not delta:
        return finding
    fixes = tuple(
        Fix(
            fix.title,
            tuple(TextEdit(e.start + delta, e.end + delta, e.new_text) for e in fix.edits),
            fix.fix_all,
        )
        for fix in finding.fixes
    )
    related = tuple(Related(r.start + delta, r.end + delta, r.message) for r in finding.related)
    return Finding(
        finding.code,
        finding.severity,
        finding.message,
        finding.start + delta,
        finding.end + delta,
        fixes,
        related,
    )


# --- a piece's own findings: delimiters, safety, secrets -----------------------------------------


def _delimiter_findings(piece: Piece, prev_break: str | None) -> tuple[Finding, ...]:
    """Malformed delimiter lines and stray `§`s of one piece (offsets relative to the piece)."""
    findings = []
    d = piece.delimiter
    if d is not None and d.kind is not DelimiterKind.CANONICAL:
        start, end = piece.local(d.start), piece.local(d.end)
        what = "repeats `§`" if d.kind is DelimiterKind.REPEATED else "has blanks around `§`"
        msg = f"Delimiter line {what}; a delimiter is a line holding only `§`."
        fix = Fix("Normalize the delimiter to `§`", (TextEdit(start, end, SECTION_SIGN),))
        findings.append(Finding(MALFORMED_DELIMITER, Severity.WARNING, msg, start, end, (fix,)))
    text = piece.text
    for s in piece.strays:
        line = piece.local_line(s.line)
        s_start, s_end = piece.local(s.start), piece.local(s.end)
        if not s.at_edge:
            col = piece.line_starts[line] + s.column
            msg = (
                "`§` inside text is not an entry delimiter (only a line holding just `§` splits "
                "entries); this is fine if you meant the section sign."
            )
            findings.append(Finding(MALFORMED_DELIMITER, Severity.INFORMATION, msg, col, col + 1))
            continue
        nl = _line_break_near(piece, line, prev_break)
        line_text = text[s_start:s_end]
        edits = []
        head = _EDGE_START.match(line_text)
        if head:
            edits.append(TextEdit(s_start, s_start + head.end(), SECTION_SIGN + nl))
        tail = _EDGE_END.search(line_text)
        if tail and (not head or tail.start() >= head.end()):
            edits.append(TextEdit(s_start + tail.start(), s_end, nl + SECTION_SIGN))
        where = "starts" if head else "ends"
        msg = (
            f"This line {where} with `§` but holds other text, so it does not split entries; "
            "a delimiter must be on a line of its own (a lost line break?)."
        )
        fixes = (Fix("Put `§` on its own line", tuple(edits)),) if edits else ()
        findings.append(Finding(MALFORMED_DELIMITER, Severity.WARNING, msg, s_start, s_end, fixes))
    return tuple(findings)


def _line_break_near(piece: Piece, line: int, prev_break: str | None) -> str:
    """The line break the file uses at a line of the piece (after it, else before it), `\\n` else."""
    text = piece.text
    starts = piece.line_starts
    if line + 1 < len(starts):
        nxt = starts[line + 1]
        return "\r\n" if text.startswith("\r\n", nxt - 2) else text[nxt - 1]
    if line > 0:
        prev = starts[line]
        return "\r\n" if text.startswith("\r\n", prev - 2) else text[prev - 1]
    return prev_break or "\n"


def _entry_findings(
    piece: Piece, cache: LintCache
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """The store's scanner and the secret patterns on one entry's source text (piece-relative).

    Outside entries there are only blanks, line breaks and delimiter lines, none of which the
    scanner flags; the byte-order mark of the file is never part of an entry.
    """
    entry = piece.entry
    if entry is None:
        return (), ()
    start = piece.local(entry.start)
    end = piece.local(entry.end)
    # Without a CR the normalised text is the source text itself: reuse it (no slice, one hash)
    raw = entry.text if len(entry.text) == end - start else piece.text[start:end]
    issues = cache.scan(raw)
    spans = cache.find_secrets(raw)
    if not issues and not spans:
        return (), ()
    unsafe = []
    for issue in issues:
        a, b = start + issue.start, start + issue.end
        fixes: tuple[Fix, ...] = ()
        if issue.kind == "invisible":
            title = "Remove the invisible character" if b - a == 1 else "Remove the hidden text"
            fixes = (Fix(title, (TextEdit(a, b, ""),)),)
            msg = (
                f"Unsafe content: {describe_finding(issue.message, (issue.rule,))}; the store "
                "blocks this entry from the prompt."
            )
        else:
            msg = (
                f"Unsafe content ({issue.kind}): {describe_finding(issue.message, (issue.rule,))};"
                " the store blocks this entry from the prompt."
            )
        unsafe.append(Finding(UNSAFE_CONTENT, Severity.ERROR, msg, a, b, fixes))
    msg = (
        "This looks like a secret (API key, token or private key). Memory goes into every prompt "
        "and is often committed: keep secrets in the environment or a vault, and rotate this one."
    )
    secrets = tuple(
        Finding(POSSIBLE_SECRET, Severity.WARNING, msg, start + a, start + b) for a, b in spans
    )
    return tuple(unsafe), secrets


# --- containment ---------------------------------------------------------------------------------


def contained_in(texts: list[str]) -> dict[int, int]:
    """For distinct `texts`: index of each text found inside another -> index of its first container.

    Linear: one Aho-Corasick automaton over all texts, one pass over their join. Entry texts cannot
    hold a line of only `§`, so no match can straddle the `\\n§\\n` that joins them.
    """
    position = {t: i for i, t in enumerate(texts)}
    index = ContainmentIndex()
    index.rebuild(texts)
    return {
        position[t]: min(position[o] for o in outers) for t, outers in index.contained().items()
    }


class ContainmentIndex:
    """Which distinct entry texts lie inside another, kept up to date across versions.

    A rebuild is one Aho-Corasick pass over the join of all texts. The automaton only holds
    strings of at most `SHORT_PATTERN` characters (it walks a failure chain per position, so a
    long periodic pattern would make it quadratic, and megabyte patterns crash it): the short
    texts themselves, and the first `SHORT_PATTERN` characters of each longer text as a probe,
    confirmed with `startswith` where it matches. The matches and confirmations are counted;
    past `WORK_PER_CHAR` steps per character of the join the index stops and says so
    (`complete` False: the rule reports that it was not checked) instead of hanging on a hostile
    file. Between rebuilds, a change only looks at the texts that appeared or disappeared: the
    caller's finder gives the texts a new one lies in (one `str.find` per container), the
    automaton the known texts inside it, and texts added since the build are checked directly
    with `in`. It rebuilds once those pass `max(REBUILD_AFTER, number of texts / 8)`.
    """

    REBUILD_AFTER = 64
    SHORT_PATTERN = 64
    WORK_PER_CHAR = 2
    WORK_FLOOR = 50_000

    def __init__(self) -> None:
        self.texts: set[str] = set()
        self.automaton: Any = None
        self.probes: dict[str, list[str]] = {}  # automaton key -> the texts it stands for
        self.complete = True
        self.loose: set[str] = set()  # texts added since the automaton was built
        self.added_since_build = 0
        self.inside: dict[str, set[str]] = {}  # text -> the texts it contains
        self.containers: dict[str, set[str]] = {}  # text -> the texts containing it (non-empty)

    def contained(self) -> dict[str, set[str]]:
        """{contained text: the texts containing it} for the current texts."""
        return self.containers

    def update(self, texts: list[str]) -> dict[str, set[str]]:
        """Distinct `texts` of the new version -> {contained text: its container texts}."""
        new = set(texts)
        added = [t for t in texts if t not in self.texts]
        removed = [t for t in self.texts if t not in new]
        if self.automaton is None:
            self.rebuild(texts)
        else:
            hay = ENTRY_DELIMITER.join(texts)
            starts = _starts(texts)
            self.change(
                removed, added, lambda inner: _containers_in_join(hay, starts, texts, inner)
            )
        return {t: set(o) for t, o in self.containers.items()}

    def change(
        self,
        removed: Iterable[str],
        added: Iterable[str],
        containers_of: Callable[[str], Iterable[str]],
    ) -> None:
        """Texts `removed` left and `added` appeared; `containers_of(t)`: current texts holding t."""
        removed = list(removed)
        added = list(added)
        if not removed and not added:
            return
        for gone in removed:
            self.texts.discard(gone)
            self.loose.discard(gone)
            for inner in self.inside.pop(gone, ()):
                outers = self.containers[inner]
                outers.discard(gone)
                if not outers:
                    del self.containers[inner]
            for outer in self.containers.pop(gone, ()):
                self.inside[outer].discard(gone)
        self.texts.update(added)
        self.added_since_build += len(added)
        budget = max(self.REBUILD_AFTER, len(self.texts) // 8)
        if self.automaton is None or self.added_since_build > budget:
            self.rebuild(list(self.texts))
            return
        if not self.complete:  # stopped on this file: wait for the next rebuild
            self.loose.update(added)
            return
        fresh = set(added)
        for a in added:
            for outer in containers_of(a):
                self._pair(a, outer)
            if self.automaton.kind == ahocorasick.AHOCORASICK:
                for end, key in self.automaton.iter(a):  # known texts inside `a`
                    start = end - len(key) + 1
                    for known in self.probes[key]:
                        if (
                            known != a
                            and known in self.texts
                            and known not in fresh
                            and a.startswith(known, start)
                        ):
                            self._pair(known, a)
            for p in self.loose:  # texts added since the automaton was built
                if p != a and p in a:
                    self._pair(p, a)
            self.loose.add(a)

    def _pair(self, inner: str, outer: str) -> None:
        self.containers.setdefault(inner, set()).add(outer)
        self.inside.setdefault(outer, set()).add(inner)

    def rebuild(self, texts: list[str]) -> None:
        """Recompute everything for distinct `texts` (linear work, or stop and say so)."""
        self.texts = set(texts)
        self.inside, self.containers = {}, {}
        self.complete = True
        self.loose = set()
        self.added_since_build = 0
        self.probes = {}
        automaton = ahocorasick.Automaton()
        self.automaton = automaton
        for t in texts:
            self.probes.setdefault(t[: self.SHORT_PATTERN], []).append(t)
        for key in self.probes:
            automaton.add_word(key, key)
        if not texts:
            return
        automaton.make_automaton()
        if len(texts) < 2:
            return
        hay = ENTRY_DELIMITER.join(texts)
        starts = _starts(texts)
        work = self.WORK_PER_CHAR * len(hay) + self.WORK_FLOOR
        for end, key in automaton.iter(hay):
            start = end - len(key) + 1
            j = bisect_right(starts, start) - 1
            outer = texts[j]
            outer_end = starts[j] + len(outer)
            for inner in self.probes[key]:
                known = self.containers.get(inner)
                if inner == outer or start + len(inner) > outer_end or (known and outer in known):
                    work -= 1
                elif len(inner) == len(key):
                    work -= 1
                    self._pair(inner, outer)
                else:  # a probe: confirm the whole text is there
                    work -= len(inner)
                    if hay.startswith(inner, start):
                        self._pair(inner, outer)
                if work < 0:
                    return self._stop()

    def _stop(self) -> None:
        self.complete = False
        self.inside, self.containers = {}, {}


def _containers_in_join(hay: str, starts: list[int], texts: list[str], inner: str) -> Iterator[str]:
    """The texts (other than `inner`) that contain `inner`, from their `ENTRY_DELIMITER` join."""
    pos = hay.find(inner)
    while pos != -1:
        j = bisect_right(starts, pos) - 1
        outer_end = starts[j] + len(texts[j])
        if texts[j] != inner and pos + len(inner) <= outer_end:
            yield texts[j]
        pos = hay.find(inner, outer_end)


def _starts(texts: list[str]) -> list[int]:
    """Offsets of each text in `ENTRY_DELIMITER.join(texts)`."""
    step = len(ENTRY_DELIMITER)
    return [0, *accumulate(len(t) + step for t in texts[:-1])] if texts else []


def apply_fixes(text: str, findings: Iterable[Finding]) -> str:
    """Apply every `fix_all` fix of the findings in one pass (overlapping fixes wait)."""
    fixes = (fix for finding in findings for fix in finding.fixes if fix.fix_all)
    return apply_edits(text, select_edits(fixes))


def fix_all(text: str, *, limit: int, near_share: float = 0.9, max_passes: int = 8) -> str:
    """Apply fixes until nothing fixable is left (skipped overlapping fixes get the next pass)."""
    for _ in range(max_passes):
        fixed = apply_fixes(text, lint(parse(text), limit=limit, near_share=near_share))
        if fixed == text:
            break
        text = fixed
    return text


def select_edits(fixes: Iterable[Fix]) -> list[TextEdit]:
    """Edits of the fixes that do not overlap (a fix taken whole or not at all), in text order."""
    ordered = sorted(fixes, key=_first_edit)
    taken: list[TextEdit] = []  # non-overlapping, sorted by start
    starts: list[int] = []
    for fix in ordered:
        if not fix.edits or any(_conflicts(taken, starts, edit) for edit in fix.edits):
            continue
        for edit in sorted(fix.edits, key=lambda e: (e.start, e.end)):
            i = bisect_right(starts, edit.start)
            taken.insert(i, edit)
            starts.insert(i, edit.start)
    return taken


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits (offsets into `text`) in one linear pass."""
    out: list[str] = []
    pos = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        out.append(text[pos : edit.start])
        out.append(edit.new_text)
        pos = max(pos, edit.end)
    out.append(text[pos:])
    return "".join(out)


def _first_edit(fix: Fix) -> tuple[int, int]:
    return min(((e.start, e.end) for e in fix.edits), default=(0, 0))


def _conflicts(taken: list[TextEdit], starts: list[int], edit: TextEdit) -> bool:
    """Whether `edit` overlaps one of `taken` (two edits at the same start always do)."""
    i = bisect_right(starts, edit.start)
    if i > 0 and (taken[i - 1].start == edit.start or taken[i - 1].end > edit.start):
        return True
    return i < len(taken) and taken[i].start < edit.end


def shortest_address(texts: list[str], index: int) -> str:
    """The shortest `old_text` that makes the store's replace/remove pick `texts[index]`.

    The store's rules: an entry equal to the (stripped) old_text wins, otherwise the old_text must
    be contained in exactly one entry. So the answer is the shortest substring without surrounding
    blanks found in no other entry, or the full text when every shorter one is. Duplicates count as
    one entry (the store keeps one copy). Two pointers, each probe a C-speed `in`: O(len * size).
    """
    text = texts[index]
    others = [t for t in dict.fromkeys(texts) if t != text]
    if not others:
        return text[:1]
    sep = next(c for c in ("\x00", "\x01", "\uffff", "\U0010ffff", "\ue000") if c not in text)
    hay = sep.join(others)
    best = text
    n = len(text)
    end = 0
    for start in range(n):
        if text[start].isspace():
            continue
        end = max(end, start + 1)
        while end <= n and text[start:end] in hay:
            end += 1
        if end > n:
            break  # every later substring lies inside text[start:], which is found elsewhere
        stop = end
        while text[stop - 1].isspace():
            stop += 1
        if stop - start < len(best):
            best = text[start:stop]
    return best
