"""Promote a memory entry to the team: append it to the folder's AGENTS.md (or CLAUDE.md), then
remove it from memory: the reverse of `my-agent memory import`.

A personal lesson ("run pytest with -p no:cacheprovider here") often belongs in the file the
whole team's agents read. The code action (actions.py) runs the command `myAgent.memory.promote`;
the server then proposes the addition as a `workspace/applyEdit` the user confirms (annotated
`needsConfirmation`, so VS Code shows it as a preview to apply or discard), and only when the
editor answers that it applied the edit is the entry removed, through the folder's store (journal
author `user`, so `memory undo` brings it back). Nothing is removed from memory otherwise.

The entry must be in the file on disk as it is now (not only in an unsaved buffer), and the
scanner must not block it: a blocked entry is never copied into a file every agent reads. The
target is AGENTS.md when the folder has one, else CLAUDE.md when it has that, else a new
AGENTS.md; a target that is a link leading out of the folder, or not a regular file, is refused.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from my_agent_core.layout import FILE_NAMES
from my_agent_core.memory.document import normalize_entry
from my_agent_core.memory.safety import describe, scan
from my_agent_core.paths import PathRefused, read_text, resolve_inside

from .convert import PositionConverter, line_index
from .params import invalid, to_plain
from .uris import path_to_uri

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = [
    "PROMOTE_COMMAND",
    "PROMOTE_KIND",
    "PromoteRefused",
    "appended_text",
    "promote_target",
    "register",
]

logger = logging.getLogger(__name__)

PROMOTE_COMMAND = "myAgent.memory.promote"
PROMOTE_KIND = "refactor.move.myAgent.promote"
#: The team files a promoted entry may go to, in order of preference.
TEAM_FILES = ("AGENTS.md", "CLAUDE.md")
NEW_FILE_HEADER = "# AGENTS.md\n\nInstructions for coding agents working in this repository.\n"
READ_MAX_BYTES = 1024 * 1024
_ANNOTATION = "my-agent.promote"


class PromoteRefused(Exception):
    """Why an entry is not promoted (shown to the user; nothing was changed)."""


@dataclass(frozen=True)
class Target:
    """Where a promoted entry goes: the file's name, its real path, and its text when it exists."""

    name: str
    path: Path
    text: str | None


def team_file_name(folder: Path) -> str:
    """The file a promotion would append to (for the action's title): AGENTS.md, else CLAUDE.md."""
    for name in TEAM_FILES:
        if os.path.lexists(folder / name):
            return name
    return TEAM_FILES[0]


def promote_target(folder: Path) -> Target:
    """The team file of `folder`, read (a link inside the folder is followed; one out of it, a
    FIFO, a device, a huge or non-UTF-8 file is refused)."""
    name = team_file_name(folder)
    if not os.path.lexists(folder / name):
        return Target(name, folder / name, None)
    try:
        real = resolve_inside(folder, name, what=name)
        text = read_text(real, max_bytes=READ_MAX_BYTES, name=name)
    except PathRefused as exc:
        raise PromoteRefused(f"{name} cannot be edited safely: {exc}") from None
    if text is None:
        raise PromoteRefused(f"{name} is a link to nothing; fix or remove it first")
    return Target(name, real, text)


def appended_text(existing: str, entry: str) -> str:
    """What is appended to a team file of text `existing`: the entry as one Markdown list item
    (its later lines indented under it), after a blank line unless the file ends with one or with
    a list item (the entry continues that list); the file's own line ends are kept."""
    eol = "\r\n" if "\r\n" in existing else "\n"
    lines = entry.split("\n")
    item = eol.join([f"- {lines[0]}", *(f"  {line}" if line else "" for line in lines[1:])]) + eol
    if not existing:
        return item
    body = existing.replace("\r\n", "\n")
    head = "" if body.endswith("\n") else eol
    last = body.rstrip("\n").rsplit("\n", 1)[-1]
    in_list = not body.endswith("\n\n") and last.lstrip().startswith(("- ", "* "))
    separated = in_list or body.endswith("\n\n")
    return head + ("" if separated else eol) + item


def _edit(ls: MyAgentServer, target: Target, entry: str) -> types.WorkspaceEdit:
    """The proposed edit: an insertion at the end of the team file (its open buffer when the editor
    has it, versioned), or the creation of AGENTS.md with the entry."""
    caps = ls.client_capabilities.workspace
    edit_caps = caps.workspace_edit if caps is not None else None
    annotated = bool(edit_caps and edit_caps.change_annotation_support)
    uri = path_to_uri(target.path)
    if target.text is None:
        kinds = (edit_caps.resource_operations or ()) if edit_caps else ()
        if (
            not (edit_caps and edit_caps.document_changes)
            or types.ResourceOperationKind.Create not in kinds
        ):
            raise PromoteRefused(
                "the editor cannot create files through the language server; create AGENTS.md "
                "(it may stay empty) and try again"
            )
        first = NEW_FILE_HEADER + "\n" + appended_text("", entry)
        create = types.CreateFile(
            uri=uri,
            options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False),
            annotation_id=_ANNOTATION if annotated else None,
        )
        changes: list[Any] = [create, _document_edit(uri, None, _insert(0, 0, first, annotated))]
        return _workspace_edit(changes, target.name, annotated)
    doc = ls.buffers.document_at(target.path)
    text, version = target.text, None
    if doc is not None:
        with doc.lock:
            text, version = doc.rope.text, doc.version
    end = PositionConverter(line_index(text), ls.position_encoding).position(len(text))
    insert = _insert(end.line, end.character, appended_text(text, entry), annotated)
    if edit_caps and edit_caps.document_changes:
        return _workspace_edit([_document_edit(uri, version, insert)], target.name, annotated)
    plain = types.TextEdit(range=insert.range, new_text=insert.new_text)
    return types.WorkspaceEdit(changes={uri: [plain]})


