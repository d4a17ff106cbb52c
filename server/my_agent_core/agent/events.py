"""The events of a chat session, as typed records: what `Agent(on_event=...)` receives.

Each event is a plain dict (JSON data, snake_case keys) typed by a `TypedDict` whose `kind` is a
`Literal`, and `AgentEvent` is their union: mypy rejects an event built with a missing field or an
unknown kind, and a listener that narrows on `event["kind"]` sees exactly the fields of that kind.
The language server turns each one into its wire form in ONE place (`lsp/chat_events.chat_event`,
whose exhaustive match makes a new kind a type error there until it has a wire form), and
`tests/lsp/test_protocol_parity.py` keeps the wire union equal to `client/src/protocol.ts`.

Who emits what (see docs/agent.md "Events"): the agent's loop (`delta`, `tool_call`, `tool_result`,
`memory_changed`, `usage`, `compacted`, `done`, `error`), its memory provider (`recall`,
`provider_error`), its session recorder (`session_error`) and, in the editor, the tools' approval
gate (`approval`, through the gate's decision listener) and `run_command`'s live output
(`command_output`, through the workspace tools' output listener).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypedDict, get_args

from ..approval import ApprovalKind
from .compaction.summary import CompactionReason
from .errors import ErrorKind
from .usage import CacheDropRecord, UsageSummary

__all__ = [
    "EVENT_KINDS",
    "AgentEvent",
    "ApprovalEvent",
    "ApprovalOutcome",
    "CommandOutputEvent",
    "CompactedEvent",
    "DeltaEvent",
    "DoneEvent",
    "ErrorEvent",
    "EventCallback",
    "EventKind",
    "MemoryChangedEvent",
    "ProviderErrorEvent",
    "RecallEvent",
    "SessionErrorEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "UsageEvent",
]

#: Why an approval ended as it did, as the transcript shows it (a gate's other reasons, such as a
#: timeout, are reported as `error`).
ApprovalOutcome = Literal["user", "setting", "cancelled", "error"]


class DeltaEvent(TypedDict):
    """A piece of the reply text, as it streams."""

    kind: Literal["delta"]
    text: str


class ToolCallEvent(TypedDict):
    """The model called a tool; `arguments` is the raw JSON text it streamed."""

    kind: Literal["tool_call"]
    call_id: str
    name: str
    arguments: str


class ToolResultEvent(TypedDict):
    """A tool call's result; `content` is exactly what the model reads (`Error: ...` on failure)."""

    kind: Literal["tool_result"]
    call_id: str
    name: str
    ok: bool
    content: str


class MemoryChangedEvent(TypedDict):
    """A successful `memory` call that wrote; `target` / `action` as the call named them (None when
    it did not), `journal_id` the journal record of the write."""

    kind: Literal["memory_changed"]
    call_id: str
    target: str | None
    action: str | None
    journal_id: str | None


class _UsageEventRequired(TypedDict):
    kind: Literal["usage"]
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None  # None: the provider reports nothing about its cache


class UsageEvent(_UsageEventRequired, total=False):
    """One request's tokens (compaction requests too); `cache_drop` when the cache read less than
    an extension of the previous request should have."""

    cache_drop: CacheDropRecord


class CompactedEvent(TypedDict):
    """The older turns became a summary; `before` / `after` count the messages after the system one."""

    kind: Literal["compacted"]
    reason: CompactionReason
    before: int
    after: int


class RecallEvent(TypedDict):
    """This turn's user message carried `chars` characters of recalled memory (`items` items)."""

    kind: Literal["recall"]
    chars: int
    items: int


class ProviderErrorEvent(TypedDict):
    """The memory provider broke or could not start; the session goes on without it (once)."""

    kind: Literal["provider_error"]
    provider: str
    message: str


class SessionErrorEvent(TypedDict):
    """The session cannot be saved right now (a full disk); chat goes on (once per episode)."""

    kind: Literal["session_error"]
    message: str


class DoneEvent(TypedDict):
    """The turn's final reply, and the session's totals."""

    kind: Literal["done"]
    reply: str
    usage: UsageSummary


class ErrorEvent(TypedDict):
    """The turn failed (`run()` raises the matching `AgentError`); the session stays usable."""

    kind: Literal["error"]
    message: str
    errorKind: ErrorKind  # camelCase since the first release: kept for listeners that read it


class CommandOutputEvent(TypedDict):
    """New output of the running `run_command` call `call_id` (live, at most every quarter second;
    its tool result still carries the whole capture): the editor shows it under the command's card."""

    kind: Literal["command_output"]
    call_id: str
    stream: Literal["stdout", "stderr"]
    text: str


class ApprovalEvent(TypedDict):
    """An approval decision of the tools' gate (an edit, a command, a memory write in review mode),
    `call_id` being the tool call it belongs to."""

    kind: Literal["approval"]
    call_id: str
    approval_kind: ApprovalKind
    approved: bool
    reason: ApprovalOutcome


AgentEvent = (
    DeltaEvent
    | ToolCallEvent
    | ToolResultEvent
    | MemoryChangedEvent
    | UsageEvent
    | CompactedEvent
    | RecallEvent
    | ProviderErrorEvent
    | SessionErrorEvent
    | DoneEvent
    | ErrorEvent
    | ApprovalEvent
    | CommandOutputEvent
)
EventKind = Literal[
    "delta",
    "tool_call",
    "tool_result",
    "memory_changed",
    "usage",
    "compacted",
    "recall",
    "provider_error",
    "session_error",
    "done",
    "error",
    "approval",
    "command_output",
]
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)

#: What `Agent(on_event=...)` takes; it is called on the turn's threads (see docs/agent.md).
EventCallback = Callable[[AgentEvent], None]
