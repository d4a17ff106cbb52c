"""The vocabulary of workspace changes: what a watcher reports and what a batch changed.

Kept apart from the index so a server can speak it (queue events, read a change) without loading
the walker until the index is built in the background.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["EventKind", "FileEvent", "IndexChange"]

EventKind = Literal["created", "changed", "deleted", "renamed"]


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One change of the folder: `path` absolute or relative to it; for `renamed`, `old` is the
    path it had (the editor's `workspace/didRenameFiles`, or a watcher that knows)."""

    kind: EventKind
    path: str
    old: str | None = None


@dataclass(frozen=True, slots=True)
class IndexChange:
    """What a batch of events changed (`any`: re-lint; `manifests`/`context`: which parts)."""

    files: bool = False
    manifests: bool = False
    context: bool = False
    rebuilt: bool = False

    @property
    def any(self) -> bool:
        return self.files or self.manifests or self.context or self.rebuilt
