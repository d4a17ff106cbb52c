"""Chat sessions for the editor: `myAgent/chat/*` requests, streamed events, approvals, sessions that
last.

Each session owns an `Agent` (built by `chat_build.SessionBuilder`: on a trusted folder with its own
memory store, the workspace tools wired to the editor, a memory provider and persistence; on an
untrusted one with none of these) whose frozen system prompt lives as long as the session, across
server restarts too (`chat/resume`). A turn runs in a worker thread; its events are posted to the
event loop in order (`chat_events.EventRouter`), so every `myAgent/chat/event` of a request reaches
the client before its answer. This module (and the agent, and openai) is imported on the first chat
request only (`MyAgentServer.chat`), to keep server startup fast; the requests are registered by
`chat_requests.py`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from my_agent_core.layout import TARGETS
from my_agent_core.paths import PathRefused

from .attachments import ContextRef, read_attachments
from .chat_build import BuiltSession, ModelClients, SessionBuilder
from .chat_events import EventRouter, Turn, session_usage
from .chat_sessions import history_json, info_json, meta_memory, open_session_store
from .folders import FolderState
from .params import (
    ENDPOINT_FAILED,
    INVALID_PARAMS,
    NO_MODEL,
    REQUEST_CANCELLED,
    RequestError,
    cancelled,
    invalid,
)
from .protocol_types import (
    ChatCompactResult,
    ChatResumeResult,
    ChatSendResult,
    ChatSnapshotResult,
    ChatStartResult,
    ContextFileJson,
    SessionInfoJson,
    SessionUsage,
    SnapshotStore,
)
from .uris import norm_path

if TYPE_CHECKING:
    from my_agent_core.agent import Agent, SessionRecord, SessionStore
    from my_agent_core.agent.errors import ErrorKind
    from my_agent_core.memory.providers import MemoryManager
    from my_agent_core.memory.store import MemoryStore

    from .server import MyAgentServer

__all__ = ["SESSION_BUSY", "ChatManager", "ChatSession", "error_code"]

logger = logging.getLogger(__name__)

CANCEL_WAIT_SECONDS = 30.0
SHUTDOWN_WAIT_SECONDS = 3.0
#: The session is open in another window or process (its file is locked): try again later.
SESSION_BUSY = -32004
_T = TypeVar("_T")


@dataclass
class ChatSession:
    """An editor chat: its folder, whether memory is on, its agent and what it must shut down."""

    id: str
    folder: FolderState
    memory: bool
    agent: Agent
    router: EventRouter
    store: MemoryStore | None = None
    manager: MemoryManager | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False

    def describe(self) -> ChatStartResult:
        return {"sessionId": self.id, "folder": self.folder.uri, "memory": self.memory}

    def snapshot(self) -> ChatSnapshotResult:
        """What is frozen into this session's system prompt (`chat/snapshot`); none without memory."""
        stores: list[SnapshotStore] = (
            [{"target": t, "entries": self.agent.snapshot_entries(t)} for t in TARGETS]
            if self.memory
            else []
        )
        files = self.agent.session_meta.get("contextFiles") if self.memory else None
        return {
            **self.describe(),
            "stores": stores,
            "contextFiles": _context_files(files),
        }

    def history(self) -> ChatResumeResult:
        return {**self.describe(), "messages": history_json(self.agent.messages[1:])}

    def listed(self) -> SessionInfoJson:
        """This open session as a listing row (before its first message it has no file yet)."""
        agent = self.agent
        return {
            "sessionId": self.id,
            "title": agent.title,
            "created": int(agent.created),
            "updated": int(agent.created),
            "folder": self.folder.uri,
            "messages": len(agent.messages) - 1,
            "memory": self.memory,
            "active": True,
        }

    def close(self) -> None:
        """End the session (worker thread: it waits for a cancelled turn to unwind): the session
        file is released (it stays for a later resume) and the memory provider shut down."""
        self.closed = True
        try:
            self.agent.close()
        finally:
            if self.manager is not None:
                self.manager.shutdown()


def _context_files(value: object) -> list[ContextFileJson]:
    """The context files a session persisted in its meta, in protocol shape (junk dropped)."""
    out: list[ContextFileJson] = []
    if not isinstance(value, list):
        return out
    for item in value:
        if not isinstance(item, dict):
            continue
        name, path, chars = item.get("name"), item.get("path"), item.get("chars")
        if isinstance(name, str) and isinstance(path, str) and isinstance(chars, int):
            out.append(
                {
                    "name": name,
                    "path": path,
                    "chars": chars,
                    "cut": item.get("cut") is True,
                    "blocked": item.get("blocked") is True,
                }
            )
    return out


def usage_summary(agent: Agent) -> SessionUsage:
    """Session totals in protocol shape (`cachedTokens` / `cacheHitRate` null when unknown)."""
    return session_usage(agent.usage.summary())


