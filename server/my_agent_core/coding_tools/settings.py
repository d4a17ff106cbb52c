"""The knobs of the workspace tools: what may run without asking, and how much text a call may return.

One frozen object per session, built by whoever runs the agent (the language server from `myAgent.*`
settings, the terminal from its flags), so the tools never read configuration themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WorkspaceSettings"]


@dataclass(frozen=True)
class WorkspaceSettings:
    """Pre-approvals, the ripgrep to use, and the caps that keep tool results out of the flood zone.

    The defaults ask before every edit and every command, and keep one tool result to roughly ten
    thousand tokens or less.
    """

    approve_edits: bool = False
    """Apply `edit_file` / `write_file` without asking (the user still sees them in the transcript)."""
    allowed_commands: tuple[str, ...] = ()
    """Command lines that run without asking: shell-style patterns (`*` matches anything) matched
    against the whole command line, e.g. `"pytest*"`, `"git status"`. Only simple commands qualify:
    a line with `;`, `&`, `|`, `>`, `<`, `$`, backquotes or a line break always asks."""
    ripgrep: str | None = None
    """Path of the `rg` to use (e.g. VS Code's bundled one); None: `rg` on PATH."""
    use_ripgrep: bool = True
    """False: search_text uses the pure-Python search (the same results, slower)."""

    read_max_bytes: int = 8 * 1024 * 1024
    """read_file reads at most this much of a file on disk; the rest is reached with search_text."""
    read_max_lines: int = 1000
    read_max_chars: int = 50_000
    line_max_chars: int = 2000
    edit_max_bytes: int = 4 * 1024 * 1024
    """edit_file / write_file refuse larger files (the diff and the approval must stay readable)."""

    list_max_entries: int = 1000
    list_scan_limit: int = 200_000
    """Stop walking after this many files: a listing that big only says "narrow it down"."""

    search_max_results: int = 200
    search_max_per_file: int = 20
    search_line_chars: int = 300
    search_max_filesize: int = 20 * 1024 * 1024
    search_collect_limit: int = 5000
    search_timeout_s: float = 60.0

    command_timeout_s: float = 120.0
    command_max_timeout_s: float = 1800.0
    command_output_bytes: int = 24_000
    """Per stream (stdout, stderr): the first and last halves of this are kept, the middle is cut."""
    kill_grace_s: float = 2.0
    """After SIGTERM, how long a process group gets before SIGKILL."""
