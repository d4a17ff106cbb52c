"""What the editor (or the terminal, or a test) plugs into the workspace tools.

The tools are editor-agnostic: they read unsaved text through a `BufferReader`, apply approved
changes through an `EditApplier` and stop when a `CancelToken` is set. The language server implements
these with its open documents, `workspace/applyEdit` and the Stop button; the terminal with nothing,
an atomic file write and Ctrl-C. See docs/coding-tools.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from my_agent_core.approval import CancelToken

__all__ = [
    "ApplyConflict",
    "ApplyError",
    "BufferReader",
    "CancelToken",
    "EditApplier",
    "FileChange",
    "TextSource",
]

TextSource = Literal["buffer", "disk", "new"]


class BufferReader(Protocol):
    """The unsaved text of a file open in the editor, so reads and diffs see what the user sees."""

    def text_of(self, path: Path) -> str | None:
        """The buffer's full text when `path` (a real, absolute path: symbolic links resolved) is
        open in the editor, else None (the tools then read the file on disk). Must not block."""
        ...

    def open_paths(self) -> list[Path]:
        """The paths of the files open in the editor (saved or not), so a search can look at
        their text too. Must not block."""
        ...


@dataclass(frozen=True)
class FileChange:
    """An approved change to one file, computed against the text the user sees.

    `before` is exactly the text the change was computed against (None for a new file): an applier
    refuses with `ApplyConflict` when the file or buffer no longer holds it. `after` is the complete
    new text with the file's own line ends. `bom`: the file on disk starts with a UTF-8 BOM (a disk
    applier keeps it; editors keep it themselves).
    """

    path: Path
    relpath: str
    before: str | None
    after: str
    source: TextSource
    diff: str
    bom: bool = False

    @property
    def created(self) -> bool:
        return self.before is None


class EditApplier(Protocol):
    """Applies an approved `FileChange`: atomically on disk, or as a `workspace/applyEdit`.

    Raise `ApplyError` (or `ApplyConflict`) to refuse; the message reaches the model, and nothing
    may be half-written.
    """

    def apply(self, change: FileChange) -> None: ...


class ApplyError(RuntimeError):
    """An approved change that could not be applied; nothing was changed."""


class ApplyConflict(ApplyError):
    """The file or buffer changed between the diff and the apply (the user typed, another tool wrote)."""
