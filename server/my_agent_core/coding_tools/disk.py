"""The terminal's EditApplier: an approved change goes to disk atomically, or not at all.

A crash, a full disk or a kill mid-write must leave either the old file or the new one, never half
of each: the text goes to a temporary file in the same folder, is flushed to disk, then renamed over
the original (keeping its mode). A file that changed since its diff was shown is not overwritten.
"""

from __future__ import annotations

from my_agent_core.paths import PathRefused, read_regular
from my_agent_core.safe_write import write_atomic

from .seams import ApplyConflict, ApplyError, FileChange
from .textfile import decode_for_edit

__all__ = ["DiskApplier"]


class DiskApplier:
    """Writes approved changes to the file on disk (no editor in the loop)."""

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes

    def apply(self, change: FileChange) -> None:
        current = self._current_text(change)
        if change.before is None and current is not None:
            raise ApplyConflict(
                f"{change.relpath} was created by someone else while the change waited for "
                "approval; nothing was written. Read it and decide again."
            )
        if change.before is not None and current != change.before:
            state = "was deleted" if current is None else "changed"
            raise ApplyConflict(
                f"{change.relpath} {state} while the change waited for approval; nothing was "
                "written. Read it again and redo the edit on its current text."
            )
        data = change.after.encode("utf-8")
        if change.bom:
            data = b"\xef\xbb\xbf" + data
        try:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(change.path, data)
        except OSError as exc:
            raise ApplyError(
                f"{change.relpath} could not be written ({exc.strerror or exc}); the file is "
                "unchanged."
            ) from None

    def _current_text(self, change: FileChange) -> str | None:
        try:
            data = read_regular(change.path, max_bytes=self._max_bytes, name=change.relpath)
        except PathRefused as exc:
            raise ApplyError(str(exc)) from None
        if data is None:
            return None
        decoded = decode_for_edit(data)
        return decoded.text if decoded is not None else None
