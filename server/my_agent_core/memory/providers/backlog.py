"""Memory changes the archive could not take yet: their journal record ids, until the provider is back.

A replace or remove made while the provider is down (a PostgreSQL server stopped, a DSN gone bad)
still succeeds, and what it took out of memory is in the journal (`history.jsonl`). So only the
record's id is kept here, in the folder's private archive folder, and `MemoryManager.catch_up`
archives its entries from the journal once the provider answers, in this process or in the next one
that opens the folder (the MCP server and chat sessions catch up when they start). Nothing is written
while the archive keeps up: the file exists only while something waits.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from my_agent_core.paths import PathRefused, read_regular
from my_agent_core.private import ARCHIVE_DIR, private_dir
from my_agent_core.safe_write import write_atomic

__all__ = ["BACKLOG_FILE", "MAX_WAITING", "Backlog"]

BACKLOG_FILE = "unarchived.json"
MAX_WAITING = 1000  # the journal keeps 200 records: more ids than this can never be caught up
_MAX_BYTES = 256 * 1024
_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


class Backlog:
    """The ids of journal records whose removed entries are not archived yet, for one folder."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def pending(self) -> list[str]:
        """The waiting record ids, oldest first ([] when nothing waits: one `stat`, no file made)."""
        try:
            path = private_dir(self.folder, ARCHIVE_DIR, create=False) / BACKLOG_FILE
            if not os.path.lexists(path):
                return []
            return _parse(read_regular(path, max_bytes=_MAX_BYTES, name=BACKLOG_FILE))
        except (PathRefused, OSError):
            return []

    def add(self, record_ids: Iterable[str]) -> None:
        """Note records whose entries wait (kept in order, each once, at most MAX_WAITING)."""
        new = [i for i in record_ids if _ID.fullmatch(i)]
        if not new:
            return
        with self._locked() as path:
            waiting = _parse(read_regular(path, max_bytes=_MAX_BYTES, name=BACKLOG_FILE))
            for record_id in new:
                if record_id not in waiting:
                    waiting.append(record_id)
            self._write(path, waiting[-MAX_WAITING:])

    def remove(self, record_ids: Iterable[str]) -> None:
        """Forget records that were archived (or can no longer be)."""
        gone = set(record_ids)
        if not gone or not self.pending():
            return
        with self._locked() as path:
            waiting = _parse(read_regular(path, max_bytes=_MAX_BYTES, name=BACKLOG_FILE))
            self._write(path, [i for i in waiting if i not in gone])

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Path]:
        """The backlog's path, under an exclusive lock on its folder (two processes may miss
        writes at once; neither may drop the other's ids)."""
        folder = private_dir(self.folder, ARCHIVE_DIR, create=True)
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield folder / BACKLOG_FILE
        finally:
            os.close(fd)  # releases the lock

    @staticmethod
    def _write(path: Path, waiting: list[str]) -> None:
        if waiting:
            write_atomic(path, json.dumps({"records": waiting}).encode("utf-8"), mode=0o600)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _parse(data: bytes | None) -> list[str]:
    """The ids of a backlog file; anything malformed reads as nothing waiting."""
    if not data:
        return []
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return []
    records = value.get("records") if isinstance(value, dict) else None
    if not isinstance(records, list):
        return []
    return [i for i in records if isinstance(i, str) and _ID.fullmatch(i)]