def error_code(kind: ErrorKind) -> int:
    """The JSON-RPC error code of a failed turn (docs/protocol.md); every kind is mapped here."""
    match kind:
        case "config":
            return NO_MODEL
        case "invalid":
            return INVALID_PARAMS
        case "cancelled":
            return REQUEST_CANCELLED
        case (
            "agent"
            | "busy"
            | "closed"
            | "timeout"
            | "connection"
            | "http"
            | "stream"
            | "protocol"
            | "context_length"
            | "empty_reply"
            | "step_limit"
        ):
            return ENDPOINT_FAILED
    # No fall-through: a kind without a case above is a "missing return" error for mypy.


def _request_error(exc: BaseException) -> RequestError:
    """An agent or session error as the JSON-RPC error the protocol names."""
    from my_agent_core.agent import AgentError, SessionBusy, SessionError  # here: start-up time

    if isinstance(exc, SessionBusy):
        return RequestError(SESSION_BUSY, str(exc))
    if isinstance(exc, SessionError):
        return invalid(str(exc))
    if isinstance(exc, AgentError):
        return RequestError(error_code(exc.kind), str(exc))
    return RequestError(ENDPOINT_FAILED, str(exc))


class ChatManager:
    """All chat sessions of the server, keyed by session id."""

    def __init__(self, ls: MyAgentServer) -> None:
        self.ls = ls
        self.sessions: dict[str, ChatSession] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._opening = asyncio.Lock()  # one start / resume at a time: ids are registered once
        self.clients = ModelClients()

    @property
    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="my-agent-chat")
        return self._executor

    async def _in_thread(self, fn: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def get(self, session_id: str) -> ChatSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid(f"unknown chat session: {session_id[:100]!r}")
        return session

    def snapshots(self, folder: Path, target: str) -> list[tuple[str, frozenset[str]]]:
        folder = norm_path(folder)
        return [
            (s.id, frozenset(s.agent.snapshot_entries(target)))
            for s in list(self.sessions.values())
            if s.memory and s.folder.path == folder
        ]

    # ----- start and resume ------------------------------------------------------------------------
    async def start(self, folder: FolderState) -> ChatSession:
        """A new session with a freshly frozen snapshot (memory and tools off on untrusted folders)."""
        settings = self.ls.config
        if not settings.model:
            raise RequestError(
                NO_MODEL,
                "No model configured: set the `myAgent.model` setting or MY_AGENT_MODEL.",
            )
        session_id = uuid.uuid4().hex
        router = EventRouter(self.ls, session_id)
        builder = SessionBuilder(self.ls, folder, settings, session_id, router, self.clients)
        async with self._opening:
            built = await self._build(builder.start)
            return self._register(session_id, folder, built, router)

    async def resume(self, session_id: str) -> ChatSession:
        """Reopen a persisted session (or return the one open here)."""
        async with self._opening:
            open_here = self.sessions.get(session_id)
            if open_here is not None:
                return open_here
            folder, record, store = await self._in_thread(self._find, session_id)
            router = EventRouter(self.ls, session_id)
            builder = SessionBuilder(
                self.ls, folder, self.ls.config, session_id, router, self.clients
            )
            built = await self._build(lambda: builder.resume(record, store))
            return self._register(session_id, folder, built, router)

    def _find(self, session_id: str) -> tuple[FolderState, SessionRecord, SessionStore]:
        """The trusted folder whose store holds the session, and the session (worker thread)."""
        from my_agent_core.agent import SessionNotFound  # here: start-up time (the agent package)

        settings = self.ls.config
        for folder in list(self.ls.memory.folders.values()):
            if not settings.is_trusted(folder.path):
                continue
            store = open_session_store(folder.path, settings)
            try:
                return folder, store.load(session_id), store
            except SessionNotFound:
                continue
            except PathRefused as exc:
                raise invalid(f"the sessions of {folder.path} cannot be read: {exc}") from None
            except Exception as exc:
                raise _request_error(exc) from None
        raise invalid(f"unknown chat session: {session_id[:100]!r}")

    async def _build(self, build: Callable[[], BuiltSession]) -> BuiltSession:
        try:
            return await self._in_thread(build)
        except RequestError:
            raise
        except Exception as exc:
            raise _request_error(exc) from exc

    def _register(
        self, session_id: str, folder: FolderState, built: BuiltSession, router: EventRouter
    ) -> ChatSession:
        memory = built.store is not None and meta_memory(built.agent.session_meta)
        session = ChatSession(
            session_id, folder, memory, built.agent, router, built.store, built.manager
        )
        self.sessions[session_id] = session
        self._sessions_changed()
        return session

    def _sessions_changed(self) -> None:
        for callback in list(self.ls.on_sessions_changed):
            try:
                callback()
            except Exception:
                logger.exception("sessions-changed callback failed")

    # ----- requests of an open session -------------------------------------------------------------
    async def send(
        self, session: ChatSession, message: str, context: list[ContextRef] | None = None
    ) -> ChatSendResult:
        """Run one turn; events stream as notifications, all before this returns."""
        async with session.lock:
            attachments = []
            if context:
                attachments = await self._in_thread(
                    read_attachments,
                    context,
                    session.folder.path,
                    self.ls.buffers,
                    self.ls.position_encoding,
                )
            reply = await self._run(
                session, lambda: session.agent.run(message, attachments=attachments)
            )
            return {"reply": reply, "usage": usage_summary(session.agent)}

    async def compact(self, session: ChatSession) -> ChatCompactResult:
        """Compact now (the Compact button): the model may save lasting facts first."""
        async with session.lock:
            result = await self._run(session, session.agent.compact)
            return {"compacted": result.compacted, "before": result.before, "after": result.after}

    async def _run(self, session: ChatSession, work: Callable[[], _T]) -> _T:
        """`work` on a worker thread as one request of the session: its events are forwarded while
        it runs; `$/cancelRequest` stops it (-32800) and the session stays usable."""
        if session.closed:
            raise invalid(f"the chat session {session.id} was ended")
        router = session.router
        turn: Turn = router.open_turn()
        future = asyncio.get_running_loop().run_in_executor(self.executor, work)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            session.agent.cancel()
            done, _ = await asyncio.wait([future], timeout=CANCEL_WAIT_SECONDS)
            if done and not future.cancelled():
                future.exception()  # retrieved: AgentCancelled (or the turn's own error)
            raise cancelled("the request was cancelled") from None
        except RequestError:
            raise
        except Exception as exc:
            error = _request_error(exc)
            if error.code == REQUEST_CANCELLED:  # AgentCancelled: answered as pygls' cancellation
                raise cancelled(str(exc)) from exc
            raise error from exc
        finally:
            router.close_turn(turn)

    # ----- listing, ending, deleting ---------------------------------------------------------------
    async def listing(self, folder_uri: str | None) -> list[SessionInfoJson]:
        """Persisted sessions (newest first) and the ones open here, of one folder or of all."""
        folders = (
            [self.ls.memory.resolve(folder_uri)]
            if folder_uri is not None
            else list(self.ls.memory.folders.values())
        )
        rows = await self._in_thread(self._persisted, folders)
        listed = {row["sessionId"] for row in rows}
        paths = {folder.path for folder in folders}
        for session in list(self.sessions.values()):
            if session.id not in listed and session.folder.path in paths:
                rows.append(session.listed())
        rows.sort(key=lambda row: (row["updated"], row["created"]), reverse=True)
        return rows

    def _persisted(self, folders: list[FolderState]) -> list[SessionInfoJson]:
        from my_agent_core.agent import SessionError  # here: start-up time (the agent package)

        settings = self.ls.config
        rows: list[SessionInfoJson] = []
        for folder in folders:
            if not settings.is_trusted(folder.path):
                continue
            try:
                infos = open_session_store(folder.path, settings).list()
            except (SessionError, PathRefused, OSError) as exc:
                logger.warning("the sessions of %s cannot be listed: %s", folder.path, exc)
                continue
            for info in infos:
                rows.append(info_json(info, folder.uri, active=info.id in self.sessions))
        return rows

    def _forget(self, session_id: str) -> ChatSession | None:
        """Take a session out of the open ones and stop its turn (closing it is the caller's)."""
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.agent.cancel()
            self._sessions_changed()
        return session

    async def end(self, session_id: str) -> bool:
        """Forget a session: a running turn is cancelled, the agent closed (its file stays).
        False when it was not open here."""
        session = self._forget(session_id)
        if session is None:
            return False
        await self._in_thread(session.close)
        return True

    async def delete(self, session_id: str) -> None:
        """Forget a session and remove its file (-32602 when it is neither open nor persisted)."""
        was_open = await self.end(session_id)
        found = await self._in_thread(self._delete_file, session_id)
        if not (found or was_open):
            raise invalid(f"unknown chat session: {session_id[:100]!r}")

    def _delete_file(self, session_id: str) -> bool:
        from my_agent_core.agent import SessionNotFound  # here: start-up time (the agent package)

        settings = self.ls.config
        for folder in list(self.ls.memory.folders.values()):
            if not settings.is_trusted(folder.path):
                continue
            try:
                open_session_store(folder.path, settings).delete(session_id)
                return True
            except SessionNotFound:
                continue
            except Exception as exc:
                raise _request_error(exc) from None
        return False

    def shutdown(self) -> None:
        """Stop every running turn and close every session (bounded: the process is about to exit,
        and a session's file lock dies with it anyway)."""
        sessions = list(self.sessions.values())
        self.sessions.clear()
        for session in sessions:
            session.agent.cancel()

        def close_all() -> None:
            for session in sessions:
                _close_quietly(session)

        closer = threading.Thread(target=close_all, name="my-agent-chat-close", daemon=True)
        closer.start()
        closer.join(SHUTDOWN_WAIT_SECONDS)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def end_folder(self, folder: Path) -> None:
        """Forget the sessions of a folder that left the workspace (closed in the background)."""
        for session_id, session in list(self.sessions.items()):
            if session.folder.path == folder and self._forget(session_id) is not None:
                self.executor.submit(_close_quietly, session)


def _close_quietly(session: ChatSession) -> None:
    try:
        session.close()
    except Exception:
        logger.exception("closing chat session %s failed", session.id)
