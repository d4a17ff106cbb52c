"""Lint open memory files as they are typed and hand the findings to the editor (push or pull).

The text and the lint state of each open memory file live in `ls.buffers` (`buffers.py`,
`memory_buffer.py`): by the time these handlers run, the protocol has applied the change and the
live lint has caught up with it, so publishing costs the findings of the new version only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from .memory_buffer import SOURCE, LayoutRules, MemoryBuffer, to_diagnostic
from .team_rules import CombinedRules, team_checks
from .team_rules import register as register_team

if TYPE_CHECKING:
    from .hooks import ServerHooks
    from .server import MyAgentServer

__all__ = [
    "SOURCE",
    "client_pulls",
    "publish",
    "refresh_all",
    "register",
    "republish",
    "to_diagnostic",
]

logger = logging.getLogger(__name__)


def client_pulls(ls: ServerHooks) -> bool:
    """True when the client asks for diagnostics itself (`textDocument.diagnostic`)."""
    text_document = ls.client_capabilities.text_document
    return text_document is not None and text_document.diagnostic is not None


def _client_refreshes(ls: ServerHooks) -> bool:
    ws = ls.client_capabilities.workspace
    return bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)


def publish(ls: ServerHooks, buf: MemoryBuffer) -> None:
    """Push the buffer's diagnostics (push mode only)."""
    if client_pulls(ls):
        return
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=buf.uri, diagnostics=buf.diagnostics, version=buf.version
        )
    )


def refresh_all(ls: ServerHooks) -> None:
    """Settings changed: re-lint open memory files and re-publish (or ask the client to re-pull)."""
    changed = False
    for buf in ls.buffers.memory_buffers():
        if buf.set_settings(ls.config.limit(buf.target), ls.config.near_budget_share):
            changed = True
            publish(ls, buf)
    if changed and client_pulls(ls) and _client_refreshes(ls):
        try:
            ls.workspace_diagnostic_refresh(None)
        except Exception:
            logger.exception("workspace/diagnostic/refresh failed")


def republish(ls: ServerHooks, buffers: list[MemoryBuffer]) -> None:
    """Buffers whose findings changed without an edit (the workspace changed): push them, or ask
    a pulling client to pull again."""
    for buf in buffers:
        publish(ls, buf)
    if buffers and client_pulls(ls) and _client_refreshes(ls):
        try:
            ls.workspace_diagnostic_refresh(None)
        except Exception:
            logger.exception("workspace/diagnostic/refresh failed")


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
