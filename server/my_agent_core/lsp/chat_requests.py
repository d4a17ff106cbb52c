"""The `myAgent/chat/*` requests (docs/protocol.md): validated here, served by `ls.chat`.

Registering them loads nothing of the chat: `ls.chat` (lsp/chat.py, the agent, openai) is built on
the first chat request, so the server's first answers do not wait for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .params import opt_str, req_str, to_params
from .protocol_types import (
    ChatCompactResult,
    ChatResumeResult,
    ChatSendResult,
    ChatSessionsResult,
    ChatSnapshotResult,
    ChatStartResult,
    SystemPromptResult,
)

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = ["register"]


def register(ls: MyAgentServer) -> None:
    """The chat requests."""

    @ls.feature(types.SHUTDOWN)
    def on_shutdown(ls: MyAgentServer, params: Any) -> None:
        if ls.chat_started:
            ls.chat.shutdown()

    @ls.feature("myAgent/chat/start")
    async def chat_start(ls: MyAgentServer, raw: Any) -> ChatStartResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        session = await ls.chat.start(folder)
        return session.describe()

    @ls.feature("myAgent/chat/send")
    async def chat_send(ls: MyAgentServer, raw: Any) -> ChatSendResult:
        from .attachments import parse_context  # here: loads the renderer (start-up time)

        params = to_params(raw)
        session = ls.chat.get(req_str(params, "sessionId"))
        message = req_str(params, "message", non_empty=True)
        context = parse_context(params.get("context"))
        return await ls.chat.send(session, message, context)

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
    async def chat_end(ls: MyAgentServer, raw: Any) -> dict[str, Any]:
        params = to_params(raw)
        await ls.chat.end(ls.chat.get(req_str(params, "sessionId")).id)
        return {}

    @ls.feature("myAgent/chat/sessions")
    async def chat_sessions(ls: MyAgentServer, raw: Any) -> ChatSessionsResult:
        params = to_params(raw)
        return {"sessions": await ls.chat.listing(opt_str(params, "folder"))}

    @ls.feature("myAgent/chat/resume")
    async def chat_resume(ls: MyAgentServer, raw: Any) -> ChatResumeResult:
        params = to_params(raw)
        session = await ls.chat.resume(req_str(params, "sessionId", non_empty=True))
        return session.history()

    @ls.feature("myAgent/chat/compact")
    async def chat_compact(ls: MyAgentServer, raw: Any) -> ChatCompactResult:
        params = to_params(raw)
        return await ls.chat.compact(ls.chat.get(req_str(params, "sessionId")))

    @ls.feature("myAgent/chat/delete")
    async def chat_delete(ls: MyAgentServer, raw: Any) -> dict[str, Any]:
        params = to_params(raw)
        await ls.chat.delete(req_str(params, "sessionId", non_empty=True))
        return {}
