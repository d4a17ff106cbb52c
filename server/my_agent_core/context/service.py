"""The workspace checks of one folder as a long-running server keeps them: the index built once in
the background, file events applied as they come, and a callback when memory must be re-linted.

The language server must not wait for a walk of 20,000 files before it answers `initialize` or
shows the first diagnostics, and must not re-walk per keystroke: so the index is built on a worker
thread (until it is ready only `volatile-content` applies), events that arrive meanwhile are kept
and applied after the build, and `on_change` is called whenever the answers may have changed (the
build finished, a file appeared or vanished, a task file or a context file was edited). Editor
agnostic: the language server converts `workspace/didChangeWatchedFiles` into `FileEvent`s.

Checking the entries themselves (paths asked of the index and the disk, commands of the task files,
the context files) also runs on a worker: `lint_layout`, called on the server's request loop,
returns at once what is known and queues what is not; `on_change` says when the rest is in. So a
cloned repository that makes the checks slow never keeps the server from answering requests.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from my_agent_core.context.events import FileEvent, IndexChange
from my_agent_core.context.rules import WorkspaceRules
from my_agent_core.memory.lint import Finding, PieceLayout

if TYPE_CHECKING:
    from my_agent_core.context.index import WorkspaceIndex

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
        start: bool = True,
        ripgrep: str | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.on_change = on_change
        self._ripgrep = ripgrep
        self._lock = threading.Lock()
        self._pending: list[FileEvent] = []
        self._queue: list[list[FileEvent]] = []
        self._worker: threading.Thread | None = None
        self._index: WorkspaceIndex | None = None
        self._closed = False
        self._claims_queue: list[tuple[WorkspaceRules, list[str]]] = []
        self._claims_wanted: set[str] = set()
        self._claims_worker: threading.Thread | None = None
        #: Rules usable at once: `volatile-content` only until the index is ready.
        self.rules = WorkspaceRules(None)
        self.ready = threading.Event()
        self._started = False
        if not background:
            self._started = True
            self._build()
        elif start:
            self.start()

    def start(self) -> None:
        """Build the index on a worker thread (once). `start=False` at construction leaves it to
        the caller: the editor starts it once the first diagnostics are out, so the walk does
        not compete with them."""
        with self._lock:
            if self._started or self._closed:
                return
            self._started = True
        threading.Thread(target=self._build, name="workspace-index", daemon=True).start()

    @property
    def index(self) -> WorkspaceIndex | None:
        return self._index

    def _build(self) -> None:
        try:
            # Imported here, on the worker: the walker's imports stay off the server's start-up.
            from my_agent_core.context.index import WorkspaceIndex

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
        """Apply events now, on the calling thread; calls `on_change` when a re-lint may show
        something else. Before the index is ready they are kept for it."""
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

    def submit(self, events: Iterable[FileEvent]) -> None:
        """Apply events on this folder's worker thread, in order (a server's event loop must not
        wait for a rebuild after a branch switch); `on_change` says when they are in."""
        batch = list(events)
        if not batch:
            return
        with self._lock:
            if self._closed:
                return
            self._queue.append(batch)
            if self._worker is not None:
                return
            self._worker = threading.Thread(
                target=self._drain, name="workspace-events", daemon=True
            )
            self._worker.start()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self._closed:
                    self._worker = None
                    return
                batch = self._queue.pop(0)
            try:
                self.file_events(batch)
            except Exception:
                logger.exception("workspace events of %s could not be applied", self.folder)

    def lint_layout(self, layout: PieceLayout) -> list[Finding]:
        """The current rules on a file cut into pieces (the editor's live text), without waiting:
        entries not yet checked against the workspace (or checked against an older state of it,
        whose findings show meanwhile) are checked on a worker, and `on_change` fires when done."""
        rules = self.rules
        if rules.index is None:  # only the text rules: nothing slow to wait for
            return rules.lint_layout(layout)
        findings, missing = rules.known_findings(layout, stale_ok=True)
        if missing:
            self._check_later(rules, missing)
        return findings

    def _check_later(self, rules: WorkspaceRules, sources: list[str]) -> None:
        with self._lock:
            if self._closed:
                return
            fresh = [s for s in dict.fromkeys(sources) if s not in self._claims_wanted]
            if not fresh:
                return
            self._claims_wanted.update(fresh)
            self._claims_queue.append((rules, fresh))
            if self._claims_worker is not None:
                return
            self._claims_worker = threading.Thread(
                target=self._check_queued, name="workspace-rules", daemon=True
            )
            self._claims_worker.start()

    def _check_queued(self) -> None:
        while True:
            with self._lock:
                if not self._claims_queue or self._closed:
                    self._claims_worker = None
                    return
                rules, sources = self._claims_queue.pop(0)
            try:
                rules.check_entries(sources)
            except Exception:
                logger.exception("workspace rules of %s failed", self.folder)
            finally:
                with self._lock:
                    self._claims_wanted.difference_update(sources)
            self._notify()

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
