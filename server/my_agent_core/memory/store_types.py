"""The values `MemoryStore` takes and gives: an edit's operations, a preview, a file's state, a write.

Kept apart from the store so the tool, the language server and the importer can name them without
loading the store's machinery, and so each reads as plain data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from my_agent_core.memory.journal import JournalRecord

__all__ = ["MemoryPreview", "Operation", "StoreState", "WriteEvent", "WriteListener"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One edit of a batch: `action` is add, replace or remove."""

    action: str
    content: str | None = None
    old_text: str | None = None
    new_content: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryPreview:
    """What an edit would do, computed under the lock without writing (`MemoryStore.preview`):
    the file's text now (`before`, "" when there is no file) and the text the store would write
    (`after`; equal to `before` when the edit changes nothing). Apply it with
    `apply(..., expect=preview.before)` so it lands only on the file the user saw."""

    target: str
    path: Path
    before: str
    after: str
    changed: bool
    existed: bool
    summary: str


@dataclass(frozen=True, slots=True)
class StoreState:
    """One store as it is on disk (what panels and `memory/state` show). `journal_error` says why
    changes are not being recorded in the history (so cannot be undone), or None."""

    target: str
    path: Path
    used: int
    limit: int
    entries: list[str]
    available: bool
    error: str | None = None
    journal_error: str | None = None


@dataclass(frozen=True, slots=True)
class WriteEvent:
    """A write the store made: the file's text before (None: there was no file) and after it, and the
    journal record (who, what). Editors merge it into open buffers without reading the file again."""

    target: str
    before: str | None
    after: str
    record: JournalRecord


WriteListener = Callable[[WriteEvent], None]
