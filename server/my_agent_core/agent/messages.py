"""The chat messages the agent sends, built in one place so identical content gives identical bytes.

Messages are plain dicts in the order the SDK serialises them; once appended to a session they are
never modified (the provider's prompt cache depends on it). Text that came from a model or a tool is
made valid Unicode before it enters a message (`clean_text`), or every later request would fail.
"""

from __future__ import annotations

from typing import Any

from ..tools import clean_text
from .stream import StepResult

__all__ = ["Message", "assistant_message", "text_message", "tool_message"]

Message = dict[str, Any]


def assistant_message(result: StepResult) -> Message:
    """The assistant turn of a response with tool calls (`content` null when it had no text);
    arguments stay exactly as streamed."""
    return {
        "role": "assistant",
        "content": result.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in result.tool_calls
        ],
    }


def tool_message(call_id: str, text: str) -> Message:
    """A tool result: valid text whatever the tool returned."""
    return {"role": "tool", "tool_call_id": call_id, "content": clean_text(text)}


def text_message(role: str, text: str) -> Message:
    """A user or assistant message of plain text."""
    return {"role": role, "content": clean_text(text)}
