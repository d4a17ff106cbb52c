"""Persisted chat sessions as the editor sees them: one `SessionStore` per trusted folder, and the
protocol shapes of a listing (`myAgent/chat/sessions`) and of a resumed history (`chat/resume`).

Only trusted folders have a store: a session of an untrusted folder is neither written nor read (a
cloned repository's `.my_agent_core/sessions/` is never looked at), and a session file my-agent did
not write for this user on this machine (not owner-only, or without this machine's signature: see
agent/sessions/signing.py) is refused by the store itself: listed with its reason as the title,
`chat/resume` answered -32602.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .protocol_types import HistoryMessage, SessionInfoJson, ToolCallJson

if TYPE_CHECKING:
    from my_agent_core.agent import SessionInfo, SessionStore

    from .settings import Settings

__all__ = ["history_json", "info_json", "meta_memory", "open_session_store"]

logger = logging.getLogger(__name__)

DAMAGED_TITLE = "(this chat cannot be reopened: {error})"


def open_session_store(folder: Path, settings: Settings) -> SessionStore:
    """The folder's session store with the current retention settings (cheap: it holds no state)."""
    from my_agent_core.agent import SessionStore  # here: the agent loads off the event loop

    return SessionStore(
        folder,
        max_count=settings.chat.max_sessions,
        max_age_days=settings.chat.max_age_days,
    )


def meta_memory(meta: Mapping[str, Any]) -> bool:
    """Whether a persisted session had memory (sessions of the terminal persist no flag: they do)."""
    value = meta.get("memory")
    return value if isinstance(value, bool) else True


def info_json(info: SessionInfo, folder_uri: str, *, active: bool) -> SessionInfoJson:
    """A listed session; a damaged one says why in its title (it stays on disk, untouched)."""
    title = info.title
    if info.error:
        title = DAMAGED_TITLE.format(error=" ".join(info.error.split())[:160])
    return {
        "sessionId": info.id,
        "title": title,
        "created": int(info.created),
        "updated": int(info.updated),
        "folder": folder_uri,
        "messages": info.messages,
        "memory": meta_memory(info.meta),
        "active": active,
    }


def history_json(messages: Iterable[Mapping[str, Any]]) -> list[HistoryMessage]:
    """A session's messages as sent (system message excluded by the caller) in protocol shape."""
    out: list[HistoryMessage] = []
    for message in messages:
        role = message.get("role")
        if not isinstance(role, str) or role == "system":
            continue
        content = message.get("content")
        item: HistoryMessage = {"role": role, "content": _text(content)}
        name = message.get("name")
        if isinstance(name, str):
            item["name"] = name
        calls = [_call(call) for call in message.get("tool_calls") or [] if isinstance(call, dict)]
        if calls:
            item["toolCalls"] = calls
        call_id = message.get("tool_call_id")
        if isinstance(call_id, str):
            item["toolCallId"] = call_id
        out.append(item)
    return out


def _call(call: Mapping[str, Any]) -> ToolCallJson:
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    arguments = function.get("arguments")
    return {
        "id": str(call.get("id") or ""),
        "name": str(function.get("name") or ""),
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
    }


def _text(content: object) -> str:
    """Message content as text (None for an assistant's tool-call step; parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
