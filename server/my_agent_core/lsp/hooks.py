"""What the feature modules may use of the server: one typed seam instead of `getattr` lookups.

`MyAgentServer` implements it; feature functions take a `ServerHooks` so they can be exercised
with any object that has these members, and mypy checks every use.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from .buffers import Buffers
    from .folders import MemoryFile
    from .settings import Settings

__all__ = ["ServerHooks"]


class ServerHooks(Protocol):
    """The server as the feature modules see it (see docs/lsp-core.md, "Hooks")."""

    config: Settings
    buffers: Buffers
    on_config_changed: list[Callable[[], None]]

    @property
    def client_capabilities(self) -> types.ClientCapabilities: ...

    @property
    def position_encoding(self) -> str: ...

    def memory_file(self, uri: str) -> MemoryFile | None: ...

    def snapshot_sessions(self, folder: Path, target: str) -> list[tuple[str, frozenset[str]]]: ...

    def memory_file_saved(self, uri: str) -> None: ...

    def post(self, fn: Callable[..., Any], *args: Any) -> None: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...

    def workspace_diagnostic_refresh(self, params: None) -> Future[None]: ...

    def workspace_apply_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> Future[types.ApplyWorkspaceEditResult]: ...
