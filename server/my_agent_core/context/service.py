"""The workspace checks of one folder as a long-running server keeps them: the index built once in
the background, file events applied as they come, and a callback when memory must be re-linted.

The language server must not wait for a walk of 20,000 files before it answers `initialize` or
shows the first diagnostics, and must not re-walk per keystroke: so the index is built on a worker
thread (until it is ready only `volatile-content` applies), events that arrive meanwhile are kept
and applied after the build, and `on_change` is called whenever the answers may have changed (the
build finished, a file appeared or vanished, a task file or a context file was edited). Editor
agnostic: the language server converts `workspace/didChangeWatchedFiles` into `FileEvent`s.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from my_agent_core.context.index import FileEvent, IndexChange, WorkspaceIndex
from my_agent_core.context.rules import WorkspaceRules

__all__ = ["WorkspaceChecks"]

logger = logging.getLogger(__name__)


class WorkspaceChecks:
    """The index and the rules of one workspace folder, kept current by file events."""

    def __init__(
        self,
        folder: Path | str,
        *,
        on_change: Callable[[], None] | None = None,
        background: bool = True,
        ripgrep: str | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.on_change = on_change
        self._ripgrep = ripgrep
        self._lock = threading.Lock()
        self._pending: list[FileEvent] = []
        self._index: WorkspaceIndex | None = None
        self._closed = False
        #: Rules usable at once: `volatile-content` only until the index is ready.
        self.rules = WorkspaceRules(None)
        self.ready = threading.Event()
        if background:
            threading.Thread(target=self._build, name="workspace-index", daemon=True).start()
        else:
            self._build()

    @property
    def index(self) -> WorkspaceIndex | None:
        return self._index

    def _build(self) -> None:
        try:
            index = WorkspaceIndex.build(self.folder, ripgrep=self._ripgrep)
        except Exception:  # a folder that vanished or cannot be read: keep the volatile rule only
            logger.exception("workspace index of %s could not be built", self.folder)
            self.ready.set()
            return
        with self._lock:
            if self._closed:
                return
            pending, self._pending = self._pending, []
            if pending:
                index.apply(pending)
            self._index = index
            self.rules = WorkspaceRules(index)
        self.ready.set()
        self._notify()

    def file_events(self, events: Iterable[FileEvent]) -> IndexChange:
        """Apply events (any thread); calls `on_change` when a re-lint may show something else."""
        batch = list(events)
        with self._lock:
            index = self._index
            if index is None:
                self._pending.extend(batch)
                return IndexChange()
        change = index.apply(batch)
        if change.any:
            self._notify()
        return change

    def close(self) -> None:
        """Stop caring: a build still running is dropped, no more callbacks."""
        with self._lock:
            self._closed = True
            self.on_change = None

    def _notify(self) -> None:
        callback = self.on_change
        if callback is None:
            return
        try:
            callback()
        except Exception:  # a broken listener must not break the index
            logger.exception("workspace change listener failed")
