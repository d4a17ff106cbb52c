"""A session's taint rebuilt from what it persisted, so resuming a session is no way around it.

A resumed session holds its system prompt (with the context files it froze) and every message as
sent: tool results follow the assistant message that called them, and a user message carries the
attachments and recalled items the agent appended to it. Replaying them in order gives the tracker
the state the live session had: rule (a) holds the sources received since the last user message,
rule (b) every source the history still shows (a compaction's summary stands for the older ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from my_agent_core.memory.render import SUMMARY_TAG

from .sources import (
    block_items,
    from_attachment_block,
    from_context_block,
    from_recall_block,
    from_summary,
    from_tool_result,
)
from .taint import TaintTracker

__all__ = ["MEMORY_TOOL", "rebuild"]

MEMORY_TOOL = "memory"


def rebuild(
    tracker: TaintTracker, system_prompt: str, messages: Iterable[Mapping[str, Any]]
) -> None:
    """Feed `tracker` the untrusted text of a persisted session (system message excluded)."""
    tracker.receive_all(from_context_block(system_prompt), this_turn=False)
    calls: dict[str, tuple[str, str]] = {}
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "user":
            if text.startswith(f"<{SUMMARY_TAG}>"):
                for item in block_items(text, SUMMARY_TAG):
                    tracker.receive(from_summary(item.text), this_turn=False)
                continue
            tracker.begin_turn()
            tracker.receive_all(from_attachment_block(text))
            tracker.receive_all(from_recall_block(text))
        elif role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping) and isinstance(call.get("id"), str):
                    name, arguments = function.get("name"), function.get("arguments")
                    calls[call["id"]] = (
                        name if isinstance(name, str) else "",
                        arguments if isinstance(arguments, str) else "",
                    )
        elif role == "tool":
            call_id = message.get("tool_call_id")
            name, arguments = calls.get(call_id if isinstance(call_id, str) else "", ("", ""))
            if name != MEMORY_TOOL:
                tracker.receive(from_tool_result(name, arguments, text))
