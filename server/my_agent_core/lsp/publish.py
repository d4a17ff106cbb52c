"""Findings to the editor: pushed (`publishDiagnostics`), or a pulling client asked to pull again.

Below the handlers that lint (`diagnostics.py`) and the checks that change findings without an edit
(the workspace rules, the team checks), which all hand their buffers here.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from .hooks import ServerHooks
    from .memory_buffer import MemoryBuffer

__all__ = ["client_pulls", "publish", "refresh_all", "relint_folder", "republish"]

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


def relint_folder(ls: ServerHooks, folder: Path) -> None:
    """On the event loop: what the open memory files of `folder` are checked against changed (its
    workspace, its git set-up): re-lint them and hand the findings over."""
    buffers = [
        buf for buf in ls.buffers.memory_buffers() if Path(os.path.realpath(buf.folder)) == folder
    ]
    for buf in buffers:
        buf.workspace_changed()
    republish(ls, buffers)
