"""Workspace folders -> memory stores, settings, file watching and change notifications.

Every workspace folder gets its own panel store (journal author `user`); every change to a store, whoever
made it, is announced once as `myAgent/memory/changed`, and a server-side write to a file that is open
and dirty in the editor is merged into the buffer with `workspace/applyEdit` so unsaved edits survive.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from my_agent_core.layout import (
    FILE_NAMES,
    JOURNAL_NAME,
    TARGETS,
    memory_dir_of,
    target_of_file,
)
from my_agent_core.memory import document as memdoc
from my_agent_core.memory.journal import Journal, JournalRecord
from my_agent_core.paths import (
    PathRefused,
    check_memory_folder,
    read_text,
    resolve_inside,
)

from .buffer_merge import apply_buffer_edit, merged_buffer_edit
from .params import invalid, to_plain
from .protocol_types import (
    EntryOriginJson,
    JournalEntryJson,
    MemoryChangedParams,
    MemoryStateResult,
    ProvenanceJson,
    StoreStateJson,
)
from .settings import Settings
from .uris import norm_path, path_to_uri, uri_to_path

if TYPE_CHECKING:
    from my_agent_core.memory.provenance import Provenance
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.memory.store_types import WriteEvent

    from .server import MyAgentServer

__all__ = [
    "WATCH_GLOB",
    "FolderState",
    "MemoryFile",
    "MemoryFolders",
    "observed_store",
    "register",
]

logger = logging.getLogger(__name__)

WATCH_GLOB = "**/.my_agent_core/memory/*.md"
WATCH_SETTLE_SECONDS = 0.2


@dataclass(frozen=True)
class MemoryFile:
    """A memory file: the workspace folder it belongs to, its target and its path."""

    folder: Path
    target: str
    path: Path


MEMORY_FILE_MAX_BYTES = 16 * 1024 * 1024  # far past any budget; a bigger "memory file" is not read


def read_memory_text(mem_dir: Path, target: str) -> tuple[str | None, str | None]:
    """(text, None), or (None, why) when the file cannot be used; ("", None) when it is missing.

    Through the one check (`my_agent_core.paths`): a memory folder or file that links out of its
    workspace is refused, and a FIFO, device, folder or huge file is never read; nor is a memory
    file that is one file with another file of the folder (MEMORY.md linked to history.jsonl
    would show the journal as memory).
    """
    from my_agent_core.memory.own_files import check_separate  # here: the panel's rare fallback

    name = FILE_NAMES[target]
    try:
        check_memory_folder(mem_dir)
        check_separate(mem_dir, name)
        real = resolve_inside(mem_dir, name, what=name)
        text = read_text(real, max_bytes=MEMORY_FILE_MAX_BYTES, name=name)
    except PathRefused as exc:
        return None, str(exc)
    return (text if text is not None else ""), None


@dataclass
class FolderState:
    """One workspace folder: its URI, path, lazily built panel store and what was last announced."""

    uri: str
    path: Path
    store: MemoryStore | None = None
    announced: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    last_journal_id: str | None = None

    @property
    def memory_dir(self) -> Path:
        return memory_dir_of(self.path)


def observed_store(
    mem_dir: Path,
    settings: Settings,
    author: str,
    on_write: Callable[[str, str | None, JournalRecord], None],
) -> MemoryStore:
    """A MemoryStore whose successful edits call `on_write(target, text_before, record)` (any thread).

    Opened through `memory.location.open_store`, the one factory: with `myAgent.memory.userProfile`
    "global" its USER.md is the user's own profile, shared by every workspace."""
    from my_agent_core.memory.location import open_store  # here: the store loads on first use

    def listener(event: WriteEvent) -> None:
        on_write(event.target, event.before, event.record)

    return open_store(
        mem_dir=mem_dir,
        user_profile=settings.layer.user_profile,
        memory_char_limit=settings.memory_char_limit,
        user_char_limit=settings.user_char_limit,
        author=author,
        on_write=listener,
    )


def record_json(record: JournalRecord) -> JournalEntryJson:
    """A journal record as the protocol sends it, with its summary in words."""
    from my_agent_core.memory.origins import record_summary  # here: start-up time (~2 ms)

    out: JournalEntryJson = {
        "id": record.id,
        "time": record.time,
        "action": record.action,
        "target": record.target,
        "author": record.author,
        "before": record.before,
        "after": record.after,
        "summary": record_summary(record),
    }
    if record.provenance is not None:
        out["provenance"] = provenance_json(record.provenance)
    return out


