"""The Recall view's service (`ls.recall`): a folder's recall archive to search, read and prune, and
the archive of what agents outside our chat take out of memory.

One provider object per workspace folder (the one `myAgent.memory.provider` names: `archive` by
default, `postgres`, a plug-in; `none` = off), opened on first use and closed when the folder is
removed, when the setting changes and at shutdown. Each folder's provider runs on its own daemon
thread, one call at a time (SQLite and PostgreSQL block; a provider that hangs never holds up the
event loop or the process's exit), and a request waits for it at most `REQUEST_TIMEOUT_S`. An
untrusted folder's archive is never opened. Looking never creates an archive.

Loaded on the first Recall request or archived write (`MyAgentServer.recall`), never at start-up:
the requests themselves are registered by `recall_requests.py`.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from lsprotocol import types

from my_agent_core.memory.providers.archive import archive_path
from my_agent_core.memory.providers.base import MemoryProvider
from my_agent_core.memory.providers.indexed import ArchiveError
from my_agent_core.memory.providers.items import RecallItem
from my_agent_core.memory.providers.registry import (
    ProviderContext,
    ProviderError,
    create_provider,
    provider_name,
)
from my_agent_core.paths import PathRefused
from my_agent_core.tools import clean_text

from .params import RequestError, invalid
from .protocol_types import RecallGetResult, RecallItemJson, RecallKind, RecallSearchResult
from .recall_requests import MAX_ID_CHARS

if TYPE_CHECKING:
    from my_agent_core.memory.store_types import WriteEvent

    from .folders import FolderState
    from .server import MyAgentServer

__all__ = ["PROVIDER_FAILED", "ProviderFactory", "RecallService", "item_json"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: The provider could not be opened or failed (the message says why); see docs/protocol.md.
PROVIDER_FAILED = -32005
REQUEST_TIMEOUT_S = (
    20.0  # a PostgreSQL connect (3 s), a busy SQLite (1.5 s), a model load: well under
)
ARCHIVE_WAIT_S = (
    2.0  # how long an agent's memory write waits for its removed entries to be archived
)
SHUTDOWN_WAIT_S = 3.0  # all folders together, at shutdown
SEARCH_TEXT_CHARS = 4000  # per item of a search; `get` sends more
GET_TEXT_CHARS = 100_000
MAX_SOURCE_CHARS = 200

ProviderFactory = Callable[[str, ProviderContext], MemoryProvider | None]
"""`(name, context) -> provider` (None for "none"); `registry.create_provider` in the server."""


@runtime_checkable
class ItemSearcher(Protocol):
    """A provider that ranks `RecallItem`s (the archive, PostgreSQL): times and kinds come exact."""

    def search_items(self, query: str, limit: int) -> list[RecallItem]: ...


@runtime_checkable
class ItemGetter(Protocol):
    def get(self, item_id: str) -> object: ...


@runtime_checkable
class ItemDeleter(Protocol):
    def delete(self, item_id: str) -> bool: ...


class _Failed(Exception):
    """A provider failure, already worded for the person (answered PROVIDER_FAILED)."""


class _Worker:
    """One daemon thread running a folder's provider calls in order (daemon: a provider stuck on a
    lock or a network never keeps the process from exiting)."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"recall-{name}", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()

        def job() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self._jobs.put(job)
        return future

    def stop(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()


@dataclass
class _FolderRecall:
    """One folder's provider: which one (name + settings), its worker, the object once opened."""

    folder: Path
    name: str
    settings: dict[str, object]
    worker: _Worker
    provider: MemoryProvider | None = None
    opened: bool = False
    closed: bool = False
    key: tuple[object, ...] = field(default=())


class RecallService:
    """The folders' providers for the Recall view and for agents' memory writes (see module doc)."""

    def __init__(self, ls: MyAgentServer, factory: ProviderFactory | None = None) -> None:
        self.ls = ls
        self._factory = factory
        self._folders: dict[Path, _FolderRecall] = {}
        self._lock = threading.Lock()  # store threads (archive_write) and the event loop

    # ----- the folder's provider ---------------------------------------------------------------
    def configured(self) -> tuple[str, dict[str, object]]:
        """(provider name, settings) as the settings say now (MY_AGENT_MEMORY_PROVIDER, else
        archive, when the setting is absent)."""
        settings = self.ls.config.layer.provider_settings()
        return provider_name(settings), settings

    def _entry(self, folder: Path) -> _FolderRecall | None:
        """The folder's entry for the current settings (a stale one is closed); None when off."""
        name, settings = self.configured()
        key = (name, tuple(sorted((k, repr(v)) for k, v in settings.items())))
        stale: _FolderRecall | None = None
        with self._lock:
            entry = self._folders.get(folder)
            if entry is not None and entry.key != key:
                stale = self._folders.pop(folder)
                entry = None
            if entry is None and name != "none":
                entry = _FolderRecall(folder, name, settings, _Worker(folder.name), key=key)
                self._folders[folder] = entry
        if stale is not None:
            self._close(stale)
        return entry

    def _open(self, entry: _FolderRecall, *, create: bool) -> MemoryProvider | None:
        """On the worker: the provider, opened once. None while the folder has no archive yet and
        `create` is false (a search must not create one)."""
        if entry.closed:
            raise _Failed("the workspace folder was closed")
        if entry.opened:
            return entry.provider
        if entry.name == "archive" and not create:
            try:
                if not archive_path(entry.folder, create=False).exists():
                    return None
            except PathRefused as exc:
                raise _Failed(str(exc)) from None
        context = ProviderContext(entry.folder, None, entry.settings, self._reporter(entry))
        factory = self._factory or create_provider
        try:
            entry.provider = factory(entry.name, context)
        except (ProviderError, PathRefused) as exc:
            raise _Failed(str(exc)) from None
        except Exception as exc:
            if isinstance(exc, ArchiveError):
                raise _Failed(str(exc)) from None
            raise
        entry.opened = True
        return entry.provider

    def _reporter(self, entry: _FolderRecall) -> Callable[[str], None]:
        """Notices of the provider (e.g. a damaged archive moved aside): logged and shown."""

        def report(message: str) -> None:
            logger.warning("memory provider %s (%s): %s", entry.name, entry.folder, message)
            self.ls.post(self._show, message)

        return report

    def _show(self, message: str) -> None:
        self.ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message[:2000])
        )

    async def _call(
        self,
        folder: Path,
        fn: Callable[[MemoryProvider | None], T],
        *,
        create: bool = False,
    ) -> T:
        """Run `fn(provider)` on the folder's worker, waiting at most REQUEST_TIMEOUT_S."""
        entry = self._entry(folder)
        if entry is None:
            raise invalid("recall is off: the setting myAgent.memory.provider is 'none'")

        def job() -> T:
            provider = self._open(entry, create=create)
            try:
                return fn(provider)
            except (RequestError, _Failed):
                raise
            except Exception as exc:
                if isinstance(exc, (ArchiveError, PathRefused)):
                    raise _Failed(str(exc)) from None
                logger.exception("memory provider %s failed", entry.name)
                raise _Failed(f"{type(exc).__name__}: {exc}") from None

        future = entry.worker.submit(job)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), REQUEST_TIMEOUT_S)
        except TimeoutError:
            raise RequestError(
                PROVIDER_FAILED,
                f"The memory provider {entry.name!r} did not answer within "
                f"{REQUEST_TIMEOUT_S:.0f} s; try again later.",
            ) from None
        except _Failed as exc:
            raise RequestError(
                PROVIDER_FAILED, f"The memory provider {entry.name!r} failed: {exc}"
            ) from None

    # ----- requests ----------------------------------------------------------------------------
    async def search(self, folder: FolderState, query: str, limit: int) -> RecallSearchResult:
        """Ranked items for `query`; `provider: None` when the memory provider is off or the folder untrusted."""
        if not self.ls.config.is_trusted(folder.path):
            return {"provider": None, "items": []}
        name, _ = self.configured()
        if name == "none":
            return {"provider": None, "items": []}

        def run(provider: MemoryProvider | None) -> list[RecallItemJson]:
            if provider is None:
                return []
            if isinstance(provider, ItemSearcher):
                found: Sequence[object] = provider.search_items(query, limit)
            else:
                found = provider.search(query, limit)
            items = [item_json(hit, max_chars=SEARCH_TEXT_CHARS) for hit in found[:limit]]
            return [item for item in items if item is not None]

        items = await self._call(folder.path, run)
        return {"provider": name, "items": items}

    async def get(self, folder: FolderState, item_id: str) -> RecallGetResult:
        self._refuse_untrusted(folder)

        def run(provider: MemoryProvider | None) -> RecallItemJson:
            if provider is not None and not isinstance(provider, ItemGetter):
                raise invalid(f"the memory provider {provider.name!r} cannot fetch single items")
            found = provider.get(item_id) if provider is not None else None
            item = item_json(found, max_chars=GET_TEXT_CHARS) if found is not None else None
            if item is None:
                raise _unknown(item_id, folder)
            return item

        return {"item": await self._call(folder.path, run)}

    async def delete(self, folder: FolderState, item_id: str) -> None:
        self._refuse_untrusted(folder)

        def run(provider: MemoryProvider | None) -> None:
            if provider is not None and not isinstance(provider, ItemDeleter):
                raise invalid(f"the memory provider {provider.name!r} cannot delete items")
            if provider is None or not provider.delete(item_id):
                raise _unknown(item_id, folder)

        await self._call(folder.path, run)

    def _refuse_untrusted(self, folder: FolderState) -> None:
        if not self.ls.config.is_trusted(folder.path):
            raise invalid(
                f"the folder {folder.path.name!r} is not trusted: its archive is never opened"
            )

    # ----- agents' memory writes ---------------------------------------------------------------
    def archive_write(self, folder: Path, event: WriteEvent) -> None:
        """From a store's thread: the entries an agent's replace or remove took out of memory go
        to the folder's archive, as a chat session's do (waits at most ARCHIVE_WAIT_S)."""
        changes = [c for c in event.record.changes if c.before is not None and c.before.strip()]
        if not changes or not self.ls.config.is_trusted(folder):
            return
        entry = self._entry(folder)
        if entry is None:
            return

        def job() -> None:
            provider = self._open(entry, create=True)
            if provider is None:
                return
            for change in changes:
                provider.on_memory_write(
                    event.target, event.record.action, change.before, change.after
                )

        future = entry.worker.submit(job)
        try:
            future.result(timeout=ARCHIVE_WAIT_S)
        except FutureTimeout:
            logger.warning("archiving removed memory entries of %s is taking long", folder)
        except Exception:
            logger.exception("could not archive the entries taken out of memory in %s", folder)

    # ----- lifecycle ---------------------------------------------------------------------------
    def sync_folders(self) -> None:
        """Close the providers of folders the editor no longer has open."""
        open_folders = set(self.ls.memory.folders)
        with self._lock:
            gone = [self._folders.pop(p) for p in list(self._folders) if p not in open_folders]
        for entry in gone:
            self._close(entry)

    def settings_changed(self) -> None:
        """Close providers the settings no longer name (reopened on next use)."""
        for folder in list(self._folders):
            self._entry(folder)

    def close(self) -> None:
        """Shut every provider down (waiting at most SHUTDOWN_WAIT_S in all): pending archive
        writes are flushed and connections released."""
        with self._lock:
            entries = list(self._folders.values())
            self._folders.clear()
        futures = [self._close(entry) for entry in entries]
        deadline = time.monotonic() + SHUTDOWN_WAIT_S
        for future in futures:
            try:
                future.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:
                logger.warning("a memory provider did not shut down in time or failed to")

    def _close(self, entry: _FolderRecall) -> Future[None]:
        def job() -> None:
            entry.closed = True
            if entry.provider is not None:
                entry.provider.shutdown()

        future = entry.worker.submit(job)
        entry.worker.stop()
        return future


