"""The one text the model reads for a change the user did not approve: a workspace edit or
command, or a memory write that asked first.

The user's note is data, not instructions: it is quoted, bounded and neutralised with the
renderer's own quoting, never inlined. It lives beside the renderer (and below the workspace
tools, which import it) for that reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from my_agent_core.approval import Decision
from my_agent_core.memory.render import cut, neutralize, quote

__all__ = ["MEMORY_REFUSAL", "NOTE_CHARS", "WORKSPACE_REFUSAL", "RefusalWords", "refusal"]

#: Characters of a note (the user's words, an error message) quoted in a refusal.
NOTE_CHARS = 300


@dataclass(frozen=True)
class RefusalWords:
    """What a refusal says happened (`outcome`) and what the model should do after a decline, a
    stopped turn, or an approval that failed (no answer, an error)."""

    outcome: str
    declined: str
    cancelled: str
    failed: str


WORKSPACE_REFUSAL = RefusalWords(
    outcome="nothing was done",
    declined="Do not retry the same call: ask the user what they want instead, or do something else.",
    cancelled="Do not retry it; wait for the user's next message.",
    failed="Do not retry the same call now; tell the user what you wanted to do.",
)
MEMORY_REFUSAL = RefusalWords(
    outcome="nothing was saved",
    declined="Do not retry it nor save the same fact another way; carry on with your reply.",
    cancelled="Do not retry it.",
    failed="Do not retry it now; carry on with your reply.",
)


def refusal(decision: Decision, what: str, words: RefusalWords = WORKSPACE_REFUSAL) -> str:
    """The tool result for a change that did not get the user's approval; `what` names it ("the
    command `make`", "the memory change (add to MEMORY.md)").

    The note is data, not instructions: the user's words come quoted (`The user said: "..."`),
    an error's in parentheses, both cut at NOTE_CHARS and with any line that could pass for prompt
    structure neutralised, so a long or odd note cannot take over the message around it."""
    if decision.reason == "cancelled":
        return (
            f"The turn was cancelled before {what} was approved; {words.outcome}. {words.cancelled}"
        )
    if decision.reason == "user":
        note = quote(decision.note, NOTE_CHARS, what="their note") if decision.note else ""
        said = f" The user said: {note}" if note else ""
        return f"The user declined {what}; {words.outcome}.{said} {words.declined}"
    shown, was_cut = cut(decision.note, NOTE_CHARS)
    why = f" ({neutralize(shown)}{' …' if was_cut else ''})" if decision.note else ""
    return f"{what[:1].upper()}{what[1:]} was not approved{why}; {words.outcome}. {words.failed}"
