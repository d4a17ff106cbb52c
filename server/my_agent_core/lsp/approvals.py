"""The chat's Approver: nothing changes without the user, who answers in the editor.

Before an edit, a command (or, in review mode, a memory write) the tool's worker thread sends the
client `myAgent/chat/approve` and waits. Only `{approved: true}` approves; `false`, an error, a
malformed answer or no answer before the turn is stopped (the request is then cancelled with
`$/cancelRequest`) is a refusal. Every decision, a settings pre-approval too, becomes an `approval`
event of the transcript.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pygls.exceptions import JsonRpcException

from .client_link import ClientCancelled, ClientLink, ClientTimeout
from .params import to_plain
from .protocol_types import ApproveParams, ApproveSourceJson
from .uris import path_to_uri

if TYPE_CHECKING:
    from my_agent_core.agent.events import ApprovalEvent, ApprovalOutcome
    from my_agent_core.approval import ApprovalSource
    from my_agent_core.coding_tools import ApprovalRequest, CancelToken, Decision

__all__ = ["APPROVE", "LspApprover", "approval_event", "approve_params"]

logger = logging.getLogger(__name__)

APPROVE = "myAgent/chat/approve"


def approve_params(session_id: str, call_id: str, request: ApprovalRequest) -> ApproveParams:
    """The `myAgent/chat/approve` params of a request (docs/protocol.md)."""
    params: ApproveParams = {
        "sessionId": session_id,
        "callId": call_id,
        "kind": request.kind,
        "title": request.title,
        "detail": request.detail,
    }
    if request.path is not None:
        params["uri"] = path_to_uri(request.path)
    if request.new_text is not None:
        params["newText"] = request.new_text
    if request.cwd is not None:
        params["cwd"] = str(request.cwd)
    if request.sources:
        params["sources"] = [_source_json(source) for source in request.sources]
    return params


def _source_json(source: ApprovalSource) -> ApproveSourceJson:
    """One source of a memory approval on the wire (absent fields: not known)."""
    item: ApproveSourceJson = {"kind": source.kind, "how": source.how, "where": source.where}
    if source.quote is not None:
        item["quote"] = source.quote
    if source.path is not None:
        item["path"] = source.path
    if source.line is not None:
        item["line"] = source.line
    if source.end_line is not None:
        item["endLine"] = source.end_line
    return item


def approval_event(call_id: str, request: ApprovalRequest, decision: Decision) -> ApprovalEvent:
    """The agent-style (snake_case) `approval` event of a decision (`chat_events.chat_event` gives
    its wire form)."""
    return {
        "kind": "approval",
        "call_id": call_id,
        "approval_kind": request.kind,
        "approved": decision.approved,
        "reason": _outcome(decision),
    }


def _outcome(decision: Decision) -> ApprovalOutcome:
    """The reasons the protocol knows; anything else a gate reports (a timeout) is an error."""
    reason = decision.reason
    if reason == "timeout":
        return "error"
    return reason


class LspApprover:
    """Asks the user through the client; blocks the tool's worker thread until they answer."""

    def __init__(
        self,
        link: ClientLink,
        session_id: str,
        current_call: Callable[[], str],
        cancel: CancelToken,
    ) -> None:
        self._link = link
        self._session_id = session_id
        self._current_call = current_call
        self._cancel = cancel

    def approve(self, request: ApprovalRequest) -> Decision:
        from my_agent_core.coding_tools import Decision  # here: start-up time

        params = approve_params(self._session_id, self._current_call(), request)
        try:
            answer = self._link.request(APPROVE, params, cancel=self._cancel)
        except ClientCancelled:
            return Decision.deny("cancelled", "the turn was stopped while the approval waited")
        except ClientTimeout as exc:
            return Decision.deny("error", str(exc))
        except JsonRpcException as exc:
            logger.info("chat/approve answered an error: %s", exc)
            return Decision.deny("error", f"the editor answered an error: {exc.message}")
        answer = to_plain(answer)
        if isinstance(answer, dict) and answer.get("approved") is True:
            return Decision.allow("user")
        if isinstance(answer, dict) and answer.get("approved") is False:
            return Decision.deny("user")
        return Decision.deny("error", "the editor gave no decision")
