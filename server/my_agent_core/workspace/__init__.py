"""The coding tools of a trusted workspace folder, and the seams an editor plugs into them.

See docs/workspace.md. Public names: `make_workspace_tools`, `workspace_instructions`,
`WorkspaceSettings`; the seams `Approver`, `ApprovalRequest`, `Decision`, `EditApplier`,
`FileChange`, `BufferReader`, `CancelToken`; the terminal's `DiskApplier`.
"""

from .approval import (
    ApprovalGate,
    ApprovalKind,
    ApprovalReason,
    ApprovalRequest,
    Approver,
    Decision,
    DecisionListener,
    command_is_preapproved,
)
from .disk import DiskApplier, write_atomic
from .ripgrep import editor_ripgrep_paths, find_ripgrep
from .seams import (
    ApplyConflict,
    ApplyError,
    BufferReader,
    CancelToken,
    EditApplier,
    FileChange,
)
from .settings import WorkspaceSettings
from .tools import TOOL_NAMES, make_workspace_tools, workspace_instructions

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
