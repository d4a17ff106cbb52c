"""One chat session's events -> `myAgent/chat/event` notifications, in order, at the right time.

The agent (and its tools, its approvals, its memory provider) emit snake_case events from worker
threads; each is posted to the event loop in the order emitted and sent camel-cased while the request
it belongs to (a `chat/send` or `chat/compact`) is open, so every event of a request reaches the
client before its answer. Notices that arrive between requests (a provider that could not start, a
session that could not be saved) wait for the next request instead of being lost; late events of a
request that already answered are dropped.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .approvals import approval_event
from .client_link import LoopServer

if TYPE_CHECKING:
    from my_agent_core.coding_tools import ApprovalRequest, Decision

__all__ = ["EventRouter", "Turn", "camel_event", "camel_keys"]

logger = logging.getLogger(__name__)

EVENT = "myAgent/chat/event"
#: Events worth keeping for the next request when none is open when they happen.
_KEPT_BETWEEN_TURNS = frozenset({"provider_error", "session_error"})
_MAX_KEPT = 20
_SNAKE = re.compile(r"_([a-z0-9])")


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
        payload["arguments"] = json.dumps(payload.get("arguments"))
    return {"sessionId": session_id, **payload}


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
    _kept: list[dict[str, Any]] = field(default_factory=list)

    # ----- from any thread -------------------------------------------------------------------------
    def emit(self, event: dict[str, Any]) -> None:
        """The agent's `on_event`: forwarded in order on the event loop."""
        if event.get("kind") == "tool_call" and isinstance(event.get("call_id"), str):
            self.current_call = event["call_id"]
        self.server.post(self._forward, self.turn, event)

    def on_decision(self, request: ApprovalRequest, decision: Decision) -> None:
        """Every approval decision (a settings pre-approval too) -> an `approval` event."""
        self.emit(approval_event(self.current_call, request, decision))

    def on_command_output(self, stream: str, text: str) -> None:
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

    def _forward(self, turn: Turn | None, event: dict[str, Any]) -> None:
        if turn is None or not turn.open:
            if event.get("kind") in _KEPT_BETWEEN_TURNS and len(self._kept) < _MAX_KEPT:
                self._kept.append(event)
            return
        if event.get("kind") == "memory_changed" and event.get("journal_id") not in self.written:
            return  # a successful call that wrote nothing (e.g. an entry that already existed)
        self._send(event)

    def _send(self, event: dict[str, Any]) -> None:
        try:
            self.server.protocol.notify(EVENT, camel_event(self.session_id, event))
        except Exception:
            logger.exception("could not send a chat event")
