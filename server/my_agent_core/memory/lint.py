"""The memory linter: findings on a parsed memory file, each carrying its own fix (ruff-style).

Every rule reads the one parse of `document.py`, so the editor, `my-agent lint` and the store
agree on what an entry is. A finding's fix is a list of text edits computed with the finding, so a
quick fix never re-lints. All rules are linear in the file size (one Aho-Corasick pass).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from itertools import accumulate
from typing import Any

import ahocorasick

from my_agent_core.memory.document import (
    ENTRY_DELIMITER,
    SECTION_SIGN,
    DelimiterKind,
    Entry,
    MemoryDocument,
    parse,
    serialize,
)
from my_agent_core.memory.safety import SafetyIssue, scan
from my_agent_core.memory.text import common_prefix, common_suffix

__all__ = [
    "AMBIGUOUS_ENTRY",
    "CODES",
    "DUPLICATE_ENTRY",
    "EMPTY_ENTRY",
    "MALFORMED_DELIMITER",
    "NEAR_BUDGET",
    "NON_CANONICAL",
    "OVER_BUDGET",
    "POSSIBLE_SECRET",
    "UNSAFE_CONTENT",
    "ContainmentIndex",
    "Finding",
    "Fix",
    "LintCache",
    "Related",
    "Severity",
    "TextEdit",
    "apply_edits",
    "apply_fixes",
    "fix_all",
    "lint",
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
_EDGE_END = re.compile(f"[\\s\ufeff]*{SECTION_SIGN}[{SECTION_SIGN}\\s\ufeff]*$")


class LintCache:
    """Memo between lints of successive versions of one file (an editor buffer).

    Safety scans are kept per entry text and containment is maintained incrementally, so a
    keystroke in a big file re-scans and re-matches only the entries it changed.
    """

    MAX_SCANS = 50_000

    def __init__(self) -> None:
        self.scans: dict[str, tuple[SafetyIssue, ...]] = {}
        self.secrets: dict[str, tuple[tuple[int, int], ...]] = {}
        self.containment = ContainmentIndex()

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


def lint(
    doc: MemoryDocument, *, limit: int, near_share: float = 0.9, cache: LintCache | None = None
) -> list[Finding]:
    """All findings of a document, sorted by position (`cache`: reuse work across versions)."""
    cache = cache if cache is not None else LintCache()
    findings: list[Finding] = []
    findings += _budget(doc, limit, near_share)
    findings += _duplicates(doc)
    findings += _delimiters(doc)
    findings += _empty_entries(doc)
    findings += _unsafe(doc, cache)
    findings += _secrets(doc, cache)
    findings += _ambiguous(doc, cache.containment)
    if not any(f.code in (MALFORMED_DELIMITER, EMPTY_ENTRY) and f.fixes for f in findings):
        findings += _non_canonical(doc)
    findings.sort(key=lambda f: (f.start, f.end, f.severity))
    return findings


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


# --- budget --------------------------------------------------------------------------------------


def _budget(doc: MemoryDocument, limit: int, near_share: float) -> list[Finding]:
    # The store keeps one copy of a repeated entry, so usage counts first copies only: the figure
    # matches the Memory view, the status bar and the store's own refusals.
    seen: set[str] = set()
    entries = [e for e in doc.entries if not (e.text in seen or seen.add(e.text))]
    if not entries:
        return []
    step = len(ENTRY_DELIMITER)
    # usage after each kept entry, as the store counts it (len of the "\n§\n"-join so far)
    through = list(accumulate(len(e.text) + step for e in entries))
    used = through[-1] - step
    share = used / limit if limit > 0 else float("inf")
    if used > limit:
        first = entries[min(bisect_right(through, limit + step), len(entries) - 1)]
        percent = f" ({share:.0%})" if limit > 0 else ""
        msg = (
            f"Memory is over budget: {used}/{limit} chars{percent}. Entries from "
            f"#{first.index + 1} on do not fit; the store refuses additions until entries are "
            "removed or consolidated."
        )
        return [Finding(OVER_BUDGET, Severity.ERROR, msg, first.start, entries[-1].end)]
    near_share = min(max(near_share, 0.0), 1.0)
    if near_share < 1.0 and used > near_share * limit:
        # the entry that tipped it over
        first = entries[min(bisect_right(through, near_share * limit + step), len(entries) - 1)]
        msg = (
            f"Memory is near its budget: {used}/{limit} chars ({share:.0%}, warning past "
            f"{near_share:.0%}). Consolidate entries before the agent's next additions are refused."
        )
        return [Finding(NEAR_BUDGET, Severity.WARNING, msg, first.start, first.end)]
    return []


# --- duplicates ----------------------------------------------------------------------------------


def _duplicates(doc: MemoryDocument) -> list[Finding]:
    first_of: dict[str, Entry] = {}
    later: list[tuple[Entry, Entry]] = []
    for entry in doc.entries:
        original = first_of.setdefault(entry.text, entry)
        if original is not entry:
            later.append((entry, original))
    if not later:
        return []
    removed = {entry.index for entry, _ in later}
    findings = []
    for entry, original in later:
        line = doc.pos_at(original.start).line + 1
        msg = (
            f"Duplicate of entry #{original.index + 1} (line {line}); the store keeps "
            "only the first copy, so this one is not in the prompt and goes at the next write."
        )
        fix = Fix("Remove this duplicate entry", (_removal(doc, entry, removed),))
        related = (Related(original.start, original.end, "first copy"),)
        findings.append(
            Finding(DUPLICATE_ENTRY, Severity.WARNING, msg, entry.start, entry.end, (fix,), related)
        )
    return findings


def _removal(doc: MemoryDocument, entry: Entry, removed: set[int]) -> TextEdit:
    """Delete an entry and one delimiter; composes with removing the other entries in `removed`.

    An entry followed by a kept entry takes the delimiter after it; one in the trailing run of
    removed entries takes the delimiter before it, so a union of removals never leaves a dangling
    delimiter.
    """
    entries = doc.entries
    i = entry.index
    trailing = all(j in removed for j in range(i + 1, len(entries)))
    if i > 0 and trailing:
        return TextEdit(entries[i - 1].end, entry.end, "")
    start, end = doc.removal_span(entry)
    return TextEdit(start, end, "")


# --- delimiters ----------------------------------------------------------------------------------


def _delimiters(doc: MemoryDocument) -> list[Finding]:
    findings = []
    for d in doc.delimiters:
        if d.kind is DelimiterKind.CANONICAL:
            continue
        what = "repeats `§`" if d.kind is DelimiterKind.REPEATED else "has blanks around `§`"
        msg = f"Delimiter line {what}; a delimiter is a line holding only `§`."
        fix = Fix("Normalize the delimiter to `§`", (TextEdit(d.start, d.end, SECTION_SIGN),))
        findings.append(Finding(MALFORMED_DELIMITER, Severity.WARNING, msg, d.start, d.end, (fix,)))
    text = doc.text
    for s in doc.stray_delimiters:
        if not s.at_edge:
            col = doc.line_starts[s.line] + s.column
            msg = (
                "`§` inside text is not an entry delimiter (only a line holding just `§` splits "
                "entries); this is fine if you meant the section sign."
            )
            findings.append(Finding(MALFORMED_DELIMITER, Severity.INFORMATION, msg, col, col + 1))
            continue
        nl = _line_break_near(doc, s.line)
        line_text = text[s.start : s.end]
        edits = []
        head = _EDGE_START.match(line_text)
        if head:
            edits.append(TextEdit(s.start, s.start + head.end(), SECTION_SIGN + nl))
        tail = _EDGE_END.search(line_text)
        if tail and (not head or tail.start() >= head.end()):
            edits.append(TextEdit(s.start + tail.start(), s.end, nl + SECTION_SIGN))
        where = "starts" if head else "ends"
        msg = (
            f"This line {where} with `§` but holds other text, so it does not split entries; "
            "a delimiter must be on a line of its own (a lost line break?)."
        )
        fixes = (Fix("Put `§` on its own line", tuple(edits)),) if edits else ()
        findings.append(Finding(MALFORMED_DELIMITER, Severity.WARNING, msg, s.start, s.end, fixes))
    return findings


def _line_break_near(doc: MemoryDocument, line: int) -> str:
    """The line break the document uses at `line` (after it, else before it), `\\n` by default."""
    text = doc.text
    end = doc.line_end(line)
    if end < len(text):
        return "\r\n" if text.startswith("\r\n", end) else text[end]
    if line > 0:
        prev_end = doc.line_end(line - 1)
        return "\r\n" if text.startswith("\r\n", prev_end) else text[prev_end]
    return "\n"


def _empty_entries(doc: MemoryDocument) -> list[Finding]:
    findings = []
    for empty in doc.empty_entries:
        d = empty.delimiter
        start, end = doc.line_span_with_break(d.line)
        if not doc.entries:
            msg = "Only delimiters, no entries: the file holds nothing."
        else:
            msg = "Empty entry: a delimiter with nothing before or after it."
        fix = Fix("Remove the extra delimiter", (TextEdit(start, end, ""),))
        findings.append(Finding(EMPTY_ENTRY, Severity.WARNING, msg, d.start, d.end, (fix,)))
    return findings


# --- safety --------------------------------------------------------------------------------------


def _sources(doc: MemoryDocument) -> Iterator[tuple[Entry, str]]:
    """Each entry with its source text (offsets of a match + entry.start = offsets in the file).

    Without a CR in the file the normalised text is the source text itself; reusing it spares a
    slice per entry, and its hash is computed once per version.
    """
    text = doc.text
    plain = "\r" not in text
    for entry in doc.entries:
        if plain and len(entry.text) == entry.end - entry.start:
            yield entry, entry.text
        else:
            yield entry, text[entry.start : entry.end]


def _unsafe(doc: MemoryDocument, cache: LintCache) -> list[Finding]:
    """The store's scanner, run per entry (as the store does) on the entry's source text.

    Outside entries there are only blanks, line breaks and delimiter lines, none of which the
    scanner flags; the byte-order mark of the file is never part of an entry.
    """
    findings = []
    for entry, raw in _sources(doc):
        for issue in cache.scan(raw):
            start, end = entry.start + issue.start, entry.start + issue.end
            fixes: tuple[Fix, ...] = ()
            if issue.kind == "invisible":
                one = end - start == 1
                title = "Remove the invisible character" if one else "Remove the hidden text"
                fixes = (Fix(title, (TextEdit(start, end, ""),)),)
                msg = (
                    f"Unsafe content: {issue.message}; the store blocks this entry from the prompt."
                )
            else:
                msg = (
                    f"Unsafe content ({issue.kind}): {issue.message}; the store blocks this entry "
                    "from the prompt."
                )
            findings.append(Finding(UNSAFE_CONTENT, Severity.ERROR, msg, start, end, fixes))
    return findings


def _secrets(doc: MemoryDocument, cache: LintCache) -> list[Finding]:
    findings = []
    msg = (
        "This looks like a secret (API key, token or private key). Memory goes into every prompt "
        "and is often committed: keep secrets in the environment or a vault, and rotate this one."
    )
    for entry, raw in _sources(doc):
        for start, end in cache.find_secrets(raw):
            findings.append(
                Finding(
                    POSSIBLE_SECRET, Severity.WARNING, msg, entry.start + start, entry.start + end
                )
            )
    return findings


# --- containment ---------------------------------------------------------------------------------


def contained_in(texts: list[str]) -> dict[int, int]:
    """For distinct `texts`: index of each text found inside another -> index of its first container.

    Linear: one Aho-Corasick automaton over all texts, one pass over their join. Entry texts cannot
    hold a line of only `§`, so no match can straddle the `\\n§\\n` that joins them.
    """
    position = {t: i for i, t in enumerate(texts)}
    found = ContainmentIndex().update(texts)
    return {position[t]: min(position[o] for o in outers) for t, outers in found.items()}


class ContainmentIndex:
    """Which distinct entry texts lie inside another, kept up to date across versions.

    A full rebuild is one Aho-Corasick automaton over all texts and one pass over their join
    (linear). Between rebuilds, an update only looks at the texts that appeared or disappeared:
    the cached automaton finds the known texts inside a new one, one `str.find` per container
    finds the texts a new one lies in, and texts added since the build are checked directly.
    """

    REBUILD_AFTER = 64

    def __init__(self) -> None:
        self.texts: set[str] = set()
        self.automaton: Any = None
        self.pending: list[str] = []  # current texts that are not patterns of the automaton
        self.inside: dict[str, set[str]] = {}  # text -> the texts it contains
        self.containers: dict[str, set[str]] = {}  # text -> the texts containing it

    def update(self, texts: list[str]) -> dict[str, set[str]]:
        """Distinct `texts` of the new version -> {contained text: its container texts}."""
        new = set(texts)
        removed = self.texts - new
        added = [t for t in texts if t not in self.texts]
        if (
            self.automaton is None
            or len(removed) + len(added) > max(self.REBUILD_AFTER, len(new) // 8)
            or len(self.pending) + len(added) > self.REBUILD_AFTER
        ):
            self._rebuild(texts)
        else:
            for gone in removed:
                for inner in self.inside.pop(gone, ()):
                    self.containers[inner].discard(gone)
                for outer in self.containers.pop(gone, ()):
                    self.inside[outer].discard(gone)
            self.texts = new
            self.pending = [t for t in self.pending if t in new]
            if added:
                self._add(texts, added)
        return {t: outer for t, outer in self.containers.items() if outer}

    def _pair(self, inner: str, outer: str) -> None:
        self.containers.setdefault(inner, set()).add(outer)
        self.inside.setdefault(outer, set()).add(inner)

    def _rebuild(self, texts: list[str]) -> None:
        self.texts = set(texts)
        self.inside, self.containers, self.pending = {}, {}, []
        automaton = ahocorasick.Automaton()
        for t in texts:
            automaton.add_word(t, t)
        self.automaton = automaton
        if texts:
            automaton.make_automaton()
        if len(texts) < 2:
            return
        starts = _starts(texts)
        for end, pattern in automaton.iter(ENTRY_DELIMITER.join(texts)):
            start = end - len(pattern) + 1
            j = bisect_right(starts, start) - 1
            outer = texts[j]
            if outer != pattern and end < starts[j] + len(outer):
                self._pair(pattern, outer)

    def _add(self, texts: list[str], added: list[str]) -> None:
        hay = ENTRY_DELIMITER.join(texts)
        starts = _starts(texts)
        fresh = set(added)
        for a in added:
            pos = hay.find(a)
            while pos != -1:  # the texts `a` lies in: one find per container
                j = bisect_right(starts, pos) - 1
                outer_end = starts[j] + len(texts[j])
                if texts[j] != a and pos + len(a) <= outer_end:
                    self._pair(a, texts[j])
                pos = hay.find(a, outer_end)
            if self.automaton.kind == ahocorasick.AHOCORASICK:
                for _, pattern in self.automaton.iter(a):  # known texts inside `a`
                    if pattern != a and pattern in self.texts and pattern not in fresh:
                        self._pair(pattern, a)
            for p in self.pending:  # texts added since the automaton was built
                if p != a and p in a:
                    self._pair(p, a)
        self.pending.extend(added)


def _starts(texts: list[str]) -> list[int]:
    """Offsets of each text in `ENTRY_DELIMITER.join(texts)`."""
    step = len(ENTRY_DELIMITER)
    return [0, *accumulate(len(t) + step for t in texts[:-1])] if texts else []


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


def _ambiguous(doc: MemoryDocument, index: ContainmentIndex) -> list[Finding]:
    firsts: dict[str, Entry] = {}
    for entry in doc.entries:
        firsts.setdefault(entry.text, entry)
    findings = []
    for inner, outers in index.update(list(firsts)).items():
        entry = firsts[inner]
        outer = min((firsts[o] for o in outers), key=lambda e: e.index)
        line = doc.pos_at(outer.start).line + 1
        msg = (
            f"Entry is contained in entry #{outer.index + 1} (line {line}): only its exact full "
            "text addresses it in replace/remove; a shorter old_text also matches the other entry."
        )
        related = (Related(outer.start, outer.end, "the entry that contains it"),)
        findings.append(
            Finding(AMBIGUOUS_ENTRY, Severity.WARNING, msg, entry.start, entry.end, (), related)
        )
    return findings


# --- canonical form ------------------------------------------------------------------------------


def _non_canonical(doc: MemoryDocument) -> list[Finding]:
    text = doc.text
    canonical = serialize(doc.entry_texts)
    if text in (canonical, canonical.rstrip("\n")) or not doc.entries:
        return []
    at = common_prefix(text, canonical)
    line = doc.pos_at(at).line
    start, end = doc.line_starts[line], doc.line_end(line)
    msg = (
        "Not in the store's canonical form (entries stripped, `\\n§\\n` between them, LF line "
        "ends, no BOM); the store rewrites it so on its next write. Format Document does it now."
    )
    suffix = common_suffix(text[at:], canonical[at:])
    edit = TextEdit(at, len(text) - suffix, canonical[at : len(canonical) - suffix])
    fix = Fix("Rewrite the file in canonical form", (edit,), fix_all=False)
    return [Finding(NON_CANONICAL, Severity.HINT, msg, start, max(end, start), (fix,))]
