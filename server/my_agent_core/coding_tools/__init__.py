"""The coding tools of a trusted workspace folder, and the seams an editor plugs into them.

See docs/coding-tools.md. Public names: `make_workspace_tools`, `workspace_instructions`,
`WorkspaceSettings`; the seams `Approver`, `ApprovalRequest`, `Decision`, `EditApplier`,
`FileChange`, `BufferReader`, `CancelToken`; the terminal's `DiskApplier`. Files are written by `my_agent_core.safe_write`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from my_agent_core.lazy import lazy_exports

if TYPE_CHECKING:
    from my_agent_core.approval import (
        ApprovalGate,
        ApprovalKind,
        ApprovalReason,
        ApprovalRequest,
        Approver,
        Decision,
        DecisionListener,
        command_is_preapproved,
    )
    from my_agent_core.coding_tools.disk import DiskApplier
    from my_agent_core.coding_tools.ripgrep import editor_ripgrep_paths, find_ripgrep
    from my_agent_core.coding_tools.seams import (
        ApplyConflict,
        ApplyError,
        BufferReader,
        CancelToken,
        EditApplier,
        FileChange,
    )
    from my_agent_core.coding_tools.settings import WorkspaceSettings
    from my_agent_core.coding_tools.toolset import TOOL_NAMES, make_workspace_tools
    from my_agent_core.prompt_text import workspace_instructions

# Loaded on first use, so importing one seam does not import every tool.
__getattr__ = lazy_exports(
    __name__,
    {
        "ApprovalGate": "..approval",
        "ApprovalKind": "..approval",
        "ApprovalReason": "..approval",
        "ApprovalRequest": "..approval",
        "Approver": "..approval",
        "Decision": "..approval",
        "DecisionListener": "..approval",
        "command_is_preapproved": "..approval",
        "DiskApplier": "disk",
        "editor_ripgrep_paths": "ripgrep",
        "find_ripgrep": "ripgrep",
        "ApplyConflict": "seams",
        "ApplyError": "seams",
        "BufferReader": "seams",
        "CancelToken": "seams",
        "EditApplier": "seams",
        "FileChange": "seams",
        "WorkspaceSettings": "settings",
        "TOOL_NAMES": "toolset",
        "make_workspace_tools": "toolset",
        "workspace_instructions": "..prompt_text",
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
]
