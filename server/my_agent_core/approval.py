"""Nothing changes without the user: the Approver seam, the settings that pre-approve, and the gate.

Every edit, every command and every memory write that asks goes through `ApprovalGate.decide`: a
setting may pre-approve it, a set cancel token refuses it, otherwise the `Approver` (the editor's
Approve / Deny card, the terminal's y/N prompt, a test's stub) answers. A failing approver is a
refusal, never a crash. The seam sits below the memory store and the workspace tools, which both
ask through it; the text the model reads for a refusal is `memory/refusal.py` (it quotes the
user's note with the renderer). `my_agent_core.coding_tools` re-exports these names.
"""

from __future__ import annotations

import fnmatch
import logging
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from my_agent_core.memory.provenance import How, SourceKind

__all__ = [
    "ApprovalGate",
    "ApprovalKind",
    "ApprovalReason",
    "ApprovalRequest",
    "ApprovalSource",
    "Approver",
    "CancelToken",
    "Decision",
    "DecisionListener",
    "command_is_preapproved",
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


class CancelToken(Protocol):
    """Set when the user stops the turn; `threading.Event` is one. The owner clears it per turn."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


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
