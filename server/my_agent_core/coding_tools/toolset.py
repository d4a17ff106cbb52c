"""make_workspace_tools: read_file, list_files, search_text, edit_file, write_file and run_command on
one trusted workspace folder, on the never-throw tool layer.

Whoever runs the agent builds them once per session and passes its seams: an Approver (the user),
an EditApplier (disk or editor), a BufferReader (unsaved text) and a cancel token (the Stop button).
An untrusted folder gets none of these tools: the caller simply does not build them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from my_agent_core.approval import ApprovalGate, Approver, DecisionListener
from my_agent_core.tools import Tool

from .commands import OutputListener
from .files import FileTools
from .finding import FindTools
from .folder import Folder
from .ripgrep import find_ripgrep
from .running import CommandTools
from .seams import BufferReader, CancelToken, EditApplier
from .settings import WorkspaceSettings
from .textfile import clean_text

__all__ = ["TOOL_NAMES", "make_workspace_tools"]

TOOL_NAMES = ("read_file", "list_files", "search_text", "edit_file", "write_file", "run_command")

_PATH = "Path relative to the workspace folder, e.g. src/app.py."
_SAVE = (
    "When you learn a lasting fact about the project this way (how to run its tests or build, a "
    "convention, a quirk that cost you time), save it with the `memory` tool so neither you nor the "
    "user has to find it again."
)


def _descriptions(memory_hints: bool) -> dict[str, str]:
    save = f" {_SAVE}" if memory_hints else ""
    return {
        "read_file": (
            "Read a text file of the workspace with line numbers (`<number>\\t<line>`), as the user "
            "sees it in the editor (unsaved changes included). Read before you explain or change "
            "code: never guess what a file says. Long files come in windows: pass start_line (and "
            "end_line) to read on where the note says. The line numbers are not part of the text: "
            f"leave them out of edit_file's old_text.{save}"
        ),
        "list_files": (
            "List the files under a folder of the workspace (default: all of it), sorted, honouring "
            ".gitignore; glob filters them (e.g. '*.py', 'src/**/*.ts', '!tests/**'). Use it to "
            "find your way around a project before reading: its README, build files (package.json, "
            f"pyproject.toml, Makefile) and tests tell you how it works.{save}"
        ),
        "search_text": (
            "Search the workspace for lines containing a text (literal and case-sensitive unless "
            "regex is true; a regex may start with (?i) to ignore case). Results are "
            "`path:line: text`, sorted and capped; narrow with path (a folder or file) and glob "
            "(e.g. '*.py'). Use it to find definitions, callers and configuration before you "
            "answer or edit. Files open in the editor are searched as the user sees them (unsaved "
            "changes included); files ignored by .gitignore and binary files are skipped."
        ),
        "edit_file": (
            "Replace ONE occurrence of old_text in a file with new_text. old_text must match the "
            "file exactly (indentation included, no line numbers) and occur exactly once: include "
            "enough surrounding lines to make it unique. Read the file first. The user sees the "
            "diff and approves or declines it; if declined, do not retry the same edit. Memory "
            "files are changed with the `memory` tool, never with this one."
        ),
        "write_file": (
            "Create a file, or overwrite a whole file, with content (parent folders are created). "
            "Prefer edit_file to change part of an existing file. The user sees the diff and "
            "approves or declines it; if declined, do not retry the same write."
        ),
        "run_command": (
            "Run a shell command (bash) in the workspace folder: tests, builds, linters, git. "
            "Returns the exit code, stdout and stderr (long output keeps its start and end). "
            "stdin is closed, so nothing can prompt; the whole process group is stopped on "
            "timeout (timeout_s, default 120) or when the user stops the turn, and anything left "
            "running in the background is stopped when the command ends. The user approves each "
            "command; if declined, do not retry it. Find the project's own commands (README, "
            f"package.json scripts, Makefile, CI files) rather than guessing.{save}"
        ),
    }


def _schemas() -> dict[str, dict[str, Any]]:
    def obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"type": "object", "properties": properties, "required": required}

    return {
        "read_file": obj(
            {
                "path": {"type": "string", "description": _PATH},
                "start_line": {"type": "integer", "description": "First line to show (from 1)."},
                "end_line": {"type": "integer", "description": "Last line to show (inclusive)."},
            },
            ["path"],
        ),
        "list_files": obj(
            {
                "path": {"type": "string", "description": "Folder to list (default: the root)."},
                "glob": {"type": "string", "description": "Only paths matching it, e.g. '*.py'."},
            },
            [],
        ),
        "search_text": obj(
            {
                "query": {"type": "string", "description": "Text (or regex) to find in one line."},
                "path": {
                    "type": "string",
                    "description": "Folder or file to search (default: all).",
                },
                "glob": {"type": "string", "description": "Only files matching it, e.g. '*.ts'."},
                "regex": {
                    "type": "boolean",
                    "description": "Treat query as a regex (default false).",
                },
            },
            ["query"],
        ),
        "edit_file": obj(
            {
                "path": {"type": "string", "description": _PATH},
                "old_text": {"type": "string", "description": "Exact text to replace (unique)."},
                "new_text": {"type": "string", "description": "Replacement text."},
            },
            ["path", "old_text", "new_text"],
        ),
        "write_file": obj(
            {
                "path": {"type": "string", "description": _PATH},
                "content": {"type": "string", "description": "The complete new file content."},
            },
            ["path", "content"],
        ),
        "run_command": obj(
            {
                "command": {"type": "string", "description": "Shell command line."},
                "timeout_s": {"type": "number", "description": "Seconds before it is stopped."},
            },
            ["command"],
        ),
    }


def make_workspace_tools(
    folder: Path | str,
    *,
    approver: Approver,
    applier: EditApplier,
    buffers: BufferReader | None = None,
    settings: WorkspaceSettings | None = None,
    cancel: CancelToken | None = None,
    on_decision: DecisionListener | None = None,
    on_output: OutputListener | None = None,
    memory_hints: bool = True,
    app_roots: tuple[str, ...] = (),
) -> list[Tool]:
    """The six workspace tools on `folder` (a trusted workspace folder).

    `approver` answers edits and commands not pre-approved by `settings`; `applier` applies approved
    edits; `buffers` supplies unsaved editor text; `cancel` is the turn's stop token (the caller
    clears it before each turn and sets it beside `agent.cancel()`); `on_decision` hears every
    approval decision, pre-approved ones included; `on_output` hears a running command's output.
    `memory_hints=False` drops the "save it to
    memory" advice for sessions without the memory tool; `app_roots` are editor install folders
    whose bundled ripgrep may be used.
    """
    chosen = settings or WorkspaceSettings()
    place = Folder(folder, buffers)
    gate = ApprovalGate(
        approver,
        approve_edits=chosen.approve_edits,
        allowed_commands=chosen.allowed_commands,
        cancel=cancel,
        listener=on_decision,
    )
    rg = find_ripgrep(chosen.ripgrep, app_roots=app_roots) if chosen.use_ripgrep else None
    files = FileTools(place, gate, applier, chosen)
    finder = FindTools(place, chosen, rg, cancel)
    commands = CommandTools(place, gate, chosen, cancel, on_output)
    handlers: dict[str, Callable[[dict[str, Any]], str]] = {
        "read_file": lambda a: files.read(a["path"], a.get("start_line"), a.get("end_line")),
        "list_files": lambda a: finder.list(a.get("path"), a.get("glob")),
        "search_text": lambda a: finder.search(
            a["query"], a.get("path"), a.get("glob"), bool(a.get("regex") or False)
        ),
        "edit_file": lambda a: files.edit(a["path"], a["old_text"], a["new_text"]),
        "write_file": lambda a: files.write(a["path"], a["content"]),
        "run_command": lambda a: commands.run(a["command"], a.get("timeout_s")),
    }
    descriptions = _descriptions(memory_hints)
    schemas = _schemas()
    return [
        Tool(name, descriptions[name], schemas[name], _guarded(handlers[name]))
        for name in TOOL_NAMES
    ]


def _guarded(handler: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """Model text in, clean text out: lone surrogates never reach a file or the next request, and an
    unexpected OS error becomes a message rather than a bare errno."""

    def run(args: dict[str, Any]) -> str:
        cleaned = {key: _clean(value) for key, value in args.items()}
        try:
            return clean_text(handler(cleaned))
        except OSError as exc:
            raise RuntimeError(
                clean_text(f"The operation failed: {exc.strerror or exc}.")
            ) from None
        except ValueError as exc:
            raise ValueError(clean_text(str(exc))) from None

    return run


def _clean(value: object) -> object:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {key: _clean(item) for key, item in value.items()}
    return value
