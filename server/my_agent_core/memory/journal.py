"""The history journal: every change to a memory file, with who made it, so any change can be undone.

One JSON object per line in `history.jsonl` beside the memory files. Records are appended under the
store's lock; the file is trimmed to the newest `MAX_RECORDS` so it stays small. A record holds the
entry-level changes (not whole files) so an undo applies to the file as it is now, never clobbering what
others wrote since.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MAX_RECORDS", "Change", "Journal", "JournalRecord"]

MAX_RECORDS = 200
_TRIM_AT_BYTES = 512 * 1024  # trim when the file grows past this...
_KEEP_BYTES = 256 * 1024  # ...down to the newest MAX_RECORDS records within this size


@dataclass(frozen=True, slots=True)
class Change:
    """One entry-level change: `before` None = added, `after` None = removed, both = replaced."""

    index: int
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """A journal line: what changed in which file, when, by whom, and what it undoes (if an undo)."""

    id: str
    time: float
    action: str
    target: str
    author: str
    changes: tuple[Change, ...] = field(default=())
    undoes: str | None = None

    @property
    def before(self) -> str | None:
        """The text before the change (entries joined by blank lines), for display."""
        texts = [c.before for c in self.changes if c.before is not None]
        return "\n\n".join(texts) if texts else None

    @property
    def after(self) -> str | None:
        """The text after the change, for display."""
        texts = [c.after for c in self.changes if c.after is not None]
        return "\n\n".join(texts) if texts else None

    def to_json(self) -> dict[str, Any]:
        """The record as written to disk and sent to the editor."""
        return {
            "id": self.id,
            "time": self.time,
            "action": self.action,
            "target": self.target,
            "author": self.author,
            "changes": [
                {"index": c.index, "before": c.before, "after": c.after} for c in self.changes
            ],
            "undoes": self.undoes,
            "before": self.before,
            "after": self.after,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JournalRecord:
        changes = tuple(
            Change(int(c["index"]), c.get("before"), c.get("after"))
            for c in data.get("changes", [])
        )
        return cls(
            id=str(data["id"]),
            time=float(data["time"]),
            action=str(data["action"]),
            target=str(data["target"]),
            author=str(data.get("author", "unknown")),
            changes=changes,
            undoes=data.get("undoes"),
        )


class Journal:
    """Append-only, bounded history file. Callers hold the store's lock while writing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._fd_pid = 0

    def close(self) -> None:
        """Close the append descriptor kept open between records."""
        if self._fd is not None and self._fd_pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None

    def new_record(
        self,
        action: str,
        target: str,
        author: str,
        changes: list[Change],
        undoes: str | None = None,
    ) -> JournalRecord:
        return JournalRecord(
            id=uuid.uuid4().hex[:12],
            time=time.time(),
            action=action,
            target=target,
            author=author,
            changes=tuple(changes),
            undoes=undoes,
        )

    def append(self, record: JournalRecord) -> None:
        """Append one record; trim the file when it grows past twice the bound."""
        line = json.dumps(record.to_json(), ensure_ascii=False) + "\n"
        fd = self._descriptor()
        os.write(fd, line.encode("utf-8"))
        size = os.fstat(fd).st_size
        if size > _TRIM_AT_BYTES:
            self._trim()

    def _descriptor(self) -> int:
        """An O_APPEND descriptor of the journal, re-opened after a fork or once the file it names was
        replaced or deleted (its link count drops to zero)."""
        if self._fd is not None and self._fd_pid == os.getpid():
            if os.fstat(self._fd).st_nlink > 0:
                return self._fd
            self.close()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        self._fd = os.open(self.path, flags, 0o644)
        self._fd_pid = os.getpid()
        return self._fd

    def read(self) -> list[JournalRecord]:
        """All readable records, oldest first; a torn or garbled line is skipped, not fatal.

        A journal that is a symbolic link is not read: a cloned repository must not feed `undo`."""
        if self.path.is_symlink():
            return []
        try:
            raw = self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        records: list[JournalRecord] = []
        for line in raw.splitlines():
            try:
                records.append(JournalRecord.from_json(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                continue
        return records

    def last_undoable(self) -> JournalRecord | None:
        """The newest change that is neither an undo nor already undone."""
        records = self.read()
        undone = {r.undoes for r in records if r.undoes}
        for record in reversed(records):
            if record.undoes is None and record.id not in undone:
                return record
        return None

    def _trim(self) -> None:
        """Keep the newest records (amortised: runs once per ~256 KiB of appends)."""
        kept: list[str] = []
        size = 0
        for record in reversed(self.read()[-MAX_RECORDS:]):
            line = json.dumps(record.to_json(), ensure_ascii=False) + "\n"
            size += len(line.encode("utf-8"))
            if size > _KEEP_BYTES and kept:
                break
            kept.append(line)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_text("".join(reversed(kept)), encoding="utf-8")
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(
                missing_ok=True
            )  # a no-op once renamed; the store's load sweeps a killed one