def _insert(
    line: int, character: int, text: str, annotated: bool
) -> types.TextEdit | types.AnnotatedTextEdit:
    at = types.Position(line=line, character=character)
    rng = types.Range(start=at, end=at)
    if annotated:
        return types.AnnotatedTextEdit(range=rng, new_text=text, annotation_id=_ANNOTATION)
    return types.TextEdit(range=rng, new_text=text)


def _document_edit(
    uri: str, version: int | None, edit: types.TextEdit | types.AnnotatedTextEdit
) -> types.TextDocumentEdit:
    return types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=[edit],
    )


def _workspace_edit(changes: Sequence[Any], name: str, annotated: bool) -> types.WorkspaceEdit:
    annotations = None
    if annotated:
        annotations = {
            _ANNOTATION: types.ChangeAnnotation(
                label=f"Promote a memory entry to {name}",
                needs_confirmation=True,
                description="Once applied, the entry is removed from memory (memory undo restores it).",
            )
        }
    return types.WorkspaceEdit(document_changes=list(changes), change_annotations=annotations)


def _arguments(args: Sequence[Any]) -> tuple[str, str]:
    """(memory file URI, entry text) from the command's one argument `{uri, entry}`."""
    args = [to_plain(a) for a in args]
    if len(args) != 1 or not isinstance(args[0], dict):
        raise invalid(f"{PROMOTE_COMMAND} takes one argument: {{uri, entry}}")
    uri, entry = args[0].get("uri"), args[0].get("entry")
    if not isinstance(uri, str) or not isinstance(entry, str) or not entry.strip():
        raise invalid(f"{PROMOTE_COMMAND}: `uri` and `entry` must be non-empty strings")
    return uri, entry


async def promote(ls: MyAgentServer, args: Sequence[Any]) -> dict[str, Any]:
    """Run the promotion (see the module docstring); the result says what happened."""
    uri, raw_entry = _arguments(args)
    memory_file = ls.memory_file(uri)
    if memory_file is None:
        raise invalid(f"not a memory file: {uri[:200]!r}")
    folder = ls.memory.folder_of_path(memory_file.folder)
    if folder is None:
        raise invalid(f"the folder of {uri[:200]!r} is not open in the editor")
    entry = normalize_entry(raw_entry)
    target_name = FILE_NAMES[memory_file.target]
    try:
        issues = scan(entry)
        if issues:
            raise PromoteRefused(
                f"this entry is not promoted: it {describe(issues)}, and a file every agent of "
                "the team reads must not carry it"
            )
        store = ls.memory.store(folder)
        if entry not in store.state(memory_file.target).entries:
            raise PromoteRefused(
                f"the entry is not in {target_name} on disk (save the file first, or it changed)"
            )
        target = promote_target(folder.path)
        edit = _edit(ls, target, entry)
    except PromoteRefused as exc:
        return _told(ls, False, str(exc))
    params = types.ApplyWorkspaceEditParams(edit=edit, label=f"Promote to {target.name}")
    try:
        result = await ls.workspace_apply_edit_async(params)
    except Exception as exc:  # the client failed or refused the request
        return _told(ls, False, f"the editor did not apply the edit ({exc}); memory is unchanged")
    if not getattr(result, "applied", False):
        why = getattr(result, "failure_reason", None) or "it was not applied"
        return _told(ls, False, f"{target.name} was not changed ({why}); memory is unchanged")
    from my_agent_core.memory.errors import MemoryEditError  # here: start-up time

    try:
        await asyncio.to_thread(store.remove, memory_file.target, entry, author="user")
    except (MemoryEditError, OSError) as exc:
        return _told(
            ls,
            True,
            f"Added to {target.name}, but the entry could not be removed from {target_name}: {exc}",
            removed=False,
            file=target.name,
        )
    return _told(
        ls,
        True,
        f"Moved the entry to {target.name} and removed it from {target_name} (memory undo restores "
        "it there).",
        removed=True,
        file=target.name,
    )


def _told(ls: MyAgentServer, promoted: bool, message: str, **extra: Any) -> dict[str, Any]:
    """Show the outcome to the user and return it as the command's result."""
    kind = types.MessageType.Info if promoted else types.MessageType.Warning
    ls.window_show_message(types.ShowMessageParams(type=kind, message=f"my-agent: {message}"))
    return {"promoted": promoted, "message": message, **({"removed": False} | extra)}


def register(ls: MyAgentServer) -> None:
    """`workspace/executeCommand` `myAgent.memory.promote` (the code action runs it)."""

    @ls.command(PROMOTE_COMMAND)
    async def on_promote(ls: Any, *args: Any) -> dict[str, Any]:  # pygls reads the hints: no
        return await promote(ls, args)  # names that exist only for type checkers
