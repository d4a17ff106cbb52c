"""make_memory_tool: the single `memory` tool the model uses, bound to one store by a closure.

A factory rather than a module-level tool so two agents in one process (or two chat sessions) each get a
tool bound to their own store. Argument slips a model commonly makes are tolerated (`new_text` or
`content` in place of `new_content` for replace); everything else fails with a message that says how to
fix the call, and quotes what the model sent only cut to a bounded length.

In a chat session the tool consults the session's trust policy (`trust=`, `my_agent_core.trust`):
a write that may carry untrusted text is shown to the user first (or refused when nobody can be
asked), and every write keeps its provenance in its journal record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from my_agent_core.approval import (
    ApprovalGate,
    ApprovalRequest,
    Approver,
    CancelToken,
    DecisionListener,
)
from my_agent_core.memory.refusal import MEMORY_REFUSAL, refusal
from my_agent_core.memory.render import quote
from my_agent_core.memory.store import MemoryEditError, MemoryStore, Operation
from my_agent_core.textdiff import unified_diff
from my_agent_core.tools import Tool

if TYPE_CHECKING:
    from my_agent_core.trust.policy import Judgement, MemoryTrust

__all__ = ["MEMORY_TOOL_DESCRIPTION", "REVIEW_NOTE", "TRUST_NOTE", "make_memory_tool"]

_TEXT_FIELDS = ("content", "old_text", "new_content", "new_text")

MEMORY_TOOL_DESCRIPTION = """\
Save durable knowledge to your long-term memory, which is shown to you at the start of every future \
session. Memory is small (MEMORY.md ~2200 chars, USER.md ~1375 chars): keep entries short, factual and \
deduplicated.

WHEN to save (do it proactively, without being asked):
- The user states a preference, corrects you, or shares personal information (role, stack, style, \
time zone, things to avoid) -> target "user".
- You learn a stable fact about the environment, the project's conventions, a dependency quirk or a \
pitfall -> target "memory".
- Priority: user preferences and corrections > environment and project facts > lessons learned.
- The best memory is the one that means the user never has to say something twice.

TARGETS:
- "user": the user's profile (name, role, coding preferences, communication style, dislikes).
- "memory": your own notes (environment facts, project conventions, dependency quirks, lessons).

SKIP (never save):
- Task progress, logs of completed work, temporary TODOs, one-off debugging context, temp file paths.
- Facts that are easy to rediscover, and large raw data (code blocks, logs, tables).
- Multi-step procedures (those belong in a skill, not in memory).
- Anything the user did not say or that is only true for this session.

