"""One workspace folder as the tools see it: every path checked, unsaved editor text first.

Paths come from the model, so each goes through `paths.resolve_inside` (no `..` out, no absolute
path elsewhere, no symbolic link leading out) before anything is read or written. Writes are also
kept away from `.my_agent_core/` (memory is written only by the `memory` tool; sessions and the
archive are private) and from `.git/`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from my_agent_core.layout import MEMORY_SUBDIR
from my_agent_core.paths import PathRefused, read_regular, resolve_inside, size_text

from .seams import BufferReader, TextSource
from .textfile import decode_for_read, is_binary

__all__ = ["Folder", "Text", "WorkspaceError"]


class WorkspaceError(ValueError):
    """A tool call that cannot be done as asked; the message tells the model how to fix it."""


@dataclass(frozen=True)
class Text:
    """A file's current text: from the editor's buffer or from disk (BOM dropped).

    `exact` is False when undecodable bytes were replaced (never for buffers); `disk_size` is the
    file's size in bytes and `partial` says only its first part was read.
    """

    text: str
    source: TextSource
    bom: bool = False
    exact: bool = True
    disk_size: int = 0
    partial: bool = False


class Folder:
    """The real root of a workspace folder, its path checks, and buffer-first reads."""

    def __init__(self, folder: Path | str, buffers: BufferReader | None = None) -> None:
        root = Path(os.path.realpath(folder))
        if not root.is_dir():
            raise ValueError(f"{folder} is not a folder")
        self.root = root
        self.buffers = buffers

    def resolve(self, path: str | None, *, default: str | None = None) -> Path:
        raw = path if path not in (None, "") else default
        if raw is None:
            raise WorkspaceError(
                "The path is empty: pass a path relative to the folder, e.g. src/main.py."
            )
        try:
            return resolve_inside(self.root, raw)
        except PathRefused as exc:
            raise WorkspaceError(str(exc)) from None

    def rel(self, real: Path) -> str:
        if real == self.root:
            return "."
        return real.relative_to(self.root).as_posix()

    def check_writable(self, real: Path) -> None:
        """Refuse writes into the memory folder, the private folder, `.git`, or the folder itself."""
        rel = self.rel(real)
        if rel == ".":
            raise WorkspaceError("The path is the workspace folder itself; name a file inside it.")
        parts = [part.casefold() for part in Path(rel).parts]
        if parts[0] == MEMORY_SUBDIR[0]:
            if len(parts) > 1 and parts[1] == MEMORY_SUBDIR[1]:
                raise WorkspaceError(
                    f"{rel} is a memory file: it is written only through the `memory` tool "
                    '(target "memory" for MEMORY.md, "user" for USER.md; action add / replace / '
                    "remove), so budgets, safety checks and the history apply. Use `memory` instead."
                )
            raise WorkspaceError(
                f"{rel} is in {MEMORY_SUBDIR[0]}/, which holds my-agent's private data (chat "
                "sessions, the archive); it is not written by tools."
            )
        if ".git" in parts:
            raise WorkspaceError(
                f"{rel} is inside .git/, git's own folder; change the repository with git commands "
                "(run_command) instead."
            )

    def text_of(self, real: Path, *, max_bytes: int, truncate: bool) -> Text | None:
        """The current text (None when the file does not exist and is not open in the editor).

        Raises WorkspaceError for a folder, a special file, a binary file, or a file over
        `max_bytes` when `truncate` is False."""
        if self.buffers is not None:
            unsaved = self.buffers.text_of(real)
            if unsaved is not None:
                return Text(unsaved, "buffer", disk_size=len(unsaved.encode("utf-8", "replace")))
        rel = self.rel(real)
        if real.is_dir():
            raise WorkspaceError(
                f"{rel} is a folder, not a file: use list_files with path={rel!r} to see its files."
            )
        try:
            data = read_regular(real, max_bytes=max_bytes, truncate=truncate, name=rel)
            size = os.stat(real).st_size if data is not None else 0
        except PathRefused as exc:
            raise WorkspaceError(str(exc)) from None
        except OSError as exc:
            raise WorkspaceError(f"{rel} cannot be read: {exc.strerror or exc}.") from None
        if data is None:
            return None
        if is_binary(data):
            raise WorkspaceError(
                f"{rel} is a binary file ({size_text(size)}); it is not shown as text. Use run_command "
                "(e.g. `file` or `xxd | head`) if you need to inspect it."
            )
        partial = size > len(data)
        if partial:  # a cut file ends at its last complete line
            data = data[: data.rfind(b"\n") + 1]
        decoded = decode_for_read(data)
        return Text(decoded.text, "disk", decoded.bom, decoded.exact, size, partial)

    def blocked_parent(self, real: Path) -> str | None:
        """Why no file can be created at `real` (a parent is a file), or None."""
        parent = real.parent
        while parent != self.root and not parent.exists():
            parent = parent.parent
        if parent.exists() and not parent.is_dir():
            return f"{self.rel(real)} cannot exist: {self.rel(parent)} is a file, not a folder."
        return None

    def describe_missing(self, real: Path) -> str:
        return self.blocked_parent(real) or (
            f"{self.rel(real)} does not exist. Use list_files or search_text to find the right "
            "path (paths are relative to the workspace folder)."
        )
