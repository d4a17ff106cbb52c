"""Chat sessions for the editor: `myAgent/chat/*` requests, streamed events and cancellation.

Each session owns an `Agent` with its own MemoryStore (author `agent:<sessionId>`) whose frozen snapshot
lives as long as the session. A turn runs in a worker thread; its events are posted to the event loop
in order, so every `myAgent/chat/event` of a send reaches the client before the send's answer.
The agent (and openai) are imported on the first `chat/start` only, to keep server startup fast.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from my_agent_core.memory.paths import TARGETS

from .params import (
    ENDPOINT_FAILED,
    INVALID_PARAMS,
    NO_MODEL,
    RequestError,
    cancelled,
    invalid,
    opt_str,
    req_str,
    to_params,
)
from .protocol_types import (
    ChatSendResult,
    ChatSessionsResult,
    ChatSnapshotResult,
    ChatStartResult,
    SessionUsage,
    SnapshotStore,
    SystemPromptResult,
)
from .uris import norm_path
from .workspace import FolderState, observed_store

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = ["ChatManager", "ChatSession", "camel_event", "register"]

logger = logging.getLogger(__name__)

CANCEL_WAIT_SECONDS = 30.0
_SNAKE = re.compile(r"_([a-z0-9])")


@dataclass
class Turn:
    """One `chat/send`: events are forwarded only while it is open (i.e. before its answer)."""

    open: bool = True


@dataclass
class ChatSession:
    """An editor chat: its folder, whether memory is on, its agent and its per-session store."""

    id: str
    folder: FolderState
    memory: bool
    agent: Any
    store: Any = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turn: Turn | None = None
    written: set[str] = field(default_factory=set)  # journal ids this session's store wrote

    def describe(self) -> ChatStartResult:
        return {"sessionId": self.id, "folder": self.folder.uri, "memory": self.memory}

    def snapshot(self) -> ChatSnapshotResult:
        """The entries frozen into this session's system prompt (`chat/snapshot`); none without memory."""
        memory = self.memory and self.store is not None
        stores: list[SnapshotStore] = (
            [{"target": t, "entries": self.store.snapshot_entries(t)} for t in TARGETS]
            if memory
            else []
        )
        return {"sessionId": self.id, "folder": self.folder.uri, "memory": memory, "stores": stores}


def _camel(key: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), key)


