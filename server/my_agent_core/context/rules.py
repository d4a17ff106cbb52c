"""The lint rules that check memory against the workspace: stale references, repeats of the
context files, and words that go stale by nature.

They produce the linter's own `Finding`s (each with its fixes), in a pass of their own beside
`memory/lint.py`'s, so callers combine the two lists: `lint(doc, ...) + rules.lint(doc)`. Work is
cached per entry text: what an entry claims (paths, commands, stale words) is extracted once; what
the workspace says about those claims is kept until the index changes (`generation`). A keystroke
in one entry re-checks that entry only, and the folder is never walked here.

- `stale-reference` (warning): a path the entry names does not exist in the folder, or an
  `npm run X` / `make X` / `just X` target the root's package.json / Makefile / justfile does not
  define (a task file we cannot read completely is trusted: no finding). Fixes: the path the file
  was renamed to, when the index saw the rename; remove the entry.
- `in-context-file` (warning): the entry repeats a line or paragraph of AGENTS.md, CLAUDE.md,
  GEMINI.md or .github/copilot-instructions.md, which are in every prompt already. Fix: remove it.
- `volatile-content` (hint): "today", "currently", "right now", 目前, a bare time of day ...
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from my_agent_core.context.volatile import VolatileSpan, volatile_spans
from my_agent_core.memory.document import MemoryDocument, Piece
from my_agent_core.memory.lint import DocumentLayout, Finding, Fix, PieceLayout, Severity, TextEdit

if TYPE_CHECKING:  # the walker is loaded only by whoever builds an index
    from my_agent_core.context.index import WorkspaceIndex
    from my_agent_core.context.references import EntryRefs, PathRef
    from my_agent_core.context.similarity import ContextCorpus, ContextMatch

__all__ = [
    "IN_CONTEXT_FILE",
    "MAX_CHARS",
    "STALE_REFERENCE",
    "VOLATILE_CONTENT",
    "WORKSPACE_CODES",
    "WorkspaceRules",
]

logger = logging.getLogger(__name__)

STALE_REFERENCE = "stale-reference"
IN_CONTEXT_FILE = "in-context-file"
VOLATILE_CONTENT = "volatile-content"

#: The codes of these rules, with a one-line description (beside `memory.lint.CODES`).
WORKSPACE_CODES: dict[str, str] = {
    STALE_REFERENCE: "a path or npm/make/just target the workspace does not have (warning)",
    IN_CONTEXT_FILE: "repeats what AGENTS.md or another context file already says (warning)",
    VOLATILE_CONTENT: "words such as 'today' or 'currently' that go stale in later prompts (hint)",
}

#: A file longer than this (15x the default budget) is being repaired, not read by a model whole:
#: the workspace rules wait until it is back near its budget, so a keystroke stays cheap.
MAX_CHARS = 32 * 1024
_MAX_CACHED = 10_000
_SHOWN_NAMES = 12
_TOOL_FILES = {"npm": "package.json", "make": "Makefile", "just": "justfile"}
_COMMAND = {"npm": "npm run {}", "make": "make {}", "just": "just {}"}


@dataclass(frozen=True, slots=True)
class _Claim:
    """A finding inside one entry, in entry-relative offsets (shifted when reported)."""

    code: str
    severity: Severity
    message: str
    start: int
    end: int
    replacement: str | None = None  # the renamed path, for the preferred fix


class WorkspaceRules:
    """The workspace rules of one folder (`index` None: a memory folder outside any workspace,
    where only `volatile-content` applies)."""

    def __init__(self, index: WorkspaceIndex | None) -> None:
        self.index = index
        self._refs: dict[str, EntryRefs] = {}
        self._volatile: dict[str, tuple[VolatileSpan, ...]] = {}
        self._checked: dict[str, tuple[int, tuple[_Claim, ...]]] = {}
        self._corpus: ContextCorpus | None = None
        self._corpus_of: object = None

    def lint(self, doc: MemoryDocument) -> list[Finding]:
        """The findings of these rules on a parsed memory file, sorted by position (none for a
        file over `MAX_CHARS`)."""
        return self.lint_layout(DocumentLayout(doc))

    def lint_layout(self, layout: PieceLayout) -> list[Finding]:
        """The same on a file cut into pieces (the language server's live text: no re-parse)."""
        findings, missing = self.known_findings(layout)
        if not missing:
            return findings
        self.check_entries(missing)
        return self.known_findings(layout)[0]

    def known_findings(
        self, layout: PieceLayout, *, stale_ok: bool = False
    ) -> tuple[list[Finding], list[str]]:
        """The findings of the entries already checked against the current workspace, and the
        texts of the entries that are not (`check_entries` checks them). `stale_ok`: an entry last
        checked against an older state of the workspace shows that check meanwhile (no flicker
        while the language server re-checks it off its request loop)."""
        if len(layout) > MAX_CHARS:
            return [], []
        generation = self.index.generation if self.index is not None else 0
        findings: list[Finding] = []
        missing: list[str] = []
        pieces = layout.chunks
        for piece in pieces:
            entry = piece.entry
            if entry is None:
                continue
            local_start = piece.local(entry.start)
            source = piece.text[local_start : piece.local(entry.end)]
            cached = self._checked.get(source)
            if cached is None or cached[0] != generation:
                missing.append(source)
                if cached is None or not stale_ok:
                    continue
            if cached[1]:
                start = layout.chunk_start(piece.index) + local_start
                spot = _Spot(layout, pieces, piece, start, start + len(source))
                findings.extend(_finding(spot, claim) for claim in cached[1])
        findings.sort(key=lambda f: (f.start, f.end, f.severity))
        return findings, missing

    def check_entries(self, sources: Iterable[str]) -> None:
        """Check these entry texts against the workspace as it is now (the slow part: paths asked
        of the index and the disk, commands of the task files, the context files' corpus); the
        language server runs it on a worker thread. An entry whose check fails is left without
        findings rather than retried for ever."""
        generation = self.index.generation if self.index is not None else 0
        for source in sources:
            cached = self._checked.get(source)
            if cached is not None and cached[0] == generation:
                continue
            try:
                claims = tuple(self._claims(source))
            except Exception:
                logger.exception("workspace rules failed on an entry")
                claims = ()
            if len(self._checked) >= _MAX_CACHED:
                self._checked.clear()
            self._checked[source] = (generation, claims)

    # ------------------------------------------------------------------ per entry

    def _claims(self, source: str) -> list[_Claim]:
        claims: list[_Claim] = []
        if self.index is not None:
            refs = self._refs_of(source)
            claims += self._stale_paths(refs)
            claims += self._stale_commands(refs)
            match = self._context().find(source)
            if match is not None:
                claims.append(_repeat(match, len(source)))
        claims += [_volatile(span) for span in self._volatile_of(source)]
        return claims

    def _refs_of(self, source: str) -> EntryRefs:
        refs = self._refs.get(source)
        if refs is None:
            if len(self._refs) >= _MAX_CACHED:
                self._refs.clear()
            # Here: the reference and similarity modules load with an index (an editor's first
            # diagnostics need only `volatile-content`: start-up time).
            from my_agent_core.context.references import extract

            refs = self._refs[source] = extract(source)
        return refs

    def _volatile_of(self, source: str) -> tuple[VolatileSpan, ...]:
        spans = self._volatile.get(source)
        if spans is None:
            if len(self._volatile) >= _MAX_CACHED:
                self._volatile.clear()
            spans = self._volatile[source] = tuple(volatile_spans(source))
        return spans

    def _context(self) -> ContextCorpus:
        """The corpus of the context files, rebuilt only when the index re-read them."""
        assert self.index is not None
        texts = self.index.context_texts
        if self._corpus is None or self._corpus_of is not texts:
            from my_agent_core.context.similarity import ContextCorpus  # here: see `_refs_of`

            self._corpus = ContextCorpus(texts)
            self._corpus_of = texts
        return self._corpus

    def _stale_paths(self, refs: EntryRefs) -> list[_Claim]:
        index = self.index
        assert index is not None
        claims: list[_Claim] = []
        for ref in refs.paths:
            claim = self._check_path(index, ref)
            if claim is not None:
                claims.append(claim)
        for ref in refs.candidates:  # `first/...`: a claim only when `first` is the folder's
            if index.has_top_level(ref.path.split("/", 1)[0]):
                claim = self._check_path(index, ref)
                if claim is not None:
                    claims.append(claim)
        return claims

    def _check_path(self, index: WorkspaceIndex, ref: PathRef) -> _Claim | None:
        if ref.bare:
            if (
                index.has_basename(ref.path)
                or index.exists(ref.path)
                or not index.complete
                or index.ignored(ref.path)  # `debug.log` under `*.log`: absent by design
            ):
                return None
            renamed = index.renamed_name(ref.path)
            where = f": it was renamed to `{renamed}`" if renamed else ""
            message = (
                f"No file named `{ref.path}` in this workspace (files .gitignore excludes aside)"
                f"{where}. Memory goes into every future prompt, so a stale name misleads each "
                "session; " + ("use the new name." if renamed else "update the entry or remove it.")
            )
            return _Claim(STALE_REFERENCE, Severity.WARNING, message, ref.start, ref.end, renamed)
        if index.exists(ref.path) or index.ends_a_path(ref.path) or index.ignored(ref.path):
            return None  # there; or a path below a package (`agent/core.py`); or a build output
        new = index.renamed_to(ref.path)
        where = f": it was renamed to `{new}`" if new else ""
        message = (
            f"`{ref.path}` does not exist in this workspace{where}. Memory goes into every future "
            "prompt, so a stale path misleads each session; "
            + ("use the new path." if new else "update the entry or remove it.")
        )
        return _Claim(STALE_REFERENCE, Severity.WARNING, message, ref.start, ref.end, new)

    def _stale_commands(self, refs: EntryRefs) -> list[_Claim]:
        index = self.index
        assert index is not None
        claims: list[_Claim] = []
        for ref in refs.commands:
            tasks = index.tasks(ref.tool)
            if tasks is None or tasks.knows(ref.name) is not False:
                continue
            names = sorted(tasks.names)
            listed = ", ".join(names[:_SHOWN_NAMES]) + (
                ", ..." if len(names) > _SHOWN_NAMES else ""
            )
            kind = {"npm": "script", "make": "target", "just": "recipe"}[ref.tool]
            has = f" (it has: {listed})" if names else f" (it defines no {kind}s)"
            message = (
                f"`{_COMMAND[ref.tool].format(ref.name)}`: {tasks.source} defines no {kind} "
                f"`{ref.name}`{has}. A stale command in memory sends every future session down "
                "a dead end; update the entry or remove it."
            )
            claims.append(_Claim(STALE_REFERENCE, Severity.WARNING, message, ref.start, ref.end))
        return claims


def _repeat(match: ContextMatch, length: int) -> _Claim:
    said = "says this" if match.how == "contained" else "says nearly the same"
    message = (
        f"{match.name} already {said} (line {match.line}), and context files go into every "
        "prompt, so this entry only spends memory's budget twice. Remove it (or keep the fact "
        f"in {match.name} alone)."
    )
    return _Claim(IN_CONTEXT_FILE, Severity.WARNING, message, 0, length)


def _volatile(span: VolatileSpan) -> _Claim:
    what = "a time of day" if span.kind == "time" else f'"{span.word}"'
    message = (
        f"{what[0].upper()}{what[1:]} goes stale: memory is in every future prompt, where it will "
        "name a moment long past, so what held then reads as true later. Keep the lasting fact, "
        "or write a date (as of 2026-12)."
    )
    return _Claim(VOLATILE_CONTENT, Severity.HINT, message, span.start, span.end)


@dataclass(frozen=True, slots=True)
class _Spot:
    """Where an entry is in the file (absolute offsets) and how to reach its neighbours."""

    layout: PieceLayout
    pieces: list[Piece]
    piece: Piece
    start: int
    end: int

    def _entry_span(self, piece: Piece) -> tuple[int, int]:
        entry = piece.entry
        assert entry is not None
        base = self.layout.chunk_start(piece.index)
        return base + piece.local(entry.start), base + piece.local(entry.end)

    def removal(self) -> TextEdit:
        """Delete the entry and one delimiter next to it (as `MemoryDocument.removal_span`)."""
        pieces = self.pieces
        k = self.piece.index + 1
        while k < len(pieces) and pieces[k].entry is None:
            k += 1
        if k < len(pieces):  # the entry, its trailing blanks and the delimiter after it
            return TextEdit(self.start, self._entry_span(pieces[k])[0], "")
        k = self.piece.index - 1
        while k >= 0 and pieces[k].entry is None:
            k -= 1
        if k >= 0:  # the last entry: from the end of the previous one
            return TextEdit(self._entry_span(pieces[k])[1], self.end, "")
        return TextEdit(self.start, self.end, "")


def _finding(spot: _Spot, claim: _Claim) -> Finding:
    start, end = spot.start + claim.start, spot.start + claim.end
    fixes: list[Fix] = []
    if claim.replacement is not None:
        fixes.append(
            Fix(
                f"Replace with `{claim.replacement}`",
                (TextEdit(start, end, claim.replacement),),
                fix_all=False,
            )
        )
    if claim.code in (STALE_REFERENCE, IN_CONTEXT_FILE):
        fixes.append(Fix("Remove this entry", (spot.removal(),), fix_all=False))
    return Finding(claim.code, claim.severity, claim.message, start, end, tuple(fixes))
