"""Merging a server-side memory write into an open editor buffer that has unsaved edits.

The agent writes through the store (disk); VS Code reloads a clean buffer by itself, but a dirty one would
either lose the user's typing or miss the agent's change. So the journal record's entry-level changes are
applied to the buffer text with the parser's ranges and sent as one minimal `workspace/applyEdit`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING

from lsprotocol import types

from my_agent_core.memory import document as memdoc
from my_agent_core.memory.journal import Change

from .convert import minimal_edit

if TYPE_CHECKING:
    from .buffers import OpenDocument
    from .hooks import ServerHooks

__all__ = ["apply_buffer_edit", "buffer_with_changes", "merged_buffer_edit"]

logger = logging.getLogger(__name__)


def merged_buffer_edit(
    buffer: str, before: str | None, changes: Sequence[Change]
) -> tuple[int, int, str] | None:
    """The edit that puts `changes` into a dirty buffer; None for a clean buffer or no change."""
    if not changes:
        return None
    if before is not None and _strip_bom(buffer) == _strip_bom(before):
        return None  # clean: the editor reloads the file from disk itself
    return minimal_edit(buffer, buffer_with_changes(buffer, changes))


def apply_buffer_edit(
    ls: ServerHooks, doc: OpenDocument, start: int, end: int, new_text: str
) -> None:
    """Send one edit of an open document as `workspace/applyEdit` (versioned when the client can)."""
    with doc.lock:
        edit = types.TextEdit(range=doc.rope.range(start, end, doc.encoding), new_text=new_text)
    caps = ls.client_capabilities.workspace
    versioned = bool(caps and caps.workspace_edit and caps.workspace_edit.document_changes)
    if versioned:
        wedit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=[edit],
                )
            ]
        )
    else:
        wedit = types.WorkspaceEdit(changes={doc.uri: [edit]})
    params = types.ApplyWorkspaceEditParams(edit=wedit, label="my-agent: memory updated")
    future = ls.workspace_apply_edit(params)
    future.add_done_callback(_log_failure)


def _strip_bom(text: str) -> str:
    return text[1:] if text.startswith(memdoc.BOM) else text


def buffer_with_changes(buffer: str, changes: Sequence[Change]) -> str:
    """Apply a journal record's entry-level changes to a buffer's text, keeping everything else."""
    text = buffer
    eol = "\r\n" if "\r\n" in buffer else "\n"
    for change in changes:
        doc = memdoc.parse(text)
        old = memdoc.normalize_entry(change.before) if change.before is not None else None
        new = memdoc.normalize_entry(change.after) if change.after is not None else None
        present = {e.text for e in doc.entries}
        match = next((e for e in doc.entries if old is not None and e.text == old), None)
        if match is not None and new is not None:
            text = text[: match.start] + new.replace("\n", eol) + text[match.end :]
        elif match is not None:
            start, end = doc.removal_span(match)
            text = text[:start] + text[end:]
        elif new is not None and new not in present:
            text = _append_entry(doc, text, new.replace("\n", eol), eol)
    return text


def _append_entry(doc: memdoc.MemoryDocument, text: str, entry: str, eol: str) -> str:
    if doc.entries:
        at = doc.entries[-1].end
        return text[:at] + eol + memdoc.SECTION_SIGN + eol + entry + text[at:]
    bom = memdoc.BOM if text.startswith(memdoc.BOM) else ""
    return bom + entry + eol


def _log_failure(future: Future[types.ApplyWorkspaceEditResult]) -> None:
    try:
        result = future.result()
        if result is not None and not getattr(result, "applied", True):
            logger.info("client did not apply the memory edit: %s", result)
    except Exception as exc:  # the client refused or failed: nothing to do, disk is right
        logger.info("applyEdit failed: %s", exc)
