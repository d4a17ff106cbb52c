"""The coding tools of a trusted workspace folder, and the seams an editor plugs into them.

See docs/workspace.md. Public names: `make_workspace_tools`, `workspace_instructions`,
`WorkspaceSettings`; the seams `Approver`, `ApprovalRequest`, `Decision`, `EditApplier`,
`FileChange`, `BufferReader`, `CancelToken`; the terminal's `DiskApplier`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from my_agent_core.lazy import lazy_exports

if TYPE_CHECKING:
    from my_agent_core.workspace.approval import (
        ApprovalGate,
        ApprovalKind,
        ApprovalReason,
        ApprovalRequest,
        Approver,
        Decision,
        DecisionListener,
        command_is_preapproved,
    )
    from my_agent_core.workspace.disk import DiskApplier, write_atomic
    from my_agent_core.workspace.ripgrep import editor_ripgrep_paths, find_ripgrep
    from my_agent_core.workspace.seams import (
        ApplyConflict,
        ApplyError,
        BufferReader,
        CancelToken,
        EditApplier,
        FileChange,
    )
    from my_agent_core.workspace.settings import WorkspaceSettings
    from my_agent_core.workspace.tools import (
        TOOL_NAMES,
        make_workspace_tools,
        workspace_instructions,
    )

# Loaded on first use, so importing one seam does not import every tool.
__getattr__ = lazy_exports(
    __name__,
    {
        "ApprovalGate": "approval",
        "ApprovalKind": "approval",
        "ApprovalReason": "approval",
        "ApprovalRequest": "approval",
        "Approver": "approval",
        "Decision": "approval",
        "DecisionListener": "approval",
        "command_is_preapproved": "approval",
        "DiskApplier": "disk",
        "write_atomic": "disk",
        "editor_ripgrep_paths": "ripgrep",
        "find_ripgrep": "ripgrep",
        "ApplyConflict": "seams",
        "ApplyError": "seams",
        "BufferReader": "seams",
        "CancelToken": "seams",
        "EditApplier": "seams",
        "FileChange": "seams",
        "WorkspaceSettings": "settings",
        "TOOL_NAMES": "tools",
        "make_workspace_tools": "tools",
        "workspace_instructions": "tools",
    },
)

__all__ = [
    "TOOL_NAMES",
    "ApplyConflict",
    "ApplyError",
    "ApprovalGate",
    "ApprovalKind",
    "ApprovalReason",
    "ApprovalRequest",
    "Approver",
    "BufferReader",
    "CancelToken",
    "Decision",
    "DecisionListener",
    "DiskApplier",
    "EditApplier",
    "FileChange",
    "WorkspaceSettings",
    "command_is_preapproved",
    "editor_ripgrep_paths",
    "find_ripgrep",
    "make_workspace_tools",
    "workspace_instructions",
    "write_atomic",
]
