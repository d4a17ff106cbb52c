"""The agent: a streaming ReAct loop over an OpenAI-compatible endpoint with a frozen-memory system prompt.

Design rule: within a session each request is a byte-for-byte extension of the previous successful one.
The system prompt and tool schemas are built once per session (and restored verbatim on resume),
messages are plain dicts appended once and never rewritten, and tool-call arguments are stored exactly
as the model streamed them. The one exception is a compaction, which replaces the history once and
keeps the system message. Every message is persisted as it is appended (`sessions/`).

An agent is built from an `AgentConfig` (`config.py` resolves it: model, client, memory folder and
store); `Agent(...)` with the documented keywords is the same thing as `build_agent(AgentConfig(...))`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..memory.render import Attachment, render_attachments
from ..prompt_text import build_system_prompt
from ..tools import Tool, ToolResult, clean_text
from .client import ModelClient, build_client
from .compaction import (
    CompactionReason,
    CompactionResult,
    CompactionSettings,
    SessionCompactor,
    run_compaction,
)
from .config import (
    DEFAULT_MAX_STEPS,
    MEMORY_TOOL_NAME,
    AgentConfig,
    AgentParts,
    CancelEvent,
    MemoryDir,
    resolve,
)
from .errors import AgentCancelled, AgentError, endpoint_error
from .events import AgentEvent, EventCallback, MemoryChangedEvent, UsageEvent
from .messages import Message, assistant_message, text_message, tool_message
from .provider_session import SessionProvider
from .sessions import (
    SessionHeader,
    SessionRecord,
    SessionRecorder,
    SessionStore,
    new_session_id,
    title_of,
)
from .stream import StepResult, StreamCancelled, StreamingRequest, StreamWorker, ToolCallSlot
from .usage import CacheMeter, CachePolicy, LastRequest, TurnUsage, Usage

if TYPE_CHECKING:
    from ..approval import Approver, DecisionListener
    from ..memory.provenance import ApprovalMode
    from ..memory.providers import MemoryManager
    from ..memory.store import MemoryStore
    from ..trust import TaintTracker

__all__ = [
    "DEFAULT_MAX_STEPS",
    "MEMORY_FAILURE_LIMIT",
    "Agent",
    "CancelEvent",
    "build_agent",
    "build_client",
]

log = logging.getLogger(__name__)

MEMORY_FAILURE_LIMIT = 3
_T = TypeVar("_T")

_MEMORY_STOP = (
    "memory is not available for the rest of this turn: {n} memory calls failed. Do not call "
    "`memory` again now; continue your reply to the user without saving."
)
_STEP_LIMIT_NOTE = (
    "\n\n[Note from the agent framework: this was the last tool step of this turn. Reply to the user "
    "now without calling any more tools.]"
)
_CANCELLED_TOOL = "Error: the user cancelled the turn before this tool call ran."


def build_agent(config: AgentConfig) -> Agent:
    """The one way to build an agent: resolve `config`, assemble, start (or resume) its session."""
    return Agent.from_config(config)


class Agent:
    """A chat session with tools and curated memory; see docs/contract.md "Python API: tools and the
    agent" and docs/agent.md for the session, compaction, cache-meter and memory-provider seams."""

    def __init__(
        self,
        model: str | None = None,
        client: ModelClient | None = None,
        memory_dir: MemoryDir = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        max_steps: int = DEFAULT_MAX_STEPS,
        on_event: EventCallback | None = None,
        instructions: str | None = None,
        memory_store: MemoryStore | None = None,
        request_options: dict[str, Any] | None = None,
        *,
        context_block: str | None = None,
        provider: MemoryManager | str | None = None,
        sessions: SessionStore | None = None,
        session_id: str | None = None,
        session_meta: Mapping[str, Any] | None = None,
        resume: SessionRecord | None = None,
        cancel_token: CancelEvent | None = None,
        compaction: CompactionSettings | None = None,
        cache_policy: CachePolicy | None = None,
        clock: Callable[[], float] = time.time,
        memory_tool: Tool | None = None,
        memory_approval: ApprovalMode = "untrusted",
        memory_approver: Approver | None = None,
        on_approval: DecisionListener | None = None,
    ) -> None:
        """The documented keyword form (docs/contract.md): `build_agent(AgentConfig(...))` with
        these options."""
        config = AgentConfig(
            model=model,
            client=client,
            memory_dir=memory_dir,
            tools=tuple(tools),
            max_steps=max_steps,
            on_event=on_event,
            instructions=instructions,
            memory_store=memory_store,
            memory_tool=memory_tool,
            memory_approval=memory_approval,
            memory_approver=memory_approver,
            on_approval=on_approval,
            request_options=request_options,
            context_block=context_block,
            provider=provider,
            sessions=sessions,
            session_id=session_id,
            session_meta=session_meta,
            resume=resume,
            cancel_token=cancel_token,
            compaction=compaction,
            cache_policy=cache_policy,
            clock=clock,
        )
        self._assemble(resolve(config))
        self._open(config.resume, config.session_id)

    @classmethod
    def from_config(cls, config: AgentConfig) -> Agent:
        """An agent from a configuration (`build_agent`)."""
        agent = cls.__new__(cls)
        agent._assemble(resolve(config))
        agent._open(config.resume, config.session_id)
        return agent

    @classmethod
    def resume(
        cls,
        record: SessionRecord,
        *,
        sessions: SessionStore,
        client: ModelClient | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        memory_store: MemoryStore | None = None,
        **kwargs: Any,
    ) -> Agent:
        """Continue a persisted session (`sessions.load(id)`) with its ORIGINAL system prompt, tool
        schemas and history, so the next request extends its last one byte for byte. Tool handlers
        are the current ones, bound by name; `memory_dir` defaults to False (memory comes from
        `memory_store`). SessionBusy when another agent holds the session."""
        kwargs.setdefault("memory_dir", False)
        config = AgentConfig(
            client=client,
            tools=tuple(tools),
            memory_store=memory_store,
            sessions=sessions,
            resume=record,
            **kwargs,
        )
        return cls.from_config(config)

    def _assemble(self, parts: AgentParts) -> None:
        """Take the resolved parts; nothing here reads the disk or the environment."""
        self.model: str | None = parts.model
        self.client = parts.client
        self.max_steps = parts.max_steps
        self.on_event = parts.on_event
        self.instructions = parts.instructions
        self.context_block = parts.context_block
        self.request_options = parts.request_options
        self.session_meta: dict[str, Any] = parts.session_meta
        self.compaction = parts.compaction
        self.cache_policy = parts.cache_policy
        self.cancel_token: CancelEvent = parts.cancel_token
        self._clock = parts.clock
        self._extra_tools = parts.tools
        self.memory_store: MemoryStore | None = parts.memory_store
        self.memory_tool: Tool | None = parts.memory_tool
        #: What untrusted text this session received (rules (a) and (b) of `my_agent_core.trust`):
        #: fed here from the tool results, attachments, recall and context files; None without memory.
        self.trust: TaintTracker | None = parts.trust
        manager = parts.provider
        self.provider = SessionProvider(manager, self._emit) if manager is not None else None
        self._owns_provider = parts.owns_provider
        search = [self.provider.search_tool()] if self.provider is not None else []
        memory = [self.memory_tool] if self.memory_tool is not None else []
        self.tools: list[Tool] = memory + search + self._extra_tools
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
        self._tools_by_name = {t.name: t for t in self.tools}

        self._run_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._run_thread: int | None = None
        self._active_request: StreamingRequest | None = None
        self._worker = StreamWorker()
        self._memory_failures = 0
        self._recorder = SessionRecorder(parts.sessions, self._emit)
        self._closed = False
        self._compactor = SessionCompactor(self.compaction, lambda: self.model)
        self._compaction_turn = TurnUsage()
        self._keep = 0

    def _open(self, resume: SessionRecord | None, session_id: str | None) -> None:
        """Start the session (or resume `resume`), then connect the memory provider."""
        if resume is not None:
            self._resume_session(resume)
        else:
            self._start_session(session_id)
        if self.provider is not None:  # last: a refused resume leaves the store untouched
            self.provider.attach(self.memory_store)

    # --- session -------------------------------------------------------------------------------------

    @property
    def memory_enabled(self) -> bool:
        return self.memory_store is not None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """A copy of the session history as sent (system message first)."""
        return list(self._messages)

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tool schemas this session sends (frozen; restored verbatim on resume)."""
        return list(self._tool_schemas)

    @property
    def sessions(self) -> SessionStore | None:
        """Where this agent's sessions are persisted (None: not persisted, or no longer can be)."""
        return self._recorder.store

    @property
    def persist_error(self) -> str | None:
        """Why the session is not fully on disk right now (a full disk), else None."""
        return self._recorder.error

    @property
    def context_window(self) -> int:
        """The context window this session plans with: learned from an endpoint error, set, or from
        the model table."""
        return self._compactor.window

    def snapshot_entries(self, target: str) -> list[str]:
        """The memory entries frozen into THIS session's system prompt (for a resumed session, the
        ones persisted with it, whatever the files hold now); [] without memory."""
        return list((self._snapshot or {}).get(target, []))

    def _start_session(self, session_id: str | None = None) -> None:
        snapshot_text = None
        self._snapshot: dict[str, list[str]] | None = None
        if self.memory_store is not None:
            self.memory_store.load_from_disk()
            snapshot_text = self.memory_store.format_all_for_system_prompt()
            self._snapshot = {
                target: self.memory_store.snapshot_entries(target) for target in ("memory", "user")
            }
        self.system_prompt: str = build_system_prompt(
            self.instructions, snapshot_text, self.context_block
        )
        offered = [
            t
            for t in self.tools
            if t.name != "memory_search" or (self.provider and self.provider.active)
        ]
        self._set_schemas([t.schema for t in offered])
        self._messages: list[Message] = [{"role": "system", "content": self.system_prompt}]
        self.session_id: str = session_id or new_session_id()
        self.created: float = self._clock()
        self.title: str = ""
        self.usage = Usage()
        self.meter = CacheMeter(self.cache_policy)
        self._compactor.forget()
        self._restart_trust()
        self._recorder.start(self._header)

    def _header(self) -> SessionHeader:
        store = self._recorder.store
        return SessionHeader(
            self.session_id,
            str(store.folder) if store is not None else "",
            self.model or "",
            self.system_prompt,
            self._tool_schemas,
            self.created,
            self._snapshot,
            self.session_meta,
        )

    def _resume_session(self, record: SessionRecord) -> None:
        if self.memory_store is not None:
            self.memory_store.load_from_disk()  # live entries for the tool; the prompt stays as persisted
        header = record.header
        self._snapshot = (
            {k: list(v) for k, v in header.snapshot.items()} if header.snapshot else None
        )
        self.system_prompt = header.system_prompt
        self._set_schemas([dict(schema) for schema in header.tools])
        self._messages = [{"role": "system", "content": self.system_prompt}, *record.messages]
        self.session_id = header.id
        self.created = header.created
        self.title = record.title
        self.session_meta = {**header.meta, **self.session_meta}
        self.usage = Usage.from_totals(record.usage)
        self.meter = CacheMeter(
            self.cache_policy, LastRequest.from_dict(record.last_request), resumed=True
        )
        self._compactor.forget()
        self._restart_trust(record.messages)
        self._recorder.resume(record)

    def _restart_trust(self, history: list[Message] | None = None) -> None:
        """A new session's tracker knows its context files; a resumed one's is rebuilt from the
        history it persisted (so a resume is no way around the policy)."""
        tracker = self.trust
        if tracker is None:
            return
        from ..trust import from_context_block, rebuild  # here: only sessions with memory

        tracker.clear()
        tracker.session_id, tracker.title = self.session_id, self.title or None
        if history is None:
            tracker.receive_all(from_context_block(self.system_prompt), this_turn=False)
        else:
            rebuild(tracker, self.system_prompt, history)

    def _set_schemas(self, schemas: list[dict[str, Any]]) -> None:
        self._tool_schemas: list[dict[str, Any]] = schemas
        self._offered = {
            function.get("name")
            for schema in schemas
            if isinstance(function := schema.get("function"), dict)
        }

    def reset(self) -> None:
        """New session: history cleared, memory reloaded from disk, new snapshot and system prompt.
        The old session stays persisted; the provider gets its history (`on_session_end`)."""
        if self._run_thread == threading.get_ident():
            raise AgentError("reset() cannot be called from inside a running turn.", kind="busy")
        self.cancel()
        with self._run_lock:
            self._end_session()
            self._start_session()

    def close(self) -> None:
        """End the session: the provider gets its history, the session file is released (it stays
        on disk for a later resume). The agent cannot run afterwards."""
        self.cancel()
        with self._run_lock:
            if self._closed:
                return
            self._closed = True
            self._end_session()
            if self.provider is not None:
                self.provider.detach()
                if self._owns_provider:  # the default archive the agent made for itself
                    self.provider.manager.shutdown()

    def _end_session(self) -> None:
        if self.provider is not None:
            self.provider.end_session(self._messages)
        self._recorder.end()

    def spawn_subagent(
        self,
        instructions: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
        max_steps: int | None = None,
        on_event: EventCallback | None = None,
    ) -> Agent:
        """A sub-agent on the same client and model: no memory, no memory tool, no provider, not
        persisted."""
        chosen = list(self._extra_tools if tools is None else tools)
        chosen = [t for t in chosen if getattr(t, "name", None) != MEMORY_TOOL_NAME]
        config = AgentConfig(
            model=self.model,
            client=self.client,
            memory_dir=False,
            tools=chosen,
            max_steps=max_steps or self.max_steps,
            on_event=on_event,
            instructions=instructions,
            request_options=self.request_options,
            compaction=self.compaction,
            cache_policy=self.cache_policy,
        )
        return build_agent(config)

    # --- persistence ---------------------------------------------------------------------------------

    def _commit(self) -> None:
        last = self.meter.last
        self._recorder.commit(
            len(self._messages) - 1,
            self._clock(),
            self.title,
            self.usage.totals(),
            last.as_dict() if last is not None else None,
        )

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        if not self._closed:
            self._recorder.message(self._messages)

    def _rollback(self, keep: int) -> None:
        if keep < len(self._messages):
            del self._messages[keep:]
            self._recorder.cut(keep - 1)

    # --- cancellation --------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the running turn from any thread; `run()` raises AgentCancelled. No-op when idle.
        Sets `cancel_token`, which the workspace tools share (a running command is killed)."""
        with self._state_lock:
            if self._run_thread is None:
                return
            self.cancel_token.set()
            request = self._active_request
        if request is not None:
            request.cancel()

    @property
    def running(self) -> bool:
        return self._run_thread is not None

    async def arun(self, message: str, *, attachments: Sequence[Attachment] = ()) -> str:
        """`run()` in a worker thread; cancelling the awaiting task cancels the turn and waits for it."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, lambda: self.run(message, attachments=attachments))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.wait([future])
            raise

    def _enter(self) -> None:
        if self._closed:
            raise AgentError("This session was closed; start or resume another.", kind="closed")
        if not self._run_lock.acquire(blocking=False):
            raise AgentError("The agent is already running a turn.", kind="busy")
        with self._state_lock:
            self._run_thread = threading.get_ident()
            self.cancel_token.clear()

    def _leave(self) -> None:
        with self._state_lock:
            self._run_thread = None
            self._active_request = None
        self._run_lock.release()

    def _failure(self, exc: BaseException) -> BaseException:
        """The error `run()` raises for `exc` (an event is emitted for agent errors)."""
        error = exc
        if isinstance(exc, StreamCancelled):
            error = AgentCancelled()
        elif not isinstance(exc, AgentError) and isinstance(exc, Exception):
            error = endpoint_error(exc)
        if isinstance(error, AgentError):
            self._emit({"kind": "error", "message": error.message, "errorKind": error.kind})
        return error

    # --- the turn ------------------------------------------------------------------------------------

    def run(self, message: str, *, attachments: Sequence[Attachment] = ()) -> str:
        """Send a user message and loop (model -> tools -> model) until an answer without tool calls.

        `attachments` (editor text: the active file, a selection) go into THIS turn's user message,
        framed as data, never into the system prompt."""
        if not isinstance(message, str) or not message.strip():
            raise AgentError("The message is empty.", kind="invalid")
        reply = self._guarded(lambda turn: self._turn(turn, message, attachments))
        if self.provider is not None:
            self.provider.sync_turn(clean_text(message), reply)
        self._emit({"kind": "done", "reply": reply, "usage": self.usage.summary()})
        return reply

    def _guarded(self, work: Callable[[TurnUsage], _T]) -> _T:
        """Run `work` as one turn: one at a time, cancellable; on failure the history goes back to
        what the provider saw (see docs/agent.md), and either way the session file is committed."""
        self._enter()
        try:
            self._memory_failures = 0
            turn = TurnUsage()
            self.usage.turns.append(turn)
            self._keep = len(self._messages)
            try:
                result = work(turn)
            except BaseException as exc:
                self._rollback(self._keep)
                if len(self._messages) == 1:
                    self.title = ""
                self._commit()
                error = self._failure(exc)
                if error is exc:
                    raise
                raise error from exc
            self._commit()
            return result
        finally:
            self._leave()

    def _turn(self, turn: TurnUsage, message: str, attachments: Sequence[Attachment]) -> str:
        if self._compaction_due():
            self._compact("threshold", turn)
        self._keep = len(self._messages)
        if not self.title:
            self.title = title_of(message)
        tracker = self.trust
        if tracker is not None:
            tracker.title = self.title or None
            tracker.begin_turn()  # the user's own message: rule (a) starts over
        self._append(text_message("user", self._user_content(message, attachments)))
        return self._loop(turn)

    def _user_content(self, message: str, attachments: Sequence[Attachment]) -> str:
        """The user message as sent: the typed text, the attachments, the recalled items (the two
        last are untrusted text received in this turn)."""
        parts = [message]
        tracker = self.trust
        if attachments:
            parts.append(render_attachments(list(attachments)))
            if tracker is not None:
                from ..trust import from_attachment  # here: only sessions with memory

                tracker.receive_all(from_attachment(item) for item in attachments if item.text)
        if self.provider is not None:
            entries = self.snapshot_entries("memory") + self.snapshot_entries("user")
            recalled = self.provider.recall(clean_text(message), entries)
            parts.append(recalled)
            if recalled and tracker is not None:
                from ..trust import from_recall_block  # here: only sessions with memory

                tracker.receive_all(from_recall_block(recalled))
        return "\n\n".join(part for part in parts if part)

    def _loop(self, turn: TurnUsage) -> str:
        empty_retries = 0
        step = 0
        compacted_for_context = False
        while True:
            self._check_cancel()
            if step and self._compaction_due():  # a long tool-heavy turn
                self._compact("threshold", turn)
            step += 1
            try:
                result = self._request(turn, self._messages)
            except AgentError as exc:
                if exc.kind != "context_length":
                    raise
                if compacted_for_context:
                    raise AgentError(
                        f"{exc.message} (the session was already compacted in this turn: the latest "
                        "messages alone do not fit the model's context window)",
                        kind="context_length",
                        status=exc.status,
                        context_limit=exc.context_limit,
                    ) from exc
                compacted_for_context = True
                self._compactor.learn(exc, self._messages, self._tool_schemas)
                if not self._compact("context_error", turn).compacted:
                    raise AgentError(
                        f"{exc.message} (compacting the session would not help: the latest "
                        "messages alone are too long for the model's context window; send a "
                        "shorter message or attach less)",
                        kind="context_length",
                        status=exc.status,
                        context_limit=exc.context_limit,
                    ) from exc
                step -= 1
                continue
            self._check_cancel()
            if not result.tool_calls:
                if not result.text.strip():
                    if empty_retries < 1:  # same request again: a provider hiccup, still cached
                        empty_retries += 1
                        step -= 1
                        continue
                    raise AgentError(
                        "The model returned an empty reply (no text and no tool calls) twice.",
                        kind="empty_reply",
                    )
                self._append(text_message("assistant", result.text))
                return result.text
            if step > self.max_steps:
                raise AgentError(
                    f"Step limit reached: the model still called tools after {self.max_steps} "
                    "steps. Ask it to continue in a new message.",
                    kind="step_limit",
                )
            self._append(assistant_message(result))
            last_step = step == self.max_steps
            for index, call in enumerate(result.tool_calls):
                if self.cancel_token.is_set():
                    for rest in result.tool_calls[index:]:
                        self._append(tool_message(rest.id, _CANCELLED_TOOL))
                    self._keep = len(self._messages)
                    raise AgentCancelled()
                text = self._call_tool(call).as_message_text()
                if last_step:
                    text += _STEP_LIMIT_NOTE
                self._append(tool_message(call.id, text))
            self._keep = len(self._messages)

    def _check_cancel(self) -> None:
        if self.cancel_token.is_set():
            raise AgentCancelled()

    def _request(
        self, turn: TurnUsage, messages: list[Message], *, main: bool = True
    ) -> StepResult:
        """One streamed request of `messages` with the session's tool schemas. `main`: a request of
        the session's own history (its figures drive compaction, its text streams as `delta`)."""
        kwargs: dict[str, Any] = {"stream_options": {"include_usage": True}}
        kwargs.update(self.request_options)  # e.g. temperature; stream_options=None drops it
        kwargs.update(model=self.model, messages=list(messages), stream=True)
        if kwargs["stream_options"] is None:  # for endpoints that reject it
            del kwargs["stream_options"]
        if self._tool_schemas:
            kwargs["tools"] = self._tool_schemas
        on_text: Callable[[str], None] = (
            (lambda text: self._emit({"kind": "delta", "text": text})) if main else _no_text
        )
        request = StreamingRequest(lambda: self.client.chat.completions.create(**kwargs), on_text)
        with self._state_lock:
            self._active_request = request
            cancelled = self.cancel_token.is_set()
        if cancelled:
            raise AgentCancelled()
        self._worker.submit(request)
        try:
            try:
                result = request.wait()
            except (StreamCancelled, AgentError):
                raise
            except Exception as exc:  # classified here, so the loop can act on a context error
                raise endpoint_error(exc) from exc
        finally:
            with self._state_lock:
                self._active_request = None
            if request.cancelled:  # its worker may still be blocked in I/O: use a fresh one
                self._worker = StreamWorker()
        if main:
            # What a successful request carried stays in the history, whatever happens next in
            # this turn: the next request must extend it byte for byte.
            self._keep = max(self._keep, len(kwargs["messages"]))
        for number, call in enumerate(result.tool_calls):
            if not call.id:  # providers that send none: unique within the session, deterministic
                call.id = f"call_{len(self._messages)}_{number}"
        self.usage.count_request(turn)
        usage = result.usage
        if usage is not None:
            self.usage.record(turn, usage)
            drop = self.meter.observe(usage, self.model or "", self._clock())
            event: UsageEvent = {
                "kind": "usage",
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cached_tokens": usage.cached_tokens,
            }
            if drop is not None:
                self.usage.cache_drops.append(drop)
                event["cache_drop"] = drop.as_dict()
            self._emit(event)
        if main:
            tokens = usage.prompt_tokens if usage is not None else None
            self._compactor.observed(messages, self._tool_schemas, tokens)
        return result

    # --- compaction ----------------------------------------------------------------------------------

    @property
    def has_memory_tool(self) -> bool:
        return self.memory_tool is not None and MEMORY_TOOL_NAME in self._offered

    def compaction_request(self, messages: list[Message]) -> StepResult:
        return self._request(self._compaction_turn, messages, main=False)

    def compaction_memory_call(self, call: ToolCallSlot) -> str:
        return self._call_tool(call).as_message_text()

    def _compaction_due(self) -> bool:
        return self._compactor.due()

    def compact(self) -> CompactionResult:
        """Compact now (the Compact button, `/compact`): the model may save lasting facts, then the
        older turns become its summary. `compacted` False when there is nothing older to compact."""
        if self._run_thread == threading.get_ident():
            raise AgentError("compact() cannot be called from inside a running turn.", kind="busy")
        return self._guarded(lambda turn: self._compact("manual", turn))

    def _compact(self, reason: CompactionReason, turn: TurnUsage) -> CompactionResult:
        """Replace the older turns by the model's summary (see compaction.py); the system message
        stays the same object, the latest turns stay verbatim."""
        before = len(self._messages) - 1
        plan = self._compactor.plan(reason, self._messages, self._tool_schemas)
        if plan is None:
            return CompactionResult(False, reason, before, before)
        self._compaction_turn = turn
        system = self._messages[0]
        if reason == "context_error":
            view = self._compactor.summary_view(self._messages, plan.cut, self._tool_schemas)
        else:
            view = list(self._messages)
        try:
            history, summary, saved = run_compaction(self, view, plan, system=system)
        except AgentError as exc:
            if exc.kind != "context_length" or reason == "context_error":
                raise
            # The estimate was off: the whole history no longer fits; summarise the older part.
            self._compactor.learn(exc, self._messages, self._tool_schemas)
            view = self._compactor.summary_view(self._messages, plan.cut, self._tool_schemas)
            history, summary, saved = run_compaction(self, view, plan, system=system)
        # Messages of this turn that no request has carried yet (the user message whose first
        # request was refused) are still this turn's: a failure rolls them back after a compaction too.
        unsent = min(max(0, len(self._messages) - self._keep), len(plan.recent))
        self._messages = history
        self._keep = len(history) - unsent
        self._compactor.forget()
        self.meter.note_compaction()
        result = CompactionResult(True, reason, before, len(history) - 1, saved, summary)
        if self.trust is not None and summary:
            from ..trust.sources import from_summary  # here: only sessions with memory

            self.trust.receive(from_summary(summary), this_turn=False)
        self._recorder.compacted(reason, before, result.after, history[1:])
        self._emit({"kind": "compacted", "reason": reason, "before": before, "after": result.after})
        return result

    # --- tools ---------------------------------------------------------------------------------------

    def _call_tool(self, call: ToolCallSlot) -> ToolResult:
        self._emit(
            {
                "kind": "tool_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
        found = self._tools_by_name.get(call.name)
        offered = self._offered
        if found is not None and call.name not in offered:
            found = None  # a handler the session never offered (a resumed session's schemas)
        record_before = None
        if found is None:
            available = ", ".join(n for n in self._tools_by_name if n in offered) or "none"
            result = ToolResult(
                ok=False,
                error=f"Unknown tool `{call.name}`. Available tools: {available}.",
            )
        elif call.name == MEMORY_TOOL_NAME and self._memory_failures >= MEMORY_FAILURE_LIMIT:
            result = ToolResult(ok=False, error=_MEMORY_STOP.format(n=self._memory_failures))
        else:
            store = self.memory_store
            record_before = store.last_record if store is not None else None
            result = found.execute(call.arguments)
            if call.name == MEMORY_TOOL_NAME and not result.ok:
                self._memory_failures += 1
        content = result.as_message_text()
        if self.trust is not None and call.name != MEMORY_TOOL_NAME:
            from ..trust import from_tool_result  # here: only sessions with memory

            self.trust.receive(from_tool_result(call.name, call.arguments, content))
        self._emit(
            {
                "kind": "tool_result",
                "call_id": call.id,
                "name": call.name,
                "ok": result.ok,
                "content": content,
            }
        )
        if self.provider is not None:
            self.provider.check()
        if result.ok and found is not None and found is self.memory_tool:
            store = self.memory_store
            record = store.last_record if store is not None else None
            if record is record_before:
                return result  # a successful call that wrote nothing (the entry already existed)
            self._emit(_memory_changed(call, record.id if record is not None else None))
        return result

    def _emit(self, event: AgentEvent) -> None:
        callback = self.on_event
        if callback is None:
            return
        try:
            callback(event)
        except Exception:  # a broken listener must not break the turn
            log.exception("on_event callback failed for %s", event["kind"])


def _no_text(_text: str) -> None:
    """Compaction requests stream no reply text to the user."""


def _memory_changed(call: ToolCallSlot, journal_id: str | None) -> MemoryChangedEvent:
    """The `memory_changed` event of a memory call that wrote: its target and action as named."""
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    target, action = args.get("target"), args.get("action")
    return {
        "kind": "memory_changed",
        "call_id": call.id,
        "target": target if isinstance(target, str) else None,
        "action": action if isinstance(action, str) else None,
        "journal_id": journal_id,
    }
