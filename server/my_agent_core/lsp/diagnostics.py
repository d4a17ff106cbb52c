"""Lint open memory files as they are typed and hand the findings to the editor (push or pull).

The text and the lint state of each open memory file live in `ls.buffers` (`buffers.py`,
`memory_buffer.py`): by the time these handlers run, the protocol has applied the change and the
live lint has caught up with it, so publishing costs the findings of the new version only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from .memory_buffer import SOURCE, LayoutRules, to_diagnostic
from .publish import client_pulls, publish, refresh_all
from .team_rules import CombinedRules, team_checks
from .team_rules import register as register_team

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = ["SOURCE", "register", "to_diagnostic"]

logger = logging.getLogger(__name__)


def register(ls: MyAgentServer) -> None:
    """didOpen/didChange/didSave/didClose, push diagnostics and the pull provider (and the team
    checks' `myAgent/gitSetup`)."""
    ls.on_config_changed.append(lambda: refresh_all(ls))
    register_team(ls)

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MyAgentServer, params: types.DidOpenTextDocumentParams) -> None:
        buf = ls.buffers.memory(params.text_document.uri)
        if buf is not None:
            rules: list[LayoutRules] = []
            try:  # the workspace rules of its folder (the index builds in the background)
                rules.append(ls.workspace_checks.checks_for(buf.folder))
            except Exception:
                logger.exception("workspace rules unavailable for %s", buf.folder)
            try:  # what a merge left, and a clone without the merge driver (git asked off-loop)
                rules.append(team_checks(ls).rules_for(buf))
            except Exception:
                logger.exception("team checks unavailable for %s", buf.folder)
            if rules:
                buf.workspace = rules[0] if len(rules) == 1 else CombinedRules(*rules)
            publish(ls, buf)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MyAgentServer, params: types.DidChangeTextDocumentParams) -> None:
        buf = ls.buffers.memory(params.text_document.uri)
        if buf is not None:
            publish(ls, buf)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: MyAgentServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.buffers.get(uri)
        if doc is not None and doc.memory is not None:
            if params.text is not None and params.text != doc.text:
                doc.set_text(params.text)
            publish(ls, doc.memory)
        if ls.memory_file(uri) is not None:
            ls.memory_file_saved(uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MyAgentServer, params: types.DidCloseTextDocumentParams) -> None:
        # the protocol already forgot the document; clear what was pushed for a memory file
        if ls.memory_file(params.text_document.uri) is not None and not client_pulls(ls):
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
            )

    @ls.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    def pull(
        ls: MyAgentServer, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        buf = ls.buffers.memory(params.text_document.uri)
        if buf is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id == buf.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=buf.result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=buf.diagnostics, result_id=buf.result_id
        )
