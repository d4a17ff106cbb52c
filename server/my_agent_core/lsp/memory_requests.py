"""`myAgent/memory/*` requests: the memory panel's state, edits (journal author `user`), undo, log
and import, `memory/buffer` (the figure of an open file's unsaved text, for the status bar and the
view), and `memory/tool`: the built-in `memory` tool for agents outside our chat (the VS Code
language-model tool forwards to it; journal author `vscode-lm:<client>`).

Store work runs in a worker thread (file locks may wait on other processes); the change notification is
posted to the event loop before the answer, so the panel never sees a stale state after its own edit.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from my_agent_core.layout import FILE_NAMES, TARGETS
from my_agent_core.memory.safety import scan
from my_agent_core.paths import PathRefused

from .folders import record_json
from .params import (
    MEMORY_EDIT_REFUSED,
    RequestError,
    invalid,
    opt_int,
    opt_str,
    req_choice,
    req_str,
    to_params,
)
from .protocol_types import (
    JournalEntryJson,
    MemoryEditResult,
    MemoryStateResult,
    MemoryToolResult,
)

if TYPE_CHECKING:
    from my_agent_core.memory.journal import JournalRecord
    from my_agent_core.memory.store import MemoryStore, WriteEvent

    from .folders import FolderState
    from .server import MyAgentServer

__all__ = ["AgentToolStores", "caller_name", "register"]

#: The journal author of the VS Code language-model tool's writes: `vscode-lm:<client name>`.
LM_AUTHOR_PREFIX = "vscode-lm:"
MAX_CALLER_CHARS = 64
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")  # CSI and two-byte escape sequences

ACTIONS = ("add", "replace", "remove")


class ImportRefusalJson(TypedDict):
    text: str
    reason: str
    line: int


class ChangeJson(TypedDict):
    """One entry-level change of a journal record, for the editor's notices: the texts (None: added /
    removed) and whether the safety scanner blocks each side, so the editor never quotes that side."""

    before: str | None
    after: str | None
    beforeBlocked: bool
    afterBlocked: bool


class LoggedRecordJson(JournalEntryJson):
    changes: list[ChangeJson]


class MemoryLogWithChanges(TypedDict):
    """`myAgent/memory/log`: `memory/log` of docs/protocol.md plus each record's `changes`."""

    entries: list[LoggedRecordJson]


class MemoryBufferResult(TypedDict):
    """`myAgent/memory/buffer`: the budget figure of an open memory file's text as the editor holds
    it (unsaved edits included), the one its diagnostics and code lens show."""

    uri: str
    version: int | None
    target: str
    used: int
    limit: int


class ImportInContextJson(TypedDict):
    """An item skipped because a context file the sessions read already gives it (`file`:`fileLine`)."""

    text: str
    line: int
    file: str
    fileLine: int


class MemoryImportResult(TypedDict):
    """`myAgent/memory/import` (docs/protocol.md): what was added, and what was not, and why."""

    message: str
    added: int
    duplicates: int
    notFitted: list[str]
    refused: list[ImportRefusalJson]
    inContext: list[ImportInContextJson]
    state: MemoryStateResult


def _edit_error() -> type[Exception]:
    from my_agent_core.memory.errors import MemoryEditError  # here: start-up time

    return MemoryEditError


def caller_name(raw: object) -> str:
    """The client's name from `initialize` as a journal author's tail: one short printable line
    (terminal escapes, controls, bidi marks and line breaks become spaces, runs of spaces one),
    `unknown` when blank."""
    text = _ESCAPES.sub(" ", raw) if isinstance(raw, str) else ""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in text)
    return " ".join(cleaned.split())[:MAX_CALLER_CHARS].strip() or "unknown"


@dataclass(frozen=True)
class _ToolStore:
    key: tuple[object, ...]
    store: MemoryStore