def provenance_json(provenance: Provenance) -> ProvenanceJson:
    """A write's provenance as the protocol sends it."""
    out: ProvenanceJson = {
        "mode": provenance.mode,
        "origin": "user" if provenance.from_user else "untrusted",
        "sources": [{"kind": r.kind, "where": r.where, "how": r.how} for r in provenance.sources],
    }
    if provenance.session is not None:
        out["session"] = provenance.session
    if provenance.title is not None:
        out["title"] = provenance.title
    if provenance.more:
        out["more"] = provenance.more
    if provenance.approved is not None:
        out["approved"] = provenance.approved
    return out


def entry_origins_json(
    store: MemoryStore, target: str, entries: list[str]
) -> list[EntryOriginJson]:
    """Who made each entry and from what (`memory/origins.py`), from the target's own history."""
    # Here: start-up time (~2 ms; the Memory view asks after the first diagnostics).
    from my_agent_core.memory.origins import entry_origins, journal_records, origin_summary

    records = journal_records(store.folder(target) / JOURNAL_NAME)
    out: list[EntryOriginJson] = []
    for origin in entry_origins(records, target, entries):
        item: EntryOriginJson = {"summary": origin_summary(origin), "known": origin.known}
        record = origin.record
        if record is not None:
            item["journalId"] = record.id
            item["author"] = record.author
            item["time"] = record.time
            if record.provenance is not None:
                item["provenance"] = provenance_json(record.provenance)
        out.append(item)
    return out


