"""Agent errors: what `run()` raises when a turn cannot finish, with enough detail for the caller to act.

`kind` is one of `ErrorKind` (a closed set: mypy checks every producer and every consumer, such as
the language server's mapping to JSON-RPC codes in `lsp/chat.py`: `config` -32001, `invalid`
-32602, `cancelled` -32800, the others -32002). The message always names the cause (status and
provider message for HTTP errors). An endpoint that says the prompt is longer than its context
window gets `kind == "context_length"` (and `context_limit`, the window it named, when it named
one): the agent compacts and retries once.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args

__all__ = [
    "ERROR_KINDS",
    "AgentCancelled",
    "AgentConfigError",
    "AgentError",
    "ErrorKind",
    "context_limit_of",
    "endpoint_error",
    "is_context_length_message",
]

# How endpoints say "the prompt does not fit": OpenAI (code context_length_exceeded, "maximum context
# length"), vLLM and DeepSeek ("maximum context length ... reduce the length of the messages"),
# llama.cpp ("exceeds the available context size", type exceed_context_size_error), SGLang
# ("longer than the model's context length"), Anthropic ("prompt is too long"), Ollama and others.
_CONTEXT_PHRASES = re.compile(
    r"context_length_exceeded|exceed_context_size|maximum context length|"
    r"exceeds? (?:the )?(?:available |maximum )?context (?:size|length|window)|"
    r"context (?:length|window|size) (?:exceeded|is exceeded|overflow|full)|"
    r"longer than the model'?s? (?:maximum )?context length|too long to fit into the model|"
    r"prompt is too long|input is too long|reduce the length of the messages|"
    r"too many (?:input |prompt )?tokens|input length exceeds",
    re.IGNORECASE,
)
#: Why a turn failed. `agent`: unclassified; `config`: no model or endpoint; `cancelled`: stopped;
#: `invalid`: a bad call (an empty message); `busy`: a turn is running; `closed`: the session ended;
#: the endpoint's: `timeout`, `connection`, `http`, `stream` (an error mid-stream), `protocol` (an
#: answer we cannot read), `context_length` (the prompt does not fit); the loop's: `empty_reply`,
#: `step_limit`.
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
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)

_LIMIT_PATTERNS = (
    re.compile(r"maximum context length is (\d[\d,]*)", re.IGNORECASE),
    re.compile(r"context size \((\d[\d,]*) tokens?\)", re.IGNORECASE),
    re.compile(r"context length (?:is |of |\()(\d[\d,]*)", re.IGNORECASE),
    re.compile(r"tokens? > (\d[\d,]*) maximum", re.IGNORECASE),
    re.compile(r'"n_ctx"\s*:\s*(\d+)'),
)


class AgentError(RuntimeError):
    """A turn failed; the session stays usable. `kind` classifies the cause, `status` is the HTTP status."""

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind = "agent",
        status: int | None = None,
        context_limit: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status
        self.context_limit = context_limit


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


def is_context_length_message(text: str) -> bool:
    """True when an endpoint's error text says the prompt is longer than the context window."""
    return bool(_CONTEXT_PHRASES.search(text))


def context_limit_of(text: str) -> int | None:
    """The context window (tokens) an error text names, if it names one."""
    for pattern in _LIMIT_PATTERNS:
        match = pattern.search(text)
        if match:
            value = int(match.group(1).replace(",", ""))
            if value > 0:
                return value
    return None


def _full_body(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, (dict, list)):
        return json.dumps(body, ensure_ascii=False)[:4000]
    return str(body or "")[:4000]


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
        provider = _provider_message(exc)
        everything = f"{provider} {_full_body(exc)}"
        context = exc.status_code in (400, 413, 422, 500) and is_context_length_message(everything)
        return AgentError(
            f"The model endpoint answered HTTP {exc.status_code}: {provider}",
            kind="context_length" if context else "http",
            status=exc.status_code,
            context_limit=context_limit_of(everything) if context else None,
        )
    if isinstance(exc, openai.APIError):
        provider = _provider_message(exc)
        everything = f"{provider} {_full_body(exc)}"
        context = is_context_length_message(everything)
        return AgentError(
            f"The model endpoint reported an error mid-stream: {provider}",
            kind="context_length" if context else "stream",
            context_limit=context_limit_of(everything) if context else None,
        )
    return AgentError(
        f"Unexpected error while talking to the model endpoint: {type(exc).__name__}: {exc}",
        kind="protocol",
    )
