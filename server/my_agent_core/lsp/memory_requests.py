"""`myAgent/memory/*` requests: the memory panel's state, edits (journal author `user`), undo and log.

Store work runs in a worker thread (file locks may wait on other processes); the change notification is
posted to the event loop before the answer, so the panel never sees a stale state after its own edit.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypedDict

from my_agent_core.memory.paths import FILE_NAMES, TARGETS

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
from .protocol_types import MemoryEditResult, MemoryLogResult, MemoryStateResult
from .workspace import record_json

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = ["register"]

ACTIONS = ("add", "replace", "remove")


class ImportRefusalJson(TypedDict):
    text: str
    reason: str
    line: int


class MemoryImportResult(TypedDict):
    """`myAgent/memory/import` (docs/protocol.md): what was added, and what was not, and why."""

    message: str
    added: int
    duplicates: int
    notFitted: list[str]
    refused: list[ImportRefusalJson]
    state: MemoryStateResult


def _edit_error() -> type[Exception]:
    from my_agent_core.memory.store import MemoryEditError

    return MemoryEditError


def register(ls: MyAgentServer) -> None:
    """The memory panel requests."""

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
        store = ls.memory.store(folder)

        def run() -> MemoryEditResult:
            try:
                record = store.undo(author="user")
            except _edit_error() as exc:
                raise RequestError(MEMORY_EDIT_REFUSED, str(exc)) from exc
            undone = next((r for r in store.log(10_000) if r.id == record.undoes), None)
            message = f"Undid {_describe(undone or record)}"
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
            from my_agent_core.context.importer import import_file
            from my_agent_core.paths import PathRefused

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
                "state": ls.memory.state(folder),
            }

        return await asyncio.to_thread(run)

    @ls.feature("myAgent/memory/log")
    async def memory_log(ls: MyAgentServer, raw: Any) -> MemoryLogResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        limit = opt_int(params, "limit", minimum=1, maximum=10_000)
        store = ls.memory.store(folder)
        records = await asyncio.to_thread(store.log, limit if limit is not None else 50)
        return {"entries": [record_json(r) for r in records]}


def _describe(record: Any) -> str:
    """A short human description of an undo record."""
    if record is None:
        return "the last change"
    return f"{record.action} in {FILE_NAMES.get(record.target, record.target)} by {record.author}"