def _unknown(item_id: str, folder: FolderState) -> RequestError:
    return invalid(f"no archived item {item_id[:MAX_ID_CHARS]!r} in the archive of {folder.path}")


# ----- items on the wire -------------------------------------------------------------------------
def item_json(item: object, *, max_chars: int) -> RecallItemJson | None:
    """A provider's item (a `RecallItem`, or a `SearchHit`-like mapping from a plug-in) as the
    protocol sends it, text cut to `max_chars` with a note; None when it has no usable id or text."""
    text: object
    when: object
    score: object
    source: object
    if isinstance(item, RecallItem):
        item_id, text, when, score = item.id, item.text, item.created, item.score
        kind, source = _kind(item.kind, item.source), item.source
    elif isinstance(item, Mapping):
        item_id, text = _id(item.get("id")), item.get("text")
        when, score = item.get("created", item.get("time")), item.get("score", 0.0)
        raw_kind, source = item.get("kind"), item.get("source")
        kind = _kind(raw_kind if isinstance(raw_kind, str) else "note", source)
    else:
        return None
    if isinstance(when, bool) or not isinstance(when, (str, int, float)):
        when = 0.0
    if not item_id or not isinstance(text, str):
        return None
    out: RecallItemJson = {
        "id": item_id,
        "kind": kind,
        "text": _cut(_clean(text), max_chars),
        "time": when,
        "score": _score(score),
    }
    if isinstance(source, str) and source:
        out["source"] = _clean(source)[:MAX_SOURCE_CHARS]
    return out


def _score(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0.0
    return round(float(value), 3)


def _id(value: object) -> str:
    if isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and len(value) <= MAX_ID_CHARS else ""


def _kind(kind: str, source: object) -> RecallKind:
    """The archive's kinds as the protocol names them: an entry taken out of memory is `replaced`
    or `removed` (its label ends in "(replace)" for a replace); a plug-in's own item is a `note`."""
    if kind in ("turn", "removed", "replaced"):
        return kind  # type: ignore[return-value]  # checked just above
    if kind == "memory":
        return "replaced" if isinstance(source, str) and source.endswith("(replace)") else "removed"
    return "note"


def _clean(text: str) -> str:
    return clean_text(text)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return (
        text[:limit].rstrip()
        + f"\n…[cut: {len(text) - limit:,} more characters; open the item to read it all]"
    )
