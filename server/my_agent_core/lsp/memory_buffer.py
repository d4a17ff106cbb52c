"""An open memory file: its pieces, their live lint, and the findings of each version.

The document's text is a `ChunkedText` of `Piece`s (one per entry and its delimiter line); every
edit re-parses the pieces it touched and hands the splice to a `LiveLint`, so the findings of the
new version cost what changed, not the file. Findings, their LSP diagnostics and the full parse
(for the views that need every entry) are computed once per version and shared by every feature
(hover, code actions, lens...), which never re-lint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from lsprotocol import types

from my_agent_core.memory.document import (
    ENTRY_DELIMITER,
    MemoryDocument,
    Piece,
    parse,
    reparse,
    retype_piece,
)
from my_agent_core.memory.lint import (
    DUPLICATE_ENTRY,
    EMPTY_ENTRY,
    Finding,
    LintCache,
    LiveLint,
    PieceLayout,
)

from .chunked_text import ChunkedText, Splice

__all__ = [
    "SOURCE",
    "MemoryBuffer",
    "RopePositions",
    "memory_chunker",
    "memory_text",
    "to_diagnostic",
]

SOURCE = "my-agent"
_UNNECESSARY = {DUPLICATE_ENTRY, EMPTY_ENTRY}


class LayoutRules(Protocol):
    """More rules over the live pieces (the workspace rules of `context/`), beside the base lint."""

    def lint_layout(self, layout: PieceLayout) -> list[Finding]: ...


def memory_chunker(window: str, at_start: bool, at_end: bool) -> list[Piece] | None:
    """Chunks of a memory file: its pieces (the one parser decides where they end)."""
    return reparse(window, at_file_start=at_start, at_file_end=at_end)


def memory_text(text: str) -> ChunkedText[Piece]:
    """A memory file's text as pieces (typing inside an entry skips the parser when it can)."""
    return ChunkedText(text, memory_chunker, retype_piece)


@dataclass(frozen=True, slots=True)
class RopePositions:
    """Offsets <-> LSP positions of a chunked text in one encoding (what features convert with)."""

    rope: ChunkedText[Piece]
    encoding: str

    def position(self, offset: int) -> types.Position:
        return self.rope.position(offset, self.encoding)

    def offset(self, position: types.Position) -> int:
        return self.rope.offset(position, self.encoding)

    def range(self, start: int, end: int) -> types.Range:
        return self.rope.range(start, end, self.encoding)


class MemoryBuffer:
    """One open memory file's lint state; `generation` changes with the text or the settings."""

    def __init__(
        self,
        *,
        uri: str,
        folder: Path,
        target: str,
        rope: ChunkedText[Piece],
        version: int | None,
        limit: int,
        near_share: float,
        encoding: str,
        generation: int,
    ) -> None:
        self.uri = uri
        self.folder = folder
        self.target = target
        self.rope = rope
        self.version = version
        self.limit = limit
        self.near_share = near_share
        self.encoding = encoding
        self.generation = generation
        self.live = LiveLint(rope, LintCache())
        #: The workspace rules of the buffer's folder (set when it is opened; None: none).
        self.workspace: LayoutRules | None = None
        self._doc: MemoryDocument | None = None
        self._findings: list[Finding] | None = None
        self._diagnostics: list[types.Diagnostic] | None = None

    @property
    def text(self) -> str:
        return self.rope.text

    @property
    def doc(self) -> MemoryDocument:
        """The whole file parsed (for views that list every entry); once per version."""
        if self._doc is None:
            self._doc = parse(self.rope.text)
        return self._doc

    @property
    def converter(self) -> RopePositions:
        return RopePositions(self.rope, self.encoding)

    @property
    def used(self) -> int:
        """Budget used as the store counts it (a repeated entry once), without a parse."""
        total = self.live.budget.total()
        return total - len(ENTRY_DELIMITER) if total else 0

    @property
    def findings(self) -> list[Finding]:
        if self._findings is None:
            found = self.live.findings(limit=self.limit, near_share=self.near_share)
            if self.workspace is not None:
                extra = self.workspace.lint_layout(self.rope)
                if extra:
                    found = sorted(found + extra, key=lambda f: (f.start, f.end, f.severity))
            self._findings = found
        return self._findings

    @property
    def diagnostics(self) -> list[types.Diagnostic]:
        """The LSP form of `findings` (same order: a diagnostic's `data.id` is its finding's index)."""
        if self._diagnostics is None:
            self._diagnostics = [
                to_diagnostic(self, n, finding) for n, finding in enumerate(self.findings)
            ]
        return self._diagnostics

    @property
    def result_id(self) -> str:
        """Changes whenever the text or the settings do (for pull-diagnostic `resultId`s)."""
        return f"{self.generation}"

    def spliced(self, splice: Splice[Piece]) -> None:
        """The text changed (from the document's lock, on the event loop): update the lint."""
        self.live.splice(splice.first, splice.removed, splice.added)
        self._invalidate()

    def set_settings(self, limit: int, near_share: float) -> bool:
        """Update the budget settings; True when they changed (findings are then recomputed)."""
        if (limit, near_share) == (self.limit, self.near_share):
            return False
        self.limit, self.near_share = limit, near_share
        self._invalidate()
        return True

    def workspace_changed(self) -> None:
        """The workspace changed (a file appeared, a task file was edited): lint again."""
        self._invalidate()

    def _invalidate(self) -> None:
        self._doc = None
        self._findings = None
        self._diagnostics = None
        self.generation += 1


def to_diagnostic(buf: MemoryBuffer, n: int, finding: Finding) -> types.Diagnostic:
    """The LSP diagnostic of a finding; `data` names the finding so code actions find its fixes."""
    conv = buf.converter
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=buf.uri, range=conv.range(r.start, r.end)),
            message=r.message,
        )
        for r in finding.related
    ]
    return types.Diagnostic(
        range=conv.range(finding.start, finding.end),
        message=finding.message,
        severity=types.DiagnosticSeverity(int(finding.severity)),
        code=finding.code,
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code in _UNNECESSARY else None,
        related_information=related or None,
        data={"id": n, "gen": buf.generation, "fixable": bool(finding.fixes)},
    )
