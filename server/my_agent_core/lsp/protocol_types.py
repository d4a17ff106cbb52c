"""The custom `myAgent/*` payloads as TypedDicts: the Python side of `client/src/protocol.ts`.

Names are the wire names (camelCase), so a payload built here is the JSON the client reads; mypy
checks the handlers against them. `docs/protocol.md` documents the semantics. Params arrive raw
and are validated by `params.py` before they are trusted, so the param types describe what a
valid request holds.
"""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = [
    "ApprovalChatEvent",
    "ApprovalKind",
    "ApprovalReason",
    "ApproveParams",
    "ApproveSourceHow",
    "ApproveSourceJson",
    "ApproveSourceKind",
    "CacheDropJson",
    "CacheDropReason",
    "ChatCompactResult",
    "ChatEvent",
    "ChatResumeResult",
    "ChatSendParams",
    "ChatSendResult",
    "ChatSessionsResult",
    "ChatSnapshotResult",
    "ChatStartResult",
    "CommandOutputChatEvent",
    "CompactReason",
    "CompactedChatEvent",
    "ContextFileJson",
    "ContextItem",
    "DeltaChatEvent",
    "DoneChatEvent",
    "EditAction",
    "EntryOriginJson",
    "ErrorChatEvent",
    "ErrorKind",
    "FolderParams",
    "HistoryMessage",
    "JournalEntryJson",
    "MemoryChangedChatEvent",
    "MemoryChangedParams",
    "MemoryEditParams",
    "MemoryEditResult",
    "MemoryLogParams",
    "MemoryLogResult",
    "MemoryStateResult",
    "MemoryToolResult",
    "ProvenanceJson",
    "ProviderErrorChatEvent",
    "RecallChatEvent",
    "RecallGetResult",
    "RecallItemJson",
    "RecallKind",
    "RecallSearchResult",
    "RequestUsage",
    "SessionErrorChatEvent",
    "SessionInfoJson",
    "SessionParams",
    "SessionUsage",
    "SnapshotStore",
    "SourceRefJson",
    "StoreStateJson",
    "SystemPromptResult",
    "Target",
    "ToolCallChatEvent",
    "ToolCallJson",
    "ToolResultChatEvent",
    "UsageChatEvent",
]

Target = Literal["memory", "user"]
EditAction = Literal["add", "replace", "remove"]
ChangeSource = Literal["agent", "user", "cli", "disk"]


# ---- memory ---------------------------------------------------------------------------------------


class FolderParams(TypedDict, total=False):
    folder: str  # a workspace-folder URI; omitted: the first folder


class _StoreStateRequired(TypedDict):
    target: str
    path: str  # absolute file path
    used: int
    limit: int
    entries: list[str]
    available: bool


class SourceRefJson(TypedDict):
    """A source an agent write may derive from (the journal's provenance)."""

    kind: str  # file | search | listing | command | edit | archive | tool | context_file | ...
    where: str  # README.md:5, a command line, a query (one clean line)
    how: str  # copied (shares a run of words) | read (received in the same turn)


class ProvenanceJson(TypedDict, total=False):
    """Where an agent write in a chat session came from (`memory/provenance.py`)."""

    mode: str  # the myAgent.memory.approval the write was made under
    origin: str  # "user" (no untrusted source: the user's own words) | "untrusted"
    session: str
    title: str
    sources: list[SourceRefJson]  # none: the user's own words
    more: int  # sources not kept
    approved: bool  # the user approved it (absent: nobody was asked)


class _EntryOriginRequired(TypedDict):
    summary: str  # in words: "added 7 Dec by the chat 'Fix the tests' · your own words"
    known: str  # recorded | hand | older | unknown


class EntryOriginJson(_EntryOriginRequired, total=False):
    """Who made one entry and from what, derived from the journal (one per entry, in order)."""

    journalId: str
    author: str
    time: float
    provenance: ProvenanceJson


class StoreStateJson(_StoreStateRequired, total=False):
    """One memory file as it is on disk."""

    error: str  # why the file is unavailable
    journalError: str  # the last edit was saved but could not be recorded in the history
    origins: list[EntryOriginJson]  # parallel to `entries`


class MemoryStateResult(TypedDict):
    """`myAgent/memory/state` (and the `state` of edit/undo results)."""

    folder: str
    trusted: bool
    stores: list[StoreStateJson]


class MemoryEditParams(FolderParams, total=False):
    target: Target
    action: EditAction
    content: str
    oldText: str
    newContent: str


class MemoryEditResult(TypedDict):
    """`myAgent/memory/edit` and `myAgent/memory/undo`."""

    message: str
    state: MemoryStateResult


class MemoryLogParams(FolderParams, total=False):
    limit: int


class _JournalEntryRequired(TypedDict):
    id: str
    time: float  # epoch seconds
    action: str
    target: str
    author: str
    before: str | None
    after: str | None
    summary: str  # the record in words (who, when, from what, approved or not)


