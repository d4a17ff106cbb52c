"""Compaction: a long session's older turns become a summary the model writes, the cache survives.

The provider's prompt cache needs every request to extend the previous one. Compaction is the one
place where that is given up on purpose, once: the requests that prepare it (the memory-save step and
the summary request) still extend the session's history, and the new history starts with the SAME
system message, then the summary (framed as data by the renderer), then the latest turns verbatim,
cut only at a message that is not a tool result, so an assistant tool call never loses its results.
From the next request on, requests extend each other again.

This module decides what to keep (`plan_compaction`), how big messages are (`TokenEstimate`), what
the windows of well-known models are (`context_window_for`) and runs the two steps through a small
seam (`CompactionHost`) that the agent implements.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ...memory.render import SUMMARY_TAG, cut, quote, render_summary
from ..messages import Message, assistant_message, text_message, tool_message
from ..stream import StepResult, ToolCallSlot

__all__ = [
    "DEFAULT_COMPACT_AT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_KEEP_SHARE",
    "CompactionHost",
    "CompactionPlan",
    "CompactionReason",
    "CompactionResult",
    "CompactionSettings",
    "TokenEstimate",
    "context_window_for",
    "plan_compaction",
    "run_compaction",
]

CompactionReason = Literal["threshold", "manual", "context_error"]

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_COMPACT_AT = 0.8
#: The latest turns kept verbatim fill at most this share of the window.
DEFAULT_KEEP_SHARE = 0.25
MEMORY_TOOL = "memory"

# Context windows (tokens) of well-known models, first match wins; names are matched anywhere in the
# lower-cased model id, so provider prefixes (`openai/gpt-4o`, `accounts/x/models/llama-v3p1`) work.
# Local servers (llama.cpp, Ollama, vLLM) run with whatever window they were started with: set
# `contextWindow` for them, or let a context-length error teach the session the real figure.
_WINDOWS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(pattern), window)
    for pattern, window in (
        (r"gpt-4\.1", 1_047_576),
        (r"gpt-5", 400_000),
        (r"gpt-4o|chatgpt-4o", 128_000),
        (r"gpt-4-turbo|gpt-4-(?:1106|0125)", 128_000),
        (r"gpt-4-32k", 32_768),
        (r"gpt-4", 8_192),
        (r"gpt-3\.5-turbo", 16_385),
        (r"gpt-oss", 131_072),
        (r"(?:^|[/:_-])o[134](?:-|$)", 200_000),
        (r"deepseek", 128_000),
        (r"claude", 200_000),
        (r"gemini", 1_048_576),
        (r"qwen-?(?:turbo|long)|qwen2\.5-turbo", 1_000_000),
        (r"qwen-?plus|qwen3-?(?:coder|max)", 131_072),
        (r"qwen", 32_768),
        (r"llama-?3\.[1-3]|llama-?v3p[1-3]|llama3\.[1-3]", 131_072),
        (r"llama-?3|llama-?v3", 8_192),
        (r"llama-?2", 4_096),
        (r"codestral", 256_000),
        (r"mistral-(?:large|medium|small)|ministral|pixtral", 131_072),
        (r"mistral|mixtral", 32_768),
        (r"gemma-?3", 131_072),
        (r"gemma", 8_192),
        (r"kimi|moonshot", 131_072),
        (r"glm-?4", 131_072),
    )
)


def context_window_for(model: str | None) -> int:
    """The context window of a well-known model, else `DEFAULT_CONTEXT_WINDOW` (128k)."""
    name = (model or "").lower()
    for pattern, window in _WINDOWS:
        if pattern.search(name):
            return window
    return DEFAULT_CONTEXT_WINDOW


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """`myAgent.chat.contextWindow` (0: from the model table) and `compactAt` (a share), and the
    share of the window the verbatim latest turns may fill. Junk falls back to the defaults."""

    context_window: int = 0
    compact_at: float = DEFAULT_COMPACT_AT
    keep_share: float = DEFAULT_KEEP_SHARE

    def window(self, model: str | None) -> int:
        if isinstance(self.context_window, int) and self.context_window >= 256:
            return self.context_window
        return context_window_for(model)

    def share(self) -> float:
        ok = isinstance(self.compact_at, (int, float)) and 0.1 <= self.compact_at <= 0.98
        return float(self.compact_at) if ok else DEFAULT_COMPACT_AT

    def keep(self) -> float:
        ok = isinstance(self.keep_share, (int, float)) and 0.05 <= self.keep_share <= 0.6
        return float(self.keep_share) if ok else DEFAULT_KEEP_SHARE


def message_chars(message: Message) -> int:
    """The size of a message as it is sent (its JSON), the unit the estimate scales."""
    return len(json.dumps(message, ensure_ascii=False))


class TokenEstimate:
    """Tokens per character, learned from the provider's own count of the last request (a CJK
    character is about one token, English prose four characters per token; 1/4 before any figure)."""

    def __init__(self, ratio: float = 0.25) -> None:
        self.ratio = ratio

    def calibrate(self, chars: int, tokens: int) -> None:
        if chars > 0 and tokens > 0:
            self.ratio = min(2.0, max(0.05, tokens / chars))

    def of(self, messages: Sequence[Message]) -> int:
        return int(sum(message_chars(m) for m in messages) * self.ratio) + 1


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """Where the history is cut: `older` (after the system message) becomes the summary, `recent`
    is kept verbatim. `cut` indexes the full history (the system message is 0)."""

    cut: int
    older: list[Message]
    recent: list[Message]


def _boundaries(history: Sequence[Message]) -> tuple[list[int], list[int]]:
    """Indices where the kept part may start: user messages (whole turns), and any message that is
    not a tool result (an assistant step of a long turn). Index 1 is never one: something must be
    left to summarise."""
    turns = [i for i in range(2, len(history)) if history[i].get("role") == "user"]
    steps = [i for i in range(2, len(history)) if history[i].get("role") != "tool"]
    return turns, steps


def plan_compaction(
    history: Sequence[Message],
    *,
    keep_tokens: int,
    estimate: TokenEstimate,
    max_tokens: int | None = None,
) -> CompactionPlan | None:
    """Where to cut: the earliest whole turn from which the rest fits `keep_tokens`; else the latest
    whole turn if it fits `max_tokens` (default: `keep_tokens`); else the earliest step of the
    latest turn that fits either; else the latest step alone. None when nothing older is left."""
    turns, steps = _boundaries(history)
    if not steps:
        return None
    sizes = [message_chars(m) for m in history]
    suffix = [0] * (len(history) + 1)
    for i in range(len(history) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + sizes[i]
    ratio = max(estimate.ratio, 1e-9)
    preferred = keep_tokens / ratio
    ceiling = max(keep_tokens, max_tokens if max_tokens is not None else keep_tokens) / ratio
    chosen = next((i for i in turns if suffix[i] <= preferred), None)
    if chosen is None and turns and suffix[turns[-1]] <= ceiling:
        chosen = turns[-1]
    if chosen is None:
        chosen = next((i for i in steps if suffix[i] <= preferred), None)
    if chosen is None:
        chosen = next((i for i in steps if suffix[i] <= ceiling), steps[-1])
    return CompactionPlan(chosen, list(history[1:chosen]), list(history[chosen:]))


def trim_to_fit(
    view: list[Message], *, max_tokens: int, estimate: TokenEstimate
) -> tuple[list[Message], int]:
    """`view` (system message first) without its oldest messages until it fits `max_tokens`, cut
    only before a user message; how many messages were left out."""
    if estimate.of(view) <= max_tokens:
        return view, 0
    starts = [i for i in range(2, len(view)) if view[i].get("role") == "user"]
    for start in starts:
        candidate = [view[0], *view[start:]]
        if estimate.of(candidate) <= max_tokens:
            return candidate, start - 1
    if starts:
        return [view[0], *view[starts[-1] :]], starts[-1] - 1
    return view, 0


SAVE_NOTE = (
    "[Note from the agent framework: this conversation has grown long, so its older turns will be "
    "replaced by a summary before the next step. If they hold lasting facts that your memory does "
    "not have yet (the user's preferences and corrections, how this project is built, tested and "
    "laid out, conventions, lessons learned), save them now with the `memory` tool, following its "
    "rules. Only `memory` works in this step; if there is nothing worth keeping, reply "
    '"Nothing to save."]'
)
_NOT_NOW = (
    "Error: `{name}` is not available now: this step is only for saving lasting facts with "
    "`memory` before the conversation is summarised. Do not call it in this step."
)
_SUMMARY_REQUEST = (
    "[Note from the agent framework: write the summary of the conversation so far now. It replaces "
    "{scope} in the history, so keep everything needed to go on: what the user wants (the task and "
    "its goal, their preferences), decisions made and why, facts learned about the project and its "
    "environment, files read or changed (paths, and what changed), commands run and their outcome, "
    "errors met, and open questions or next steps. Be specific and concise, in plain text; write "
    "for yourself, not the user. Do not call tools.]"
)
ACKNOWLEDGEMENT = "Understood: I have my summary of the earlier conversation and continue from it."
_FALLBACK = (
    "(The model wrote no summary when this conversation was compacted. What the user said in the "
    "{count} earlier messages, in order:)"
)
_FALLBACK_ITEM_CHARS = 400


def _scope(plan: CompactionPlan) -> str:
    if not plan.recent:
        return "all earlier messages"
    first = plan.recent[0]
    if first.get("role") == "user" and isinstance(first.get("content"), str):
        opening = quote(first["content"].strip().split("\n", 1)[0], 80, what="the message")
        return (
            f"every message before the user message that begins {opening} (that message and "
            "what follows it stay verbatim)"
        )
    return (
        "every message before your latest tool step of the current turn (that step and what "
        "follows it stay verbatim)"
    )


def is_compaction_output(message: Message) -> bool:
    """True for the summary message and the acknowledgement a compaction put into the history."""
    content = message.get("content")
    if not isinstance(content, str):
        return False
    if message.get("role") == "user":
        return content.startswith(f"<{SUMMARY_TAG}>\n")
    return message.get("role") == "assistant" and content == ACKNOWLEDGEMENT


def fallback_summary(older: Sequence[Message]) -> str:
    """A summary without the model: the user's messages of the older turns, each cut short."""
    lines = [_FALLBACK.format(count=len(older))]
    for message in older:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, str) and content.strip():
            shown, was_cut = cut(" ".join(content.split()), _FALLBACK_ITEM_CHARS)
            lines.append(f"- {shown}{' …' if was_cut else ''}")
    return "\n".join(lines)


