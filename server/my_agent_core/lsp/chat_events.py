"""One chat session's events -> `myAgent/chat/event` notifications, in order, at the right time.

The agent (and its tools, its approvals, its memory provider) emit typed snake_case events
(`agent/events.py`) from worker threads; each is posted to the event loop in the order emitted and
sent, in its wire form (`chat_event`: the protocol's `ChatEvent` union), while the request it belongs
to (a `chat/send` or `chat/compact`) is open, so every event of a request reaches the client before
its answer. Notices that arrive between requests (a provider that could not start, a
session that could not be saved) wait for the next request instead of being lost; late events of a
request that already answered are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .approvals import approval_event
from .client_link import LoopServer
from .protocol_types import CacheDropJson, ChatEvent, SessionUsage, UsageChatEvent

if TYPE_CHECKING:
    from my_agent_core.agent.events import AgentEvent
    from my_agent_core.agent.usage import CacheDropRecord, UsageSummary
    from my_agent_core.coding_tools import ApprovalRequest, Decision

__all__ = ["EventRouter", "Turn", "chat_event", "session_usage"]

logger = logging.getLogger(__name__)

EVENT = "myAgent/chat/event"
#: Events worth keeping for the next request when none is open when they happen.
_KEPT_BETWEEN_TURNS = frozenset({"provider_error", "session_error"})
_MAX_KEPT = 20


def session_usage(usage: UsageSummary) -> SessionUsage:
    """Session totals in protocol shape (`cachedTokens` / `cacheHitRate` null when unknown)."""
    return {
        "promptTokens": usage["prompt_tokens"],
        "completionTokens": usage["completion_tokens"],
        "cachedTokens": usage["cached_tokens"],
        "requests": usage["requests"],
        "cacheHitRate": usage["cache_hit_rate"],
    }


def _cache_drop(drop: CacheDropRecord) -> CacheDropJson:
    return {"reason": drop["reason"], "expected": drop["expected"], "got": drop["got"]}


def chat_event(session_id: str, event: AgentEvent) -> ChatEvent:
    """An agent event as its `myAgent/chat/event` payload: the one place the two unions meet (a
    new kind on either side is a type error here until both agree)."""
    sid = session_id
    if event["kind"] == "delta":
        return {"sessionId": sid, "kind": "delta", "text": event["text"]}
    if event["kind"] == "tool_call":
        return {
            "sessionId": sid,
            "kind": "tool_call",
            "callId": event["call_id"],
            "name": event["name"],
            "arguments": event["arguments"],
        }
    if event["kind"] == "tool_result":
        return {
            "sessionId": sid,
            "kind": "tool_result",
            "callId": event["call_id"],
            "name": event["name"],
            "ok": event["ok"],
            "content": event["content"],
        }
    if event["kind"] == "memory_changed":
        return {
            "sessionId": sid,
            "kind": "memory_changed",
            "target": event["target"],
            "action": event["action"],
            "journalId": event["journal_id"],
        }
    if event["kind"] == "usage":
        usage: UsageChatEvent = {
            "sessionId": sid,
            "kind": "usage",
            "promptTokens": event["prompt_tokens"],
            "completionTokens": event["completion_tokens"],
            "cachedTokens": event["cached_tokens"],
        }
        if "cache_drop" in event:
            usage["cacheDrop"] = _cache_drop(event["cache_drop"])
        return usage
    if event["kind"] == "compacted":
        return {
            "sessionId": sid,
            "kind": "compacted",
            "reason": event["reason"],
            "before": event["before"],
            "after": event["after"],
        }
    if event["kind"] == "recall":
        return {
            "sessionId": sid,
            "kind": "recall",
            "chars": event["chars"],
            "items": event["items"],
        }
    if event["kind"] == "provider_error":
        return {
            "sessionId": sid,
            "kind": "provider_error",
            "provider": event["provider"],
            "message": event["message"],
        }
    if event["kind"] == "session_error":
        return {"sessionId": sid, "kind": "session_error", "message": event["message"]}
    if event["kind"] == "done":
        return {
            "sessionId": sid,
            "kind": "done",
            "reply": event["reply"],
            "usage": session_usage(event["usage"]),
        }
    if event["kind"] == "error":
        return {
            "sessionId": sid,
            "kind": "error",
            "message": event["message"],
            "errorKind": event["errorKind"],
        }
    if event["kind"] == "approval":
        return {
            "sessionId": sid,
            "kind": "approval",
            "callId": event["call_id"],
            "approvalKind": event["approval_kind"],
            "approved": event["approved"],
            "reason": event["reason"],
        }
    if event["kind"] == "command_output":
        return {
            "sessionId": sid,
            "kind": "command_output",
            "callId": event["call_id"],
            "stream": event["stream"],
            "text": event["text"],
        }
    # No fall-through: mypy narrows `event` to nothing here, and a kind without a branch above
    # is a "missing return" error.


@dataclass
class Turn:
    """One request of a session (`chat/send`, `chat/compact`): its events go out while it is open."""

    open: bool = True


@dataclass
class EventRouter:
    """The event hub of one session: the agent's `on_event`, the tools' `on_decision` and
    `on_output`, the memory provider's `on_error`, and the current tool call (the `callId` of an
    approval or of a command's output)."""

    server: LoopServer
    session_id: str
    current_call: str = ""
    turn: Turn | None = None
    written: set[str] = field(default_factory=set)  # journal ids this session's store wrote
    provider_broken: Callable[[], bool] = lambda: False
    _kept: list[AgentEvent] = field(default_factory=list)

    # ----- from any thread -------------------------------------------------------------------------
    def emit(self, event: AgentEvent) -> None:
        """The agent's `on_event`: forwarded in order on the event loop."""
        if event["kind"] == "tool_call":
            self.current_call = event["call_id"]
        self.server.post(self._forward, self.turn, event)

    def on_decision(self, request: ApprovalRequest, decision: Decision) -> None:
        """Every approval decision (a settings pre-approval too) -> an `approval` event."""
        self.emit(approval_event(self.current_call, request, decision))

    def on_command_output(self, stream: Literal["stdout", "stderr"], text: str) -> None:
        """run_command's live output -> a `command_output` event of the running call, so the chat
        shows it under the command's card while it runs (the tool result still carries it all)."""
        self.emit(
            {"kind": "command_output", "call_id": self.current_call, "stream": stream, "text": text}
        )

    def on_provider_error(self, provider: str, message: str) -> None:
        """The memory manager's notices; a provider that BROKE is reported by the agent itself
        (`provider_error` from its SessionProvider), so it is not reported twice."""
        if self.provider_broken():
            return
        self.emit({"kind": "provider_error", "provider": provider, "message": message})

    # ----- on the event loop -----------------------------------------------------------------------
    def open_turn(self) -> Turn:
        """A request starts: its events go out from now on, after the notices kept meanwhile."""
        turn = Turn()
        self.turn = turn
        kept, self._kept = self._kept, []
        for event in kept:
            self._send(event)
        return turn

    def close_turn(self, turn: Turn) -> None:
        turn.open = False
        if self.turn is turn:
            self.turn = None

    def _forward(self, turn: Turn | None, event: AgentEvent) -> None:
        if turn is None or not turn.open:
            if event["kind"] in _KEPT_BETWEEN_TURNS and len(self._kept) < _MAX_KEPT:
                self._kept.append(event)
            return
        if event["kind"] == "memory_changed" and event["journal_id"] not in self.written:
            return  # a successful call that wrote nothing (e.g. an entry that already existed)
        self._send(event)

    def _send(self, event: AgentEvent) -> None:
        try:
            self.server.protocol.notify(EVENT, chat_event(self.session_id, event))
        except Exception:
            logger.exception("could not send a chat event")