def camel_keys(value: Any) -> Any:
    """snake_case keys to camelCase, recursively (the agent's events -> the protocol's)."""
    if isinstance(value, dict):
        return {_camel(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


def camel_event(session_id: str, event: dict[str, Any]) -> dict[str, Any]:
    """An agent event as a `myAgent/chat/event` payload."""
    payload = camel_keys(event)
    if payload.get("kind") == "tool_call" and not isinstance(payload.get("arguments"), str):
        import json

        payload["arguments"] = json.dumps(payload.get("arguments"))
    return {"sessionId": session_id, **payload}


def usage_summary(agent: Any) -> SessionUsage:
    """Session totals in protocol shape."""
    usage = agent.usage
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    cached = int(getattr(usage, "cached_tokens", 0) or 0)
    return {
        "promptTokens": prompt,
        "completionTokens": int(getattr(usage, "completion_tokens", 0) or 0),
        "cachedTokens": cached,
        "requests": int(getattr(usage, "requests", 0) or 0),
        "cacheHitRate": cached / prompt if prompt else 0.0,
    }


def _error_code(exc: Exception) -> int:
    kind = getattr(exc, "kind", "")
    if kind == "config":
        return NO_MODEL
    if kind == "invalid":
        return INVALID_PARAMS
    return ENDPOINT_FAILED


class ChatManager:
    """All chat sessions of the server, keyed by session id."""

    def __init__(self, ls: MyAgentServer) -> None:
        self.ls = ls
        self.sessions: dict[str, ChatSession] = {}
        self._executor: ThreadPoolExecutor | None = None

    @property
    def executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="my-agent-chat")
        return self._executor

    def get(self, session_id: str) -> ChatSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid(f"unknown chat session: {session_id[:100]!r}")
        return session

    def snapshots(self, folder: Path, target: str) -> list[tuple[str, frozenset[str]]]:
        folder = norm_path(folder)
        out = []
        for session in list(self.sessions.values()):
            if session.store is not None and session.folder.path == folder:
                out.append((session.id, frozenset(session.store.snapshot_entries(target))))
        return out

    async def start(self, folder: FolderState) -> ChatSession:
        """A new session with a freshly frozen snapshot (memory off on untrusted folders)."""
        settings = self.ls.config
        if not settings.model:
            raise RequestError(
                NO_MODEL,
                "No model configured: set the `myAgent.model` setting or MY_AGENT_MODEL.",
            )
        session_id = uuid.uuid4().hex
        memory = settings.is_trusted(folder.path)
        ls = self.ls

        def on_write(target: str, before: str | None, record: Any) -> None:
            session = holder.get("session")
            journal_error = None
            if session is not None:
                session.written.add(record.id)
                if session.store is not None:
                    journal_error = session.store.journal_error
            ls.memory.note_write(
                folder.path, target, before, record, "agent", session_id, journal_error
            )

        holder: dict[str, ChatSession] = {}

        def on_event(event: dict[str, Any]) -> None:
            session = holder.get("session")
            if session is not None and session.turn is not None:
                ls.post(self._forward, session, session.turn, event)

        def build() -> tuple[Any, Any]:
            from my_agent_core.agent import Agent, build_client

            client = build_client(base_url=settings.base_url)
            store = None
            if memory:
                store = observed_store(folder.memory_dir, settings, f"agent:{session_id}", on_write)
            agent = Agent(
                model=settings.model,
                client=client,
                memory_dir=False,
                memory_store=store,
                on_event=on_event,
            )
            return agent, store

        try:
            agent, store = await asyncio.get_running_loop().run_in_executor(self.executor, build)
        except RequestError:
            raise
        except Exception as exc:
            if getattr(exc, "kind", None) == "config":
                raise RequestError(NO_MODEL, str(exc)) from exc
            raise
        session = ChatSession(session_id, folder, memory, agent, store)
        holder["session"] = session
        self.sessions[session_id] = session
        self._sessions_changed()
        return session

    def _sessions_changed(self) -> None:
        for callback in list(self.ls.on_sessions_changed):
            try:
                callback()
            except Exception:
                logger.exception("sessions-changed callback failed")

    def _forward(self, session: ChatSession, turn: Turn, event: dict[str, Any]) -> None:
        if not (turn.open and isinstance(event, dict)):
            return
        if event.get("kind") == "memory_changed" and event.get("journal_id") not in session.written:
            return  # a successful call that wrote nothing (e.g. an entry that already existed)
        self.ls.protocol.notify("myAgent/chat/event", camel_event(session.id, event))

    async def send(self, session: ChatSession, message: str) -> ChatSendResult:
        """Run one turn; events stream as notifications, all before this returns."""
        async with session.lock:
            turn = Turn()
            session.turn = turn
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.executor, session.agent.run, message)
            try:
                reply = await asyncio.shield(future)
            except asyncio.CancelledError:
                session.agent.cancel()
                done, _ = await asyncio.wait([future], timeout=CANCEL_WAIT_SECONDS)
                if done and not future.cancelled():
                    future.exception()  # retrieved: AgentCancelled (or the turn's own error)
                turn.open = False
                raise cancelled("chat/send was cancelled") from None
            except Exception as exc:
                turn.open = False
                if getattr(exc, "kind", None) == "cancelled":
                    raise cancelled(str(exc)) from exc
                if isinstance(exc, RequestError):
                    raise
                raise RequestError(_error_code(exc), str(exc)) from exc
            finally:
                turn.open = False
                if session.turn is turn:
                    session.turn = None
            return {"reply": reply, "usage": usage_summary(session.agent)}

    def end(self, session_id: str) -> None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.agent.cancel()
            self._sessions_changed()

    def shutdown(self) -> None:
        """Stop every running turn (worker threads must not keep the process alive after exit)."""
        for session in list(self.sessions.values()):
            session.agent.cancel()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def end_folder(self, folder: Path) -> None:
        """Forget the sessions of a folder that left the workspace."""
        for session_id, session in list(self.sessions.items()):
            if session.folder.path == folder:
                self.end(session_id)


def register(ls: MyAgentServer) -> None:
    """The chat requests."""

    @ls.feature(types.SHUTDOWN)
    def on_shutdown(ls: MyAgentServer, params: Any) -> None:
        ls.chat.shutdown()

    @ls.feature("myAgent/chat/start")
    async def chat_start(ls: MyAgentServer, raw: Any) -> ChatStartResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        session = await ls.chat.start(folder)
        return session.describe()

    @ls.feature("myAgent/chat/send")
    async def chat_send(ls: MyAgentServer, raw: Any) -> ChatSendResult:
        params = to_params(raw)
        session = ls.chat.get(req_str(params, "sessionId"))
        message = req_str(params, "message", non_empty=True)
        return await ls.chat.send(session, message)

    @ls.feature("myAgent/chat/systemPrompt")
    def chat_system_prompt(ls: MyAgentServer, raw: Any) -> SystemPromptResult:
        params = to_params(raw)
        session = ls.chat.get(req_str(params, "sessionId"))
        return {"text": session.agent.system_prompt}

    @ls.feature("myAgent/chat/snapshot")
    def chat_snapshot(ls: MyAgentServer, raw: Any) -> ChatSnapshotResult:
        params = to_params(raw)
        session = ls.chat.get(req_str(params, "sessionId"))
        return session.snapshot()

    @ls.feature("myAgent/chat/end")
    def chat_end(ls: MyAgentServer, raw: Any) -> dict[str, Any]:
        params = to_params(raw)
        ls.chat.end(ls.chat.get(req_str(params, "sessionId")).id)
        return {}

    @ls.feature("myAgent/chat/sessions")
    def chat_sessions(ls: MyAgentServer, raw: Any) -> ChatSessionsResult:
        to_params(raw)
        return {"sessions": [s.describe() for s in ls.chat.sessions.values()]}