class MemoryFolders:
    """The folders the editor has open, their stores, and the announcements of their changes."""

    def __init__(self, ls: MyAgentServer) -> None:
        self.ls = ls
        self.folders: dict[Path, FolderState] = {}
        self.own_writes: set[str] = set()  # journal ids written by this server's stores
        self._pending: set[Path] = set()  # watcher events waiting to settle

    # ----- folders ---------------------------------------------------------------------------------
    def sync_folders(self) -> tuple[list[Path], list[Path]]:
        """Mirror pygls' workspace folders (or the root URI); returns (added, removed) paths."""
        wanted: dict[Path, str] = {}
        try:
            ws = self.ls.workspace
        except RuntimeError:
            return [], []
        for uri in list(ws.folders.keys()):
            path = uri_to_path(ws.folders[uri].uri)
            if path is not None:
                wanted.setdefault(path, ws.folders[uri].uri)
        if not wanted and ws.root_uri:
            path = uri_to_path(ws.root_uri)
            if path is not None:
                wanted[path] = ws.root_uri
        removed = [p for p in self.folders if p not in wanted]
        added = [p for p in wanted if p not in self.folders]
        for path in removed:
            del self.folders[path]
        for path in added:
            self.folders[path] = FolderState(uri=wanted[path], path=path)
        return added, removed

    def resolve(self, folder_uri: str | None) -> FolderState:
        """The folder a request names (omitted: the first folder); -32602 when it is not open."""
        if folder_uri is None:
            if not self.folders:
                raise invalid("no workspace folder is open")
            return next(iter(self.folders.values()))
        path = uri_to_path(folder_uri)
        state = self.folders.get(path) if path is not None else None
        if state is None:
            raise invalid(f"unknown workspace folder: {folder_uri[:200]!r}")
        return state

    def folder_of_path(self, path: Path) -> FolderState | None:
        return self.folders.get(norm_path(path))

    # ----- stores ----------------------------------------------------------------------------------
    def store(self, folder: FolderState) -> MemoryStore:
        """The folder's panel store (author `user`), built on first use with the current limits."""
        if folder.store is None:

            def on_write(target: str, before: str | None, record: JournalRecord) -> None:
                error = folder.store.journal_error if folder.store is not None else None
                self.note_write(folder.path, target, before, record, "user", None, error)

            folder.store = observed_store(folder.memory_dir, self.ls.config, "user", on_write)
        return folder.store

    def note_write(
        self,
        folder_path: Path,
        target: str,
        before: str | None,
        record: JournalRecord,
        source: str,
        session_id: str | None,
        journal_error: str | None = None,
    ) -> None:
        """From a store's thread: remember the write as ours, announce it on the event loop and
        merge it into a dirty open buffer.

        `journal_error`: the writing store could not record the edit in its history (the edit
        itself is saved); the announcement carries it so the user learns that undo will miss it.
        """
        self.own_writes.add(record.id)

        def on_loop() -> None:
            self.announce(
                folder_path,
                target,
                source,
                session_id=session_id,
                journal_id=record.id,
                journal_error=journal_error,
            )
            self.merge_into_open_buffers(folder_path, target, before, record)

        self.ls.post(on_loop)

    def drop_stores(self) -> None:
        """Forget the panel stores (the limits changed); they are rebuilt on next use."""
        for folder in self.folders.values():
            folder.store = None

    def state(self, folder: FolderState) -> MemoryStateResult:
        """`myAgent/memory/state` result for a folder: the stores as they are on disk."""
        return {
            "folder": folder.uri,
            "trusted": self.ls.config.is_trusted(folder.path),
            "stores": [self.store_state(folder.path, t) for t in TARGETS],
        }

    def store_state(self, folder_path: Path, target: str) -> StoreStateJson:
        """One target's figures from disk (via the folder's store, else the parser on the file)."""
        folder = self.folders.get(folder_path)
        mem_dir = memory_dir_of(folder_path)
        if folder is not None:
            store = self.store(folder)
            st = store.state(target)
            out: StoreStateJson = {
                "target": target,
                "path": str(st.path),
                "used": st.used,
                "limit": st.limit,
                "entries": list(st.entries),
                "available": bool(st.available),
            }
            if st.error:
                out["error"] = st.error
            else:
                out["origins"] = entry_origins_json(store, target, list(st.entries))
            if store.journal_error:
                out["journalError"] = store.journal_error
            return out
        text, error = read_memory_text(mem_dir, target)
        entries = memdoc.parse(text).stored_texts if text else []
        out = {
            "target": target,
            "path": str((mem_dir / FILE_NAMES[target]).absolute()),
            "used": memdoc.budget_used(entries),
            "limit": self.ls.config.limit(target),
            "entries": entries,
            "available": error is None,
        }
        if error is not None:
            out["error"] = error
        return out

    # ----- announcements ---------------------------------------------------------------------------
    def announce(
        self,
        folder_path: Path,
        target: str,
        source: str,
        *,
        session_id: str | None = None,
        journal_id: str | None = None,
        journal_error: str | None = None,
        force: bool = True,
    ) -> bool:
        """Send `myAgent/memory/changed` for a store; with force=False only when it differs."""
        state = self.store_state(folder_path, target)
        key = (state["used"], tuple(state["entries"]), state["available"])
        folder = self.folders.get(folder_path)
        announced = folder.announced if folder is not None else {}
        if not force and announced.get(target) == key:
            return False
        announced[target] = key
        if folder is not None:
            folder.last_journal_id = self.last_journal_id(folder_path)
        payload: MemoryChangedParams = {
            "folder": folder.uri if folder is not None else path_to_uri(folder_path),
            "target": state["target"],
            "path": state["path"],
            "used": state["used"],
            "limit": state["limit"],
            "entries": state["entries"],
            "available": state["available"],
            "source": source,
        }
        if "error" in state:
            payload["error"] = state["error"]
        if "journalError" in state:
            payload["journalError"] = state["journalError"]
        if "origins" in state:
            payload["origins"] = state["origins"]
        if session_id is not None:
            payload["sessionId"] = session_id
        if journal_id is not None:
            payload["journalId"] = journal_id
        if journal_error is not None:
            payload["journalError"] = journal_error
        self.ls.protocol.notify("myAgent/memory/changed", payload)
        for callback in list(self.ls.on_memory_changed):
            try:
                callback(MemoryFile(folder_path, target, Path(state["path"])))
            except Exception:
                logger.exception("memory-changed callback failed")
        return True

    def last_journal_id(self, folder_path: Path) -> str | None:
        last = self.last_journal_record(folder_path)
        return last.id if last is not None else None

    def last_journal_record(self, folder_path: Path) -> JournalRecord | None:
        try:
            return Journal(memory_dir_of(folder_path) / JOURNAL_NAME).newest()
        except OSError:
            return None

    def baseline(self, folder: FolderState) -> None:
        """Remember the current state so later watcher events announce real changes only."""
        for target in TARGETS:
            state = self.store_state(folder.path, target)
            folder.announced[target] = (state["used"], tuple(state["entries"]), state["available"])
        folder.last_journal_id = self.last_journal_id(folder.path)

    def file_changed(self, mf: MemoryFile, *, saved_in_editor: bool = False) -> None:
        """A memory file changed outside our stores: announce it with the right source."""
        folder = self.folders.get(mf.folder)
        source = "disk"
        if saved_in_editor:
            source = "user"
        elif folder is not None:
            last = self.last_journal_record(mf.folder)
            if last is not None and last.id != folder.last_journal_id and last.target == mf.target:
                if last.id in self.own_writes:
                    return  # our own write, seen by the client's watcher first: announced by us
                source = "cli"
        self.announce(mf.folder, mf.target, source, force=False)

    def watched_change(self, mf: MemoryFile) -> None:
        """A watcher event: announce after a short settle time, once per burst of events.

        The wait lets an editor save announce itself first (`didSave` -> source `user`) and lets our
        own writes be recorded before their watcher echo arrives.
        """
        if mf.path in self._pending:
            return
        self._pending.add(mf.path)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._settled(mf)
            return
        loop.call_later(WATCH_SETTLE_SECONDS, self._settled, mf)

    def _settled(self, mf: MemoryFile) -> None:
        self._pending.discard(mf.path)
        try:
            self.file_changed(mf)
        except Exception:
            logger.exception("could not announce a change of %s", mf.path)

    # ----- open buffers ----------------------------------------------------------------------------
    def merge_into_open_buffers(
        self, folder_path: Path, target: str, before: str | None, record: JournalRecord
    ) -> None:
        """Put a server-side write into open buffers that have unsaved edits (clean ones reload)."""
        for doc in self.ls.buffers.documents():
            mf = self.ls.memory_file(doc.uri)
            if mf is None or mf.folder != folder_path or mf.target != target:
                continue
            edit = merged_buffer_edit(doc.text, before, record.changes)
            if edit is not None:
                apply_buffer_edit(self.ls, doc, *edit)