class JournalEntryJson(_JournalEntryRequired, total=False):
    provenance: ProvenanceJson  # an agent write in a chat session


class MemoryLogResult(TypedDict):
    entries: list[JournalEntryJson]


class _MemoryChangedRequired(_StoreStateRequired):
    folder: str
    source: str  # ChangeSource


class MemoryChangedParams(_MemoryChangedRequired, total=False):
    """Notification `myAgent/memory/changed`: a store changed, whoever changed it."""

    error: str
    journalError: str
    sessionId: str
    journalId: str
    origins: list[EntryOriginJson]  # parallel to `entries`


# ---- chat -----------------------------------------------------------------------------------------


class SessionParams(TypedDict):
    sessionId: str


class ChatStartResult(TypedDict):
    sessionId: str
    folder: str
    memory: bool


class _Position(TypedDict):
    line: int
    character: int


class _Range(TypedDict):
    start: _Position
    end: _Position


class _ContextRequired(TypedDict):
    uri: str


class ContextItem(_ContextRequired, total=False):
    """An editor's text a turn reads (the active editor or its selection)."""

    range: _Range


class _ChatSendRequired(TypedDict):
    sessionId: str
    message: str


class ChatSendParams(_ChatSendRequired, total=False):
    context: list[ContextItem]


class RequestUsage(TypedDict):
    promptTokens: int
    completionTokens: int
    cachedTokens: int | None


class SessionUsage(RequestUsage):
    requests: int
    cacheHitRate: float | None


class ChatSendResult(TypedDict):
    reply: str
    usage: SessionUsage


# The `myAgent/chat/event` union, member for member the `ChatEvent` of client/src/protocol.ts (a
# test compares the two): `lsp/chat_events.chat_event` builds each one from the agent's event.
# `ErrorKind` spells out `agent.errors.ErrorKind` again on purpose: importing it would load the agent
# package when the server starts; tests/lsp/test_protocol_parity.py checks the two stay the same.
ErrorKind = Literal[
    "agent",
    "config",
    "cancelled",
    "invalid",
    "busy",
    "closed",
    "timeout",
    "connection",
    "http",
    "stream",
    "protocol",
    "context_length",
    "empty_reply",
    "step_limit",
]
ApprovalKind = Literal["edit", "command", "memory"]
ApprovalReason = Literal["user", "setting", "cancelled", "error"]
CompactReason = Literal["threshold", "manual", "context_error"]
CacheDropReason = Literal["compaction", "resume", "model_change", "expired", "unknown"]


class CacheDropJson(TypedDict):
    reason: CacheDropReason
    expected: int
    got: int


class _EventBase(TypedDict):
    sessionId: str


class DeltaChatEvent(_EventBase):
    kind: Literal["delta"]
    text: str


class ToolCallChatEvent(_EventBase):
    kind: Literal["tool_call"]
    callId: str
    name: str
    arguments: str


class ToolResultChatEvent(_EventBase):
    kind: Literal["tool_result"]
    callId: str
    name: str
    ok: bool
    content: str


class _MemoryChangedChatEventRequired(_EventBase):
    kind: Literal["memory_changed"]
    target: str | None  # what the call named: "memory" | "user" for the built-in tool
    action: str | None


class MemoryChangedChatEvent(_MemoryChangedChatEventRequired, total=False):
    journalId: str | None


class _UsageChatEventRequired(_EventBase, RequestUsage):
    kind: Literal["usage"]


class UsageChatEvent(_UsageChatEventRequired, total=False):
    cacheDrop: CacheDropJson


class _DoneChatEventRequired(_EventBase):
    kind: Literal["done"]
    reply: str


class DoneChatEvent(_DoneChatEventRequired, total=False):
    usage: SessionUsage


class _ErrorChatEventRequired(_EventBase):
    kind: Literal["error"]
    message: str


class ErrorChatEvent(_ErrorChatEventRequired, total=False):
    errorKind: ErrorKind


class _ApprovalChatEventRequired(_EventBase):
    kind: Literal["approval"]
    callId: str
    approved: bool
    reason: ApprovalReason


class ApprovalChatEvent(_ApprovalChatEventRequired, total=False):
    approvalKind: ApprovalKind


class CompactedChatEvent(_EventBase):
    kind: Literal["compacted"]
    reason: CompactReason
    before: int
    after: int


class RecallChatEvent(_EventBase):
    kind: Literal["recall"]
    chars: int
    items: int


class ProviderErrorChatEvent(_EventBase):
    kind: Literal["provider_error"]
    provider: str
    message: str


class SessionErrorChatEvent(_EventBase):
    kind: Literal["session_error"]
    message: str


class CommandOutputChatEvent(_EventBase):
    kind: Literal["command_output"]
    callId: str
    stream: Literal["stdout", "stderr"]
    text: str