class AgentToolStores:
    """One store per workspace folder for the memory tool of agents outside our chat.

    Opened through `open_store`, the one factory (so `myAgent.memory.userProfile` "global" puts
    USER.md in the user's profile), with the current budgets; rebuilt when those, the profile or the
    client's name change. Its writes are announced like the chat agent's (source `agent`, no
    session) and what a replace or remove takes out of memory goes to the folder's archive.
    """

    def __init__(self, ls: MyAgentServer) -> None:
        self.ls = ls
        self._stores: dict[Path, _ToolStore] = {}

    def author(self) -> str:
        return LM_AUTHOR_PREFIX + caller_name(self.ls.client_name)

    def store(self, folder: FolderState) -> MemoryStore:
        config = self.ls.config
        profile = config.layer.user_profile
        author = self.author()
        key = (config.memory_char_limit, config.user_char_limit, profile, author)
        held = self._stores.get(folder.path)
        if held is not None and held.key == key:
            return held.store
        from my_agent_core.memory.location import open_store  # here: start-up time

        path = folder.path

        def on_write(event: WriteEvent) -> None:
            self.ls.memory.note_write(
                path, event.target, event.before, event.record, "agent", None, store.journal_error
            )
            self.ls.recall.archive_write(path, event)

        # A replaced store is dropped, not closed: a call still running on it keeps its lock file.
        store = open_store(
            path,
            user_profile=profile,
            memory_char_limit=config.memory_char_limit,
            user_char_limit=config.user_char_limit,
            author=author,
            on_write=on_write,
        )
        self._stores[path] = _ToolStore(key, store)
        return store

    def sync_folders(self) -> None:
        """Forget the stores of folders the editor closed."""
        for path in [p for p in self._stores if p not in self.ls.memory.folders]:
            del self._stores[path]


def register(ls: MyAgentServer) -> None:
    """The memory panel requests, and the memory tool for agents outside our chat."""
    tool_stores = AgentToolStores(ls)
    ls.on_folders_changed.append(tool_stores.sync_folders)

    @ls.feature("myAgent/memory/state")
    async def memory_state(ls: MyAgentServer, raw: Any) -> MemoryStateResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        return await asyncio.to_thread(ls.memory.state, folder)

    @ls.feature("myAgent/memory/edit")
    async def memory_edit(ls: MyAgentServer, raw: Any) -> MemoryEditResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        target = req_choice(params, "target", TARGETS)
        action = req_choice(params, "action", ACTIONS)
        if action == "add":
            args: tuple[str, ...] = (req_str(params, "content"),)
        elif action == "replace":
            new = opt_str(params, "newContent")
            if new is None:
                new = opt_str(params, "content")
            if new is None:
                raise invalid("`newContent` is required for replace")
            args = (req_str(params, "oldText"), new)
        else:
            args = (req_str(params, "oldText"),)
        store = ls.memory.store(folder)

        def run() -> MemoryEditResult:
            try:
                if action == "add":
                    message = store.add(target, args[0])
                elif action == "replace":
                    message = store.replace(target, args[0], args[1])
                else:
                    message = store.remove(target, args[0])
            except _edit_error() as exc:
                raise RequestError(MEMORY_EDIT_REFUSED, str(exc)) from exc
            return {"message": message, "state": ls.memory.state(folder)}

        return await asyncio.to_thread(run)

    @ls.feature("myAgent/memory/undo")
    async def memory_undo(ls: MyAgentServer, raw: Any) -> MemoryEditResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        record_id = opt_str(params, "id")  # the change the user chose (else the newest)
        store = ls.memory.store(folder)

        def run() -> MemoryEditResult:
            try:
                record = store.undo(record_id, author="user")
            except _edit_error() as exc:
                raise RequestError(MEMORY_EDIT_REFUSED, str(exc)) from exc
            undone = next((r for r in store.log(10_000) if r.id == record.undoes), None)
            message = f"Undid: {_describe(undone)}"
            return {"message": message, "state": ls.memory.state(folder)}

        return await asyncio.to_thread(run)

    @ls.feature("myAgent/memory/import")
    async def memory_import(ls: MyAgentServer, raw: Any) -> MemoryImportResult:
        """The items of a CLAUDE.md / AGENTS.md / .cursorrules file of the folder, as entries
        (one journaled batch, author `user`); what did not fit or was refused is reported."""
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        path = req_str(params, "path")
        target = opt_str(params, "target") or "memory"
        if target not in TARGETS:
            raise invalid("`target` must be 'memory' or 'user'")
        store = ls.memory.store(folder)

        def run() -> MemoryImportResult:
            from my_agent_core.context.importer import import_file  # here: start-up time

            try:
                result = import_file(store, path, target=target, author="user", folder=folder.path)
            except PathRefused as exc:
                raise invalid(str(exc)) from exc
            except _edit_error() as exc:
                raise RequestError(MEMORY_EDIT_REFUSED, str(exc)) from exc
            return {
                "message": result.message,
                "added": result.added,
                "duplicates": result.duplicates,
                "notFitted": list(result.not_fitted),
                "refused": [
                    {"text": r.text, "reason": r.reason, "line": r.line} for r in result.refused
                ],
                "inContext": [
                    {"text": c.text, "line": c.line, "file": c.file, "fileLine": c.file_line}
                    for c in result.in_context
                ],
                "state": ls.memory.state(folder),
            }

        return await asyncio.to_thread(run)

    @ls.feature("myAgent/memory/tool")
    async def memory_tool(ls: MyAgentServer, raw: Any) -> MemoryToolResult:
        """The built-in `memory` tool (same object, same messages) for another agent; VS Code's own
        confirmation asked the user, so review mode does not apply."""
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        arguments = params.get("arguments")
        if not isinstance(arguments, dict):
            got = "missing" if arguments is None else f"a JSON {_json_kind(arguments)}"
            raise invalid(
                "`arguments` must be the memory tool's input, a JSON object like "
                f'{{"target": "memory", "action": "add", "content": "..."}}; it is {got}'
            )
        if not ls.config.is_trusted(folder.path):
            raise invalid(
                f"the folder {folder.path.name!r} is not trusted (Restricted Mode): its memory is "
                "never written by an agent"
            )
        store = tool_stores.store(folder)

        def run() -> MemoryToolResult:
            from my_agent_core.memory.memory_tool import make_memory_tool  # here: start-up time
            from my_agent_core.tools import clean_text

            result = make_memory_tool(store).execute(arguments)
            out: MemoryToolResult = {
                "ok": result.ok,
                "content": clean_text(result.as_message_text()),
                "state": ls.memory.state(folder),
            }
            if not result.ok:
                out["error"] = clean_text(result.error)
            return out

        return await asyncio.to_thread(run)

    @ls.feature("myAgent/memory/log")
    async def memory_log(ls: MyAgentServer, raw: Any) -> MemoryLogWithChanges:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        limit = opt_int(params, "limit", minimum=1, maximum=10_000)
        store = ls.memory.store(folder)
        records = await asyncio.to_thread(store.log, limit if limit is not None else 50)
        return {"entries": await asyncio.to_thread(lambda: [_logged(r) for r in records])}

    @ls.feature("myAgent/memory/buffer")
    def memory_buffer(ls: MyAgentServer, raw: Any) -> MemoryBufferResult | None:
        """The figure of an open memory file as the editor holds it; null when it is not open (the
        disk's figure, `memory/state`, is then the one to show). Runs on the event loop, where the
        buffer's edits are applied, so it reads one whole version."""
        params = to_params(raw)
        uri = req_str(params, "uri")
        doc = ls.buffers.get(uri)
        if doc is None or doc.memory is None:
            return None
        with doc.lock:
            buf = doc.memory
            return {
                "uri": uri,
                "version": buf.version,
                "target": buf.target,
                "used": buf.used,
                "limit": buf.limit,
            }