ACTIONS:
- add: `content` = the new entry.
- replace: `old_text` = a short piece of text that appears in exactly ONE entry; `new_content` = the \
whole new text of that entry (the entire entry is replaced; `new_text` is accepted as a synonym).
- remove: `old_text` = a short piece of text that appears in exactly one entry.
- operations: several edits applied all-or-nothing in one call, with the budget checked on the final \
state (use it to consolidate a full memory: e.g. replace three related entries by one). Each item is \
{action, content?, old_text?, new_content?}. A batch never empties a file.
When memory is full, the error lists every entry: merge or remove entries, then retry once. If the \
memory tool keeps failing, stop retrying and carry on with your reply."""

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "target": {
            "type": "string",
            "enum": ["memory", "user"],
            "description": "'user' for the user's profile (USER.md), 'memory' for your notes (MEMORY.md).",
        },
        "action": {
            "type": "string",
            "enum": ["add", "replace", "remove"],
            "description": "What to do (with `operations`: the kind of the first edit).",
        },
        "content": {
            "type": "string",
            "description": "For add: the entry to add (`new_text` is accepted too).",
        },
        "old_text": {
            "type": "string",
            "description": "For replace/remove: a short text that appears in exactly one entry.",
        },
        "new_content": {
            "type": "string",
            "description": "For replace: the whole new entry (`new_text` is accepted too).",
        },
        "operations": {
            "type": "array",
            "description": "Several edits applied all-or-nothing (budget checked on the result).",
            "items": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["add", "replace", "remove"]},
                    "content": {
                        "type": "string",
                        "description": "For add (`new_text` is accepted too).",
                    },
                    "old_text": {"type": "string"},
                    "new_content": {
                        "type": "string",
                        "description": "For replace (`new_text` is accepted too).",
                    },
                },
                "required": ["action"],
            },
        },
    },
    "required": ["target", "action"],
}


#: Appended to the description in review mode, so the model knows a refusal is the user's answer.
REVIEW_NOTE = (
    "\n\nREVIEW: the user approves each memory change before it is saved (they see the diff of "
    "the file). When a change is declined, do not retry it nor save the same fact another way: "
    "carry on with your reply."
)


#: Appended to the description under `myAgent.memory.approval: "untrusted"`.
TRUST_NOTE = (
    "\n\nTRUST: a change made after you read files, command output, search results or recalled "
    "notes in this turn, or that repeats their words, is shown to the user for approval before it "
    "is saved. When a change is declined or cannot be approved, do not retry it nor save it "
    "another way: ask the user, and save what they confirm in their own words."
)


def make_memory_tool(
    store: MemoryStore,
    *,
    author: str | None = None,
    approver: Approver | None = None,
    cancel: CancelToken | None = None,
    on_decision: DecisionListener | None = None,
    trust: MemoryTrust | None = None,
) -> Tool:
    """The `memory` tool bound to `store`; `author` is who the journal credits (default: the store's).

    `trust` (a chat session's `MemoryTrust`: the approval mode and the session's taint tracker)
    decides each write: applied at once, or first shown to the user through `approver` (refused,
    with a message telling the model to ask the user, when there is none). Every write then keeps
    its provenance in its journal record. Without `trust`, an `approver` asks before every write
    (review mode, as `"ask"` does) and no approver means none is asked (`"auto"`).

    Asking: the call is first computed without writing (`store.preview`) and shown to the user as a
    `kind="memory"` approval with the file's unified diff (and the sources its text may come from);
    it is saved only when approved and only if the file is still what the user saw (else the model
    is told memory changed meanwhile). `cancel` and `on_decision` work as for the workspace tools
    (a stopped turn refuses without asking; every decision is reported)."""
    gate = _gate(approver, cancel, on_decision) if approver is not None else None

    def handler(args: dict[str, Any]) -> str:
        target = args["target"]
        operations = _operations(args)
        if trust is None:
            if gate is None:
                return store.apply(target, operations, author=author)
            return _reviewed(store, gate, target, operations, author)
        judgement = trust.judge([text for op in operations if (text := _new_text(op))])
        if not judgement.ask:
            return store.apply(target, operations, author=author, provenance=judgement.provenance)
        return _reviewed(store, gate, target, operations, author, judgement)

    mode = trust.mode if trust is not None else ("ask" if gate is not None else "auto")
    note = {"ask": REVIEW_NOTE, "untrusted": TRUST_NOTE, "auto": ""}[mode]
    return Tool("memory", MEMORY_TOOL_DESCRIPTION + note, _PARAMETERS, handler)


def _new_text(operation: Operation) -> str | None:
    """The text a write puts into memory (a remove puts none)."""
    return operation.content if operation.action == "add" else operation.new_content


def _gate(
    approver: Approver, cancel: CancelToken | None, on_decision: DecisionListener | None
) -> ApprovalGate:
    return ApprovalGate(approver, cancel=cancel, listener=on_decision)


def _reviewed(
    store: MemoryStore,
    gate: ApprovalGate | None,
    target: str,
    operations: list[Operation],
    author: str | None,
    judgement: Judgement | None = None,
) -> str:
    """Preview, ask, then apply exactly what was approved (or explain why nothing was saved).
    `judgement`: the trust policy's, whose sources the approval names and whose provenance the
    journal keeps; `gate` None: nobody can be asked, so a change is refused."""
    preview = store.preview(target, operations)
    provenance = judgement.provenance if judgement is not None else None
    if not preview.changed:  # a duplicate add, a replace with the same text: nothing to approve
        return store.apply(
            target, operations, author=author, expect=preview.before, provenance=provenance
        )
    name = store.files[target]
    what = _summary(operations, name)
    if gate is None:
        assert judgement is not None  # only the trust policy asks without an approver
        raise MemoryEditError(judgement.refusal(f"the memory change ({what})"))
    diff = unified_diff(preview.before if preview.existed else None, preview.after, name)
    request = ApprovalRequest(
        kind="memory",
        title=judgement.title(what) if judgement is not None else f"Memory: {what}",
        detail=(judgement.detail_header() if judgement is not None else "") + diff,
        path=preview.path,
        new_text=preview.after,
        sources=judgement.sources() if judgement is not None else (),
    )
    decision = gate.decide(request)
    if not decision.approved:
        raise MemoryEditError(refusal(decision, f"the memory change ({what})", MEMORY_REFUSAL))
    if provenance is not None:
        provenance = provenance.with_approval(True)
    return store.apply(
        target, operations, author=author, expect=preview.before, provenance=provenance
    )


def _summary(operations: list[Operation], name: str) -> str:
    """`add to MEMORY.md`, `replace in USER.md`, `3 changes to MEMORY.md`: the approval's title."""
    if len(operations) > 1:
        return f"{len(operations)} changes to {name}"
    action = operations[0].action
    return f"{action} {'to' if action == 'add' else 'in'} {name}"


def _operations(args: dict[str, Any]) -> list[Operation]:
    """The edits a call asks for: the top-level one, then any `operations` items."""
    extra = args.get("operations")
    top_has_fields = any(args.get(key) is not None for key in _TEXT_FIELDS)
    ops: list[Operation] = []
    if extra is None or top_has_fields:
        ops.append(_operation(args, "the call"))
    for n, item in enumerate(extra or [], start=1):
        if not isinstance(item, dict):
            raise MemoryEditError(
                f'operations[{n - 1}] must be an object like {{"action": "add", "content": "..."}}.'
            )
        ops.append(_operation(item, f"operations[{n - 1}]"))
    if not ops:
        raise MemoryEditError("`operations` is empty: pass at least one edit.")
    return ops


def _operation(args: dict[str, Any], where: str) -> Operation:
    action = args.get("action")
    for key in _TEXT_FIELDS:
        value = args.get(key)
        if value is not None and not isinstance(value, str):
            raise MemoryEditError(f"`{key}` in {where} must be a string.")
    content, old_text = args.get("content"), args.get("old_text")
    if action == "add":
        # Models name the text as their edit tools do (`new_text`, Hermes Agent's models among them).
        entry = _first_text(content, args.get("new_content"), args.get("new_text"))
        if entry is None:
            raise MemoryEditError(
                "`content` is required when action is 'add': pass the entry's text (`new_text` is "
                "accepted too)."
            )
        return Operation("add", content=entry)
    if action in ("replace", "remove"):
        if not old_text or not old_text.strip():
            raise MemoryEditError(
                f"`old_text` is required when action is '{action}': pass a short text that appears in "
                "exactly one entry."
            )
        if action == "remove":
            return Operation("remove", old_text=old_text)
        effective = _first_text(args.get("new_content"), args.get("new_text"), content)
        if effective is None:
            raise MemoryEditError(
                "`new_content` is required when action is 'replace': pass the whole new text of the "
                "entry (`new_text` is accepted too)."
            )
        return Operation("replace", old_text=old_text, new_content=effective)
    shown = quote(action if isinstance(action, str) else repr(action), 40, what="action")
    raise MemoryEditError(f"Unknown action {shown} in {where}: use 'add', 'replace' or 'remove'.")


def _first_text(*values: str | None) -> str | None:
    """The first value that holds more than whitespace (models send `new_content` or `new_text`)."""
    return next((value for value in values if value and value.strip()), None)
