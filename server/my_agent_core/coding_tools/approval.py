"""Nothing changes without the user: the Approver seam, the settings that pre-approve, and the gate.

Every edit and every command goes through `ApprovalGate.decide`: a setting may pre-approve it, a set
cancel token refuses it, otherwise the `Approver` (the editor's Approve / Deny card, the terminal's
y/N prompt, a test's stub) answers. A failing approver is a refusal, never a crash. `refusal` is
the one text the model reads for a change that was not approved (a workspace edit or command, a
memory write in review mode): the user's note is quoted, bounded and neutralised, never inlined.
"""

from __future__ import annotations

import fnmatch
import logging
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from .seams import CancelToken

if TYPE_CHECKING:
    from my_agent_core.memory.provenance import How, SourceKind

__all__ = [
    "MEMORY_REFUSAL",
    "NOTE_CHARS",
    "WORKSPACE_REFUSAL",
    "ApprovalGate",
    "ApprovalKind",
    "ApprovalReason",
    "ApprovalRequest",
    "ApprovalSource",
    "Approver",
    "Decision",
    "DecisionListener",
    "RefusalWords",
    "command_is_preapproved",
    "refusal",
]

log = logging.getLogger(__name__)

ApprovalKind = Literal["edit", "command", "memory"]
ApprovalReason = Literal["user", "setting", "cancelled", "error", "timeout"]

# A command line with any of these is never pre-approved: it could chain, redirect or substitute
# another command behind an allowed prefix ("git status; curl ... | sh").
_SHELL_METACHARACTERS = frozenset(";&|<>$`\n\r(){}\\")


@dataclass(frozen=True)
class ApprovalSource:
    """One place a memory write's text may come from, as the approval lists it (display data from
    the session: `where` and `quote` are bounded, one-line, neutralised).

    `where` names it as the journal does (`README.md:4`, a command line, `'query'`); `quote` is the
    line a copy shares; `path` and `line` / `end_line` are set when `where` is a file's place
    (`README.md:4`, `src/app.py:1-40`), so a client can open it."""

    kind: SourceKind
    how: How
    where: str
    quote: str | None = None
    path: str | None = None
    line: int | None = None
    end_line: int | None = None


@dataclass(frozen=True)
class ApprovalRequest:
    """What the user is asked to approve (`myAgent/chat/approve` carries these fields).

    `detail` is a unified diff for an edit, the command line for a command. Edits also carry the
    real `path`, its `relpath` and the complete `new_text`; commands carry `command` and `cwd`. A
    memory write the trust policy asks about also lists its `sources` (the same ones its `detail`
    names in words before the diff).
    """

    kind: ApprovalKind
    title: str
    detail: str
    path: Path | None = None
    relpath: str | None = None
    new_text: str | None = None
    command: str | None = None
    cwd: Path | None = None
    sources: tuple[ApprovalSource, ...] = ()


@dataclass(frozen=True)
class Decision:
    """The answer: approved or not, why, and an optional note for the model (the user's words, an
    error message)."""

    approved: bool
    reason: ApprovalReason
    note: str = ""

    @classmethod
    def allow(cls, reason: ApprovalReason = "user", note: str = "") -> Decision:
        return cls(True, reason, note)

    @classmethod
    def deny(cls, reason: ApprovalReason = "user", note: str = "") -> Decision:
        return cls(False, reason, note)


class Approver(Protocol):
    """Asks the user. May block the tool's worker thread until the user answers or the turn is
    cancelled (then answer `Decision.deny("cancelled")`); may raise (taken as a refusal)."""

    def approve(self, request: ApprovalRequest) -> Decision: ...


DecisionListener = Callable[[ApprovalRequest, Decision], None]

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
    # Here: the scanner's tables load only when a refusal carries a note (a terminal at start-up
    # imports this module).
    from my_agent_core.memory.render import cut, neutralize, quote

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


def command_is_preapproved(command: str, patterns: Sequence[str]) -> bool:
    """True when `command` is a simple command line matching one of `patterns` (`*` wildcards,
    whole line, words compared after shell-style splitting so spacing and quoting do not matter)."""
    if not patterns or any(ch in _SHELL_METACHARACTERS for ch in command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    line = " ".join(words)
    for pattern in patterns:
        try:
            wanted = " ".join(shlex.split(pattern))
        except ValueError:
            wanted = pattern.strip()
        if wanted and fnmatch.fnmatchcase(line, wanted):
            return True
    return False


class ApprovalGate:
    """Settings first, then cancellation, then the user; every decision is reported to `listener`."""

    def __init__(
        self,
        approver: Approver,
        *,
        approve_edits: bool = False,
        allowed_commands: Sequence[str] = (),
        cancel: CancelToken | None = None,
        listener: DecisionListener | None = None,
    ) -> None:
        self._approver = approver
        self._approve_edits = approve_edits
        self._allowed = tuple(allowed_commands)
        self._cancel = cancel
        self._listener = listener

    def decide(self, request: ApprovalRequest) -> Decision:
        decision = self._decide(request)
        if self._listener is not None:
            try:
                self._listener(request, decision)
            except Exception:  # a broken listener must not turn an approval into a crash
                log.exception("approval listener failed")
        return decision

    def _decide(self, request: ApprovalRequest) -> Decision:
        if self._cancel is not None and self._cancel.is_set():
            return Decision.deny("cancelled", "the turn was cancelled")
        if request.kind == "edit" and self._approve_edits:
            return Decision.allow("setting", "edits are pre-approved by a setting")
        if (
            request.kind == "command"
            and request.command is not None
            and command_is_preapproved(request.command, self._allowed)
        ):
            return Decision.allow("setting", "the command matches an allowed pattern")
        try:
            decision = self._approver.approve(request)
        except Exception as exc:
            log.warning("approver failed: %s", exc)
            return Decision.deny("error", f"the approval could not be asked: {exc}")
        if not isinstance(decision, Decision):  # a third-party approver may break its Protocol
            return Decision.deny("error", "the approver gave no decision")  # type: ignore[unreachable]
        if decision.approved and self._cancel is not None and self._cancel.is_set():
            return Decision.deny("cancelled", "the turn was cancelled while waiting for approval")
        return decision