def _logged(record: JournalRecord) -> LoggedRecordJson:
    """A journal record as `memory/log` sends it: `record_json` plus its changes, each side marked
    when the scanner blocks it (the editor quotes the entry a notice is about, never a blocked one)."""
    changes: list[ChangeJson] = [
        {
            "before": c.before,
            "after": c.after,
            "beforeBlocked": bool(c.before and scan(c.before)),
            "afterBlocked": bool(c.after and scan(c.after)),
        }
        for c in record.changes
    ]
    return {**record_json(record), "changes": changes}


QUOTE_CHARS = 60


def _quoted(text: str) -> str:
    """An entry named in a message: one line, bounded, in quotes; a blocked entry is not quoted."""
    from my_agent_core.memory.render import neutralize  # here: start-up time (the renderer)

    if scan(text):
        return "an entry the safety scanner blocks (not quoted)"
    flat = " ".join(text.split())
    if len(flat) > QUOTE_CHARS:
        flat = flat[: QUOTE_CHARS - 1] + "…"
    return f"'{neutralize(flat)}'"


def _describe(record: JournalRecord | None) -> str:
    """The change an undo reverted, in words: "added 'uses uv' to MEMORY.md"."""
    if record is None:
        return "the last change"
    name = FILE_NAMES.get(record.target, record.target)
    changes = record.changes
    if record.action == "undo":
        return f"an undo in {name}"
    if len(changes) != 1:
        count = len(changes)
        return f"{count} change{'' if count == 1 else 's'} to {name}"
    (change,) = changes
    if change.before is None and change.after is not None:
        return f"added {_quoted(change.after)} to {name}"
    if change.after is None and change.before is not None:
        return f"removed {_quoted(change.before)} from {name}"
    if change.before is not None and change.after is not None:
        return f"changed {_quoted(change.before)} to {_quoted(change.after)} in {name}"
    return f"a change to {name}"


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else type(value).__name__
