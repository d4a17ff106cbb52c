"""Agent errors: what `run()` raises when a turn cannot finish, with enough detail for the caller to act.

The language server maps `kind == "config"` to -32001, `kind == "cancelled"` to -32800 and the endpoint
kinds to -32002; the message always names the cause (status and provider message for HTTP errors).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["AgentCancelled", "AgentConfigError", "AgentError", "endpoint_error"]


class AgentError(RuntimeError):
    """A turn failed; the session stays usable. `kind` classifies the cause, `status` is the HTTP status."""

    def __init__(self, message: str, *, kind: str = "agent", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status


class AgentConfigError(AgentError):
    """No model or no endpoint/key configured: nothing was sent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="config")


class AgentCancelled(AgentError):
    """The running turn was stopped by `Agent.cancel()` (or a cancelled `arun`)."""

    def __init__(self, message: str = "The turn was cancelled.") -> None:
        super().__init__(message, kind="cancelled")


def _provider_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        return json.dumps(body, ensure_ascii=False)[:500]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return str(getattr(exc, "message", "") or exc)


def _url(exc: Any) -> str:
    try:
        return str(exc.request.url)
    except Exception:
        return "the model endpoint"


def endpoint_error(exc: BaseException) -> AgentError:
    """Translate an SDK/transport exception into an `AgentError` naming the status and provider message."""
    import openai  # already imported by whoever built the client

    if isinstance(exc, AgentError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        return AgentError(f"The model endpoint timed out ({_url(exc)}).", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {type(cause).__name__}: {cause}" if cause else ""
        return AgentError(f"Cannot reach the model endpoint {_url(exc)}{detail}", kind="connection")
    if isinstance(exc, openai.APIStatusError):
        return AgentError(
            f"The model endpoint answered HTTP {exc.status_code}: {_provider_message(exc)}",
            kind="http",
            status=exc.status_code,
        )
    if isinstance(exc, openai.APIError):
        return AgentError(
            f"The model endpoint reported an error mid-stream: {_provider_message(exc)}",
            kind="stream",
        )
    return AgentError(
        f"Unexpected error while talking to the model endpoint: {type(exc).__name__}: {exc}",
        kind="protocol",
    )