class CompactionHost(Protocol):
    """What a compaction needs from the agent: a request with the session's own tool schemas (no
    reply text is streamed to the user), and the execution of one `memory` call."""

    @property
    def has_memory_tool(self) -> bool: ...

    def compaction_request(self, messages: list[Message]) -> StepResult: ...

    def compaction_memory_call(self, call: ToolCallSlot) -> str: ...


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What `compact()` did: `before` / `after` count the messages after the system message."""

    compacted: bool
    reason: CompactionReason
    before: int
    after: int
    saved: int = 0  # memory calls the save step executed
    summary: str = ""


def _save_step(host: CompactionHost, view: list[Message]) -> tuple[list[Message], int]:
    """The step in which the model may save lasting facts: only `memory` calls run."""
    note = text_message("user", SAVE_NOTE)
    result = host.compaction_request([*view, note])
    if not result.tool_calls:
        return [note, text_message("assistant", result.text or "Nothing to save.")], 0
    step = [note, assistant_message(result)]
    saved = 0
    for call in result.tool_calls:
        if call.name == MEMORY_TOOL:
            step.append(tool_message(call.id, host.compaction_memory_call(call)))
            saved += 1
        else:
            step.append(tool_message(call.id, _NOT_NOW.format(name=call.name or "this tool")))
    return step, saved


def run_compaction(
    host: CompactionHost,
    view: list[Message],
    plan: CompactionPlan,
    *,
    system: Message,
) -> tuple[list[Message], str, int]:
    """The memory-save step (when the session has `memory`), the summary request, and the new
    history: `system`, the summary, an acknowledgement when the kept part starts with a user
    message, then `plan.recent`. Returns (new history, summary text, memory calls run).
    `view` is what the two requests extend: the whole history, or its older part when the whole
    no longer fits the window."""
    step: list[Message] = []
    saved = 0
    if host.has_memory_tool:
        step, saved = _save_step(host, view)
    ask = text_message("user", _SUMMARY_REQUEST.format(scope=_scope(plan)))
    result = host.compaction_request([*view, *step, ask])
    summary = result.text.strip() or fallback_summary(plan.older)
    history = [system, text_message("user", render_summary(summary, covered=len(plan.older)))]
    if not plan.recent or plan.recent[0].get("role") == "user":
        history.append(text_message("assistant", ACKNOWLEDGEMENT))
    history.extend(plan.recent)
    return history, summary, saved
