"""The chat's EditApplier: an approved change reaches the editor's buffer, or the disk, never half.

- A file OPEN in the editor is changed with `workspace/applyEdit` (a versioned `TextDocumentEdit`
  when the client supports it), so the buffer and the editor's undo see the edit. It is refused
  (`ApplyConflict`) when the buffer no longer holds the text the user approved a diff of. The label
  `my-agent: approved edit of <path>` tells our client to SAVE the document afterwards when it had no
  unsaved changes before (client/src/common/server.ts), so a following `run_command` (the tests)
  sees the edit on disk; a document with unsaved changes of the user's is left unsaved.
- A file that is NOT open (or a new one) is written on disk atomically (`DiskApplier`: temp file,
  fsync, rename; refused when the file changed since the diff); the editor's file watcher shows it.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from my_agent_core.coding_tools.disk import DiskApplier
from my_agent_core.coding_tools.seams import ApplyConflict, ApplyError

from .client_link import ClientLink, ClientTimeout
from .convert import minimal_edit

if TYPE_CHECKING:
    from my_agent_core.coding_tools import EditApplier, FileChange

    from .buffers import Buffers, OpenDocument

__all__ = ["AGENT_EDIT_LABEL", "LspEditApplier"]

logger = logging.getLogger(__name__)

#: The `workspace/applyEdit` label of an approved agent edit (the client saves clean documents).
AGENT_EDIT_LABEL = "my-agent: approved edit of"
APPLY_TIMEOUT_S = 60.0
#: How long to wait for the client's didChange after an applied edit (reads see the new text).
SYNC_WAIT_S = 2.0
_SYNC_POLL_S = 0.02


class LspEditApplier:
    """Applies approved `FileChange`s: open documents through the editor, others on disk."""

    def __init__(
        self,
        link: ClientLink,
        buffers: Buffers,
        *,
        versioned: bool,
        can_apply: bool = True,
        disk: EditApplier | None = None,
    ) -> None:
        self._link = link
        self._buffers = buffers
        self._versioned = versioned
        self._can_apply = can_apply
        if disk is None:
            disk = DiskApplier()
        self._disk = disk

    def apply(self, change: FileChange) -> None:
        if self._buffers.document_at(change.path) is None:
            self._disk.apply(change)
            return
        self._through_editor(change)

    def _through_editor(self, change: FileChange) -> None:
        if not self._can_apply:
            raise ApplyError(
                f"{change.relpath} is open in the editor, which cannot apply edits "
                "(no workspace/applyEdit support); close it and ask again."
            )
        try:
            result = self._link.request(
                types.WORKSPACE_APPLY_EDIT,
                params_on_loop=lambda: self._edit_params(change),
                timeout_s=APPLY_TIMEOUT_S,
            )
        except (ApplyError, ApplyConflict):
            raise
        except ClientTimeout as exc:
            raise ApplyError(f"{exc}; check {change.relpath} in the editor.") from None
        except JsonRpcException as exc:
            raise ApplyError(
                f"the editor refused the edit of {change.relpath}: {exc.message}"
            ) from None
        applied = getattr(result, "applied", None)
        if applied is None and isinstance(result, dict):
            applied = result.get("applied")
        if applied is not True:
            reason = getattr(result, "failure_reason", None) or (
                "the document changed in the editor meanwhile"
            )
            raise ApplyConflict(f"The editor did not apply the edit of {change.relpath}: {reason}.")
        self._await_sync(change)

    def _edit_params(self, change: FileChange) -> types.ApplyWorkspaceEditParams:
        """Built on the event loop, where the buffer's text and version change: both are read at
        the same moment as the check that the buffer still holds what the user approved."""
        doc = self._buffers.document_at(change.path)
        if doc is None:
            raise ApplyConflict(
                f"{change.relpath} was closed in the editor after the diff was made; ask again."
            )
        with doc.lock:
            text = doc.rope.text
            version = doc.version
            if change.before is None or text != change.before:
                raise ApplyConflict(
                    f"{change.relpath} changed in the editor after the diff was shown (the user "
                    "typed, or another tool wrote); nothing was applied. Read it again."
                )
            edit = _text_edit(doc, text, change.after)
        return types.ApplyWorkspaceEditParams(
            edit=self._workspace_edit(doc, version, edit),
            label=f"{AGENT_EDIT_LABEL} {change.relpath}",
        )

    def _workspace_edit(
        self, doc: OpenDocument, version: int | None, edit: types.TextEdit
    ) -> types.WorkspaceEdit:
        if self._versioned:
            return types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=doc.uri, version=version
                        ),
                        edits=[edit],
                    )
                ]
            )
        return types.WorkspaceEdit(changes={doc.uri: [edit]})

    def _await_sync(self, change: FileChange) -> None:
        """Wait (briefly) for the client's didChange, so the next read_file sees the new text."""
        deadline = time.monotonic() + SYNC_WAIT_S
        while time.monotonic() < deadline:
            current = self._buffers.text_of(change.path)
            if current is None or current == change.after:
                return
            time.sleep(_SYNC_POLL_S)
        logger.info("the editor's text of %s did not follow the applied edit yet", change.relpath)


def _text_edit(doc: OpenDocument, text: str, after: str) -> types.TextEdit:
    """The one edit from `text` to `after`: only the part that differs (cursor and folds elsewhere
    stay), positions in the document's encoding. Called with the document's lock held."""
    span = minimal_edit(text, after)
    start, end, new = span if span is not None else (0, 0, "")
    return types.TextEdit(range=doc.rope.range(start, end, doc.encoding), new_text=new)