#: Notification `myAgent/chat/event`.
ChatEvent = (
    DeltaChatEvent
    | ToolCallChatEvent
    | ToolResultChatEvent
    | MemoryChangedChatEvent
    | UsageChatEvent
    | DoneChatEvent
    | ErrorChatEvent
    | ApprovalChatEvent
    | CompactedChatEvent
    | RecallChatEvent
    | ProviderErrorChatEvent
    | SessionErrorChatEvent
    | CommandOutputChatEvent
)


class _ApproveRequired(TypedDict):
    sessionId: str
    callId: str
    kind: ApprovalKind
    title: str
    detail: str


#: What a memory write's text may come from (`memory.provenance.SourceKind`, the same list).
ApproveSourceKind = Literal[
    "file",
    "search",
    "listing",
    "command",
    "edit",
    "archive",
    "tool",
    "context_file",
    "attachment",
    "recall",
    "summary",
    "unindexed",
]
#: `copied`: the write shares a run of words with it; `read`: received in the same turn.
ApproveSourceHow = Literal["copied", "read"]


class _ApproveSourceRequired(TypedDict):
    kind: ApproveSourceKind
    how: ApproveSourceHow
    where: str  # README.md:4, a command line, 'a query' (one clean, bounded line: data)


class ApproveSourceJson(_ApproveSourceRequired, total=False):
    """One place a memory write's text may come from (`ApproveParams.sources`)."""

    quote: str  # the line a copy shares (one clean, bounded line: data)
    path: str  # when `where` is a file's place: the file as the session named it
    line: int  # ... its first line (1-based)
    endLine: int  # ... its last line, for a span


class ApproveParams(_ApproveRequired, total=False):
    """Server -> client request `myAgent/chat/approve`; the answer `{approved: true}` approves."""

    uri: str  # the file an edit or a memory write changes
    newText: str  # its whole proposed text (the client's Open Diff)
    cwd: str  # a command's working folder
    sources: list[ApproveSourceJson]  # a memory write's sources (its detail names them in words)


class SystemPromptResult(TypedDict):
    text: str


class SnapshotStore(TypedDict):
    target: str
    entries: list[str]


class ContextFileJson(TypedDict):
    """A context file (AGENTS.md, ...) frozen into a session's system prompt."""

    name: str
    path: str
    chars: int
    cut: bool
    blocked: bool


class ChatSnapshotResult(ChatStartResult):
    """`myAgent/chat/snapshot`: the entries and context files frozen into a session's prompt."""

    stores: list[SnapshotStore]
    contextFiles: list[ContextFileJson]


class SessionInfoJson(TypedDict):
    """One session of `myAgent/chat/sessions` (persisted, or open here and not yet written)."""

    sessionId: str
    title: str
    created: float  # epoch seconds
    updated: float
    folder: str  # the workspace-folder URI
    messages: int
    memory: bool
    active: bool  # open in this server


class ChatSessionsResult(TypedDict):
    sessions: list[SessionInfoJson]


class ToolCallJson(TypedDict):
    id: str
    name: str
    arguments: str


class _HistoryRequired(TypedDict):
    role: str
    content: str


class HistoryMessage(_HistoryRequired, total=False):
    """One message of a resumed session, as it was sent (the system message is never listed)."""

    name: str
    toolCalls: list[ToolCallJson]
    toolCallId: str


class ChatResumeResult(ChatStartResult):
    """`myAgent/chat/resume`: the session reopened with its history."""

    messages: list[HistoryMessage]


class ChatCompactResult(TypedDict):
    compacted: bool
    before: int
    after: int


# ---- memory for every agent, and recall -------------------------------------------------


class _MemoryToolRequired(TypedDict):
    ok: bool
    content: str  # the tool's answer; on failure "Error: <error>" (what the built-in agent sees)
    state: MemoryStateResult


class MemoryToolResult(_MemoryToolRequired, total=False):
    """`myAgent/memory/tool`: the built-in `memory` tool's result for another agent."""

    error: str  # set when `ok` is false: the tool's message


RecallKind = Literal["turn", "removed", "replaced", "note"]


class _RecallItemRequired(TypedDict):
    id: str
    kind: RecallKind
    text: str
    time: float | int | str  # epoch seconds (0: unknown), or a plug-in's ISO date
    score: float


class RecallItemJson(_RecallItemRequired, total=False):
    """One archived item (a past turn, an entry taken out of memory, a plug-in's note)."""

    source: str  # a person's label: "turn", "removed from MEMORY.md (replace)", ...


class RecallSearchResult(TypedDict):
    """`myAgent/recall/search`; `provider: None` when the memory provider is off (or the folder untrusted)."""

    provider: str | None
    items: list[RecallItemJson]


class RecallGetResult(TypedDict):
    item: RecallItemJson