# ----- LSP handlers ----------------------------------------------------------------------------------
def register(ls: MyAgentServer) -> None:
    """Settings, workspace folders and file watching."""

    @ls.feature(types.INITIALIZE)
    def on_initialize(ls: MyAgentServer, params: types.InitializeParams) -> None:
        ls.capture_loop()
        options = to_plain(params.initialization_options)
        mine = options.get("myAgent") if isinstance(options, dict) else None
        ls.init_options = mine if isinstance(mine, dict) else {}
        ls.update_settings(notify=False)
        ls.memory.sync_folders()

    @ls.feature(types.INITIALIZED)
    async def on_initialized(ls: MyAgentServer, params: types.InitializedParams) -> None:
        for folder in list(ls.memory.folders.values()):
            try:
                ls.memory.baseline(folder)
            except Exception:
                logger.exception("baseline failed for %s", folder.path)
        await register_watcher(ls)
        await pull_configuration(ls)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_config(ls: MyAgentServer, params: types.DidChangeConfigurationParams) -> None:
        settings = to_plain(params.settings)
        if isinstance(settings, dict) and isinstance(settings.get("myAgent"), dict):
            ls.pushed_settings = settings["myAgent"]
            ls.update_settings()  # effective at once; the pull below refines it
        await pull_configuration(ls)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders(ls: MyAgentServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        added, removed = ls.memory.sync_folders()
        ls.workspace_checks.sync_folders()
        for path in added:
            ls.memory.baseline(ls.memory.folders[path])
        for path in removed:
            ls.chat.end_folder(path)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def on_watched(ls: MyAgentServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.workspace_checks.file_events(params.changes)  # the index behind stale-reference
        seen: set[Path] = set()
        for change in params.changes:
            mf = ls.memory_file(change.uri)
            if mf is None or mf.path in seen:
                continue
            seen.add(mf.path)
            ls.memory.watched_change(mf)


async def pull_configuration(ls: MyAgentServer) -> bool:
    """Pull the `myAgent` section when the client supports it; True when it answered."""
    caps = ls.client_capabilities.workspace
    if not (caps and caps.configuration):
        return False
    try:
        result = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="myAgent")])
        )
    except Exception as exc:
        logger.info("workspace/configuration failed: %s", exc)
        return False
    value = to_plain(result[0]) if result else None
    ls.pulled_settings = value if isinstance(value, dict) else {}
    ls.update_settings()
    return True


async def register_watcher(ls: MyAgentServer) -> None:
    """Ask the client to watch the memory files (dynamic registration only)."""
    if await ask_to_watch(ls, "memory", WATCH_GLOB):
        ls.watcher_registered = True


def can_watch(ls: MyAgentServer) -> bool:
    """Whether the client registers file watchers on request (dynamic registration)."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps else None
    return bool(watched and watched.dynamic_registration)


async def ask_to_watch(ls: MyAgentServer, name: str, glob: str) -> bool:
    """Ask the client to report the files matching `glob` (`workspace/didChangeWatchedFiles`); True
    when it agreed, False when it cannot (no dynamic registration) or refused (logged)."""
    if not can_watch(ls):
        return False
    registration = types.Registration(
        id=f"my-agent-{name}-watch-{uuid.uuid4().hex[:8]}",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=glob)]
        ),
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(registrations=[registration])
        )
    except Exception as exc:
        logger.info("client/registerCapability (%s watcher) failed: %s", name, exc)
        return False
    return True


def memory_file_of(uri: object) -> MemoryFile | None:
    """`MemoryFile` for a memory-file URI (`.../.my_agent_core/memory/MEMORY.md|USER.md`), else None."""
    if not isinstance(uri, str):
        return None
    path = uri_to_path(unquote(uri)) if not uri.startswith("file:") else uri_to_path(uri)
    if path is None:
        return None
    target = target_of_file(path)
    if target is None:
        return None
    return MemoryFile(folder=path.parent.parent.parent, target=target, path=path)
