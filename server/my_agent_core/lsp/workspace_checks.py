"""The lint rules that check memory against the workspace, in the editor: one index per workspace
folder (built in the background when a memory file of that folder is first opened, once that
file's first diagnostics are out: the walk never delays them), kept current
by the client's file watcher and `workspace/didRenameFiles`, and open memory files re-linted
(pushed, or refreshed for pulling clients) whenever the workspace changed. No polling.

Only folders the editor has open get an index: a memory file opened from anywhere else (a home
folder) would mean walking that whole tree, so it gets the rules that need no workspace. The
rules read files of the folder locally and send nothing anywhere, so untrusted folders are
checked too (as the base lint checks them). The watcher for every file is registered (dynamic
registration) when the first index is started, so a session that never opens a memory file
never gets the workspace's file events; a client without dynamic registration sends none, and
the index then stays as built (no polling). The rules themselves (`my_agent_core.context`) are
imported inside the functions below, when a folder first needs them: start-up time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lsprotocol import types

from .folders import ask_to_watch, can_watch
from .publish import relint_folder
from .uris import uri_to_path

if TYPE_CHECKING:  # the context package is loaded when a memory file is first opened
    from my_agent_core.context.events import FileEvent
    from my_agent_core.context.rules import WorkspaceRules
    from my_agent_core.context.service import WorkspaceChecks
    from my_agent_core.memory.lint import Finding, PieceLayout

    from .server import MyAgentServer

__all__ = ["WATCH_ALL_GLOB", "EditorWorkspaceChecks", "register"]

logger = logging.getLogger(__name__)

#: What the client watches for the index: every file (it already excludes .git, node_modules...).
WATCH_ALL_GLOB = "**/*"
_KINDS: dict[types.FileChangeType, Literal["created", "changed", "deleted"]] = {
    types.FileChangeType.Created: "created",
    types.FileChangeType.Changed: "changed",
    types.FileChangeType.Deleted: "deleted",
}


class _NoWorkspace:
    """The rules of a memory file outside the editor's folders: those that need no workspace."""

    def __init__(self) -> None:
        from my_agent_core.context.rules import WorkspaceRules  # here: start-up time (see the top)

        self.rules: WorkspaceRules = WorkspaceRules(None)

    def lint_layout(self, layout: PieceLayout) -> list[Finding]:
        return self.rules.lint_layout(layout)


class EditorWorkspaceChecks:
    """The workspace checks of the editor's folders (`ls.workspace_checks`)."""

    def __init__(self, ls: MyAgentServer) -> None:
        self.ls = ls
        self._checks: dict[Path, WorkspaceChecks] = {}
        self._lock = threading.Lock()
        self._outside: _NoWorkspace | None = None
        self._watching = False
        self._registering: asyncio.Task[bool] | None = None

    def checks_for(self, folder: Path) -> WorkspaceChecks | _NoWorkspace:
        """The checks of a workspace folder (started on first use), or the workspace-free rules
        for a folder the editor does not have open."""
        key = Path(os.path.realpath(folder))
        with self._lock:
            found = self._checks.get(key)
            if found is not None:
                return found
            if key not in {Path(os.path.realpath(p)) for p in self.ls.memory.folders}:
                if self._outside is None:
                    self._outside = _NoWorkspace()
                return self._outside
            from my_agent_core.context.service import WorkspaceChecks  # here: start-up time

            found = self._checks[key] = WorkspaceChecks(
                key, on_change=lambda: self.ls.post(relint_folder, self.ls, key), start=False
            )
        self.ls.post(found.start)  # after the handler that asked: its diagnostics go out first
        self._watch()
        return found

    def _watch(self) -> None:
        """Ask the client (once) to report every file of the workspace."""
        if self._watching:
            return
        self._watching = True
        if not can_watch(self.ls):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        # kept: a task nobody holds may be collected before it runs
        self._registering = loop.create_task(ask_to_watch(self.ls, "workspace", WATCH_ALL_GLOB))

    def file_events(self, changes: Sequence[types.FileEvent]) -> None:
        """`workspace/didChangeWatchedFiles`: hand each folder its events (applied off the loop)."""
        with self._lock:
            folders = list(self._checks)
        if not folders:
            return  # no memory file opened yet: no index to keep
        from my_agent_core.context.events import FileEvent  # here: start-up time (see the top)

        by_folder: dict[Path, list[FileEvent]] = {}
        for change in changes:
            path = uri_to_path(change.uri)
            kind = _KINDS.get(change.type)
            if path is None or kind is None:
                continue
            folder = _owner(folders, path)
            if folder is not None:
                by_folder.setdefault(folder, []).append(FileEvent(kind, str(path)))
        self._submit(by_folder)

    def renamed(self, files: Sequence[types.FileRename]) -> None:
        """`workspace/didRenameFiles`: renames the editor made (so stale paths get the new one)."""
        with self._lock:
            folders = list(self._checks)
        if not folders:
            return
        from my_agent_core.context.events import FileEvent  # here: start-up time (see the top)

        by_folder: dict[Path, list[FileEvent]] = {}
        for item in files:
            old, new = uri_to_path(item.old_uri), uri_to_path(item.new_uri)
            if old is None or new is None:
                continue
            folder = _owner(folders, new)
            if folder is not None:
                by_folder.setdefault(folder, []).append(FileEvent("renamed", str(new), str(old)))
        self._submit(by_folder)

    def _submit(self, by_folder: dict[Path, list[FileEvent]]) -> None:
        for folder, events in by_folder.items():
            with self._lock:
                checks = self._checks.get(folder)
            if checks is not None:
                checks.submit(events)

    def sync_folders(self) -> None:
        """Forget the checks of folders the editor closed."""
        open_folders = {Path(os.path.realpath(p)) for p in self.ls.memory.folders}
        with self._lock:
            for folder in [f for f in self._checks if f not in open_folders]:
                self._checks.pop(folder).close()


def _owner(folders: list[Path], path: Path) -> Path | None:
    """The deepest indexed folder holding `path` (real paths compared)."""
    real = os.path.realpath(path)
    best: Path | None = None
    for folder in folders:
        root = str(folder)
        if (real == root or real.startswith(root + os.sep)) and (
            best is None or len(root) > len(str(best))
        ):
            best = folder
    return best


def register(ls: MyAgentServer) -> None:
    """`workspace/didRenameFiles` (file operations the editor performs)."""

    @ls.feature(
        types.WORKSPACE_DID_RENAME_FILES,
        types.FileOperationRegistrationOptions(
            filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
        ),
    )
    def on_renamed(ls: MyAgentServer, params: types.RenameFilesParams) -> None:
        ls.workspace_checks.renamed(params.files)
