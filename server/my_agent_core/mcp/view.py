"""What an MCP client reads of the memory files: the `memory_view` tool and the two resources.

Both read the files as they are on disk at each request, through the one path check (no link out of
the memory folder, a regular file, bounded: a FIFO or a huge file cannot hang or flood the server),
and never quote an entry the safety scanner blocks: an agent may paste what it reads into its
context, and memory is data, never instructions. Reading creates nothing.
"""

from __future__ import annotations

from typing import Any

from my_agent_core.layout import FILE_NAMES, TARGETS
from my_agent_core.memory.document import ENTRY_DELIMITER
from my_agent_core.memory.render import render_listing
from my_agent_core.memory.safety import describe, scan
from my_agent_core.memory.store import MemoryStore, StoreState
from my_agent_core.paths import PathRefused, read_regular, resolve_inside

__all__ = [
    "MAX_RESOURCE_BYTES",
    "VIEW_INPUT_SCHEMA",
    "VIEW_OUTPUT_SCHEMA",
    "ViewRefused",
    "checked_state",
    "resource_text",
    "view_memory",
]

#: A memory file is a few KiB; the readers refuse anything this large (or a FIFO, a device).
MAX_RESOURCE_BYTES = 1 << 20

VIEW_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "target": {
            "type": "string",
            "enum": list(TARGETS),
            "description": "'memory' (MEMORY.md) or 'user' (USER.md); both when left out.",
        }
    },
}

_TEXT_OR_NULL: list[dict[str, Any]] = [{"type": "string"}, {"type": "null"}]  # portable nullable
_ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "number": {"type": "integer", "description": "1-based position in the file"},
        "text": {"anyOf": _TEXT_OR_NULL, "description": "the entry; null when it is withheld"},
        "chars": {"type": "integer"},
        "blocked": {
            "anyOf": _TEXT_OR_NULL,
            "description": "why the safety scanner withheld the entry (it is never quoted)",
        },
    },
    "required": ["number", "text", "chars", "blocked"],
}
VIEW_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "files": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "target": {"type": "string", "enum": list(TARGETS)},
                    "file": {"type": "string"},
                    "used": {"type": "integer", "description": "characters used"},
                    "limit": {"type": "integer", "description": "the file's budget"},
                    "available": {"type": "boolean"},
                    "error": {"anyOf": _TEXT_OR_NULL},
                    "entries": {"type": "array", "items": _ENTRY_SCHEMA},
                },
                "required": ["target", "file", "used", "limit", "available", "error", "entries"],
            },
        }
    },
    "required": ["files"],
}


class ViewRefused(ValueError):
    """A `memory_view` call with arguments it cannot take; the message says what to pass."""


def checked_state(store: MemoryStore, target: str) -> StoreState:
    """The target as it is on disk, after the one path check (PathRefused when refused)."""
    name = FILE_NAMES[target]
    path = resolve_inside(store.folder(target), name, what=name)
    read_regular(path, max_bytes=MAX_RESOURCE_BYTES, name=name)
    return store.state(target)


def resource_text(store: MemoryStore, target: str) -> str:
    """The live entries of a target as file text; a blocked entry is a `[BLOCKED: ...]` line."""
    name = FILE_NAMES[target]
    state = checked_state(store, target)
    if not state.available:
        raise PathRefused(state.error or f"{name} is unavailable.")
    shown = []
    for number, entry in enumerate(state.entries, start=1):
        issues = scan(entry)
        shown.append(
            f"[BLOCKED: entry {number} of {name} was withheld because it {describe(issues)}. "
            f"The user can review it in {name}.]"
            if issues
            else entry
        )
    return ENTRY_DELIMITER.join(shown) + "\n" if shown else ""


def view_memory(store: MemoryStore, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`memory_view {target?}`: each file's usage and numbered entries, as the `memory` tool's
    messages list them (text), and the same as data (`VIEW_OUTPUT_SCHEMA`)."""
    target = arguments.get("target")
    if target is not None and target not in TARGETS:
        raise ViewRefused(
            f"`target` must be 'memory' (MEMORY.md) or 'user' (USER.md), or left out for both; "
            f"got {target!r}."
        )
    unknown = sorted(set(arguments) - {"target"})
    if unknown:
        raise ViewRefused(f"memory_view takes only `target`; unknown: {', '.join(unknown)}.")
    targets = TARGETS if target is None else (target,)
    texts: list[str] = []
    files: list[dict[str, Any]] = []
    for each in targets:
        text, data = _view_one(store, each)
        texts.append(text)
        files.append(data)
    return "\n\n".join(texts), {"files": files}


def _view_one(store: MemoryStore, target: str) -> tuple[str, dict[str, Any]]:
    name = FILE_NAMES[target]
    try:
        state = checked_state(store, target)
        error = None if state.available else (state.error or f"{name} is unavailable.")
    except PathRefused as exc:
        state, error = None, str(exc)
    limit = store.limits[target]
    data: dict[str, Any] = {
        "target": target,
        "file": name,
        "used": 0,
        "limit": limit,
        "available": error is None,
        "error": error,
        "entries": [],
    }
    if state is None or error is not None:
        return f"{name}: unavailable: {error}", data
    entries = state.entries
    data["used"] = state.used
    data["entries"] = [_entry(number, entry) for number, entry in enumerate(entries, start=1)]
    share = round(100 * state.used / limit) if limit else 0
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    header = f"{name}: {count}, {state.used}/{limit} chars used ({share}%)"
    if not entries:
        return f"{header}.", data
    listing = render_listing(entries, name=name, limit=limit).split("\n", 1)[1]
    return f"{header}:\n{listing}", data


def _entry(number: int, entry: str) -> dict[str, Any]:
    issues = scan(entry)
    return {
        "number": number,
        "text": None if issues else entry,
        "chars": len(entry),
        "blocked": describe(issues) if issues else None,
    }
