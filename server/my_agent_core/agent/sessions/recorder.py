"""Writes an agent's session to its file as it goes, without ever failing a turn.

The agent calls it at each change of its history (a message appended, a rollback, a compaction, the
end of a turn); the file is created with the session's first message, so a session that never sent
anything leaves nothing behind. A session that cannot be saved (a full disk, a refused folder) goes on
in memory, and `session_error` says so once per episode.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ..events import EventCallback
from ..messages import Message
from .store import SessionHeader, SessionRecord, SessionStore, SessionWriter

__all__ = ["SessionRecorder"]

log = logging.getLogger(__name__)


class SessionRecorder:
    """The persistence of one agent: which store, which open file, which error was reported."""

    def __init__(self, store: SessionStore | None, emit: EventCallback) -> None:
        self.store = store
        self._emit = emit
        self._writer: SessionWriter | None = None
        self._header: Callable[[], SessionHeader] | None = None
        self._reported: str | None = None

    @property
    def error(self) -> str | None:
        """Why the session is not fully on disk right now, else None."""
        return self._writer.error if self._writer is not None else None

    def start(self, header: Callable[[], SessionHeader]) -> None:
        """A new session: its file is created (with `header()`) on its first message."""
        self.end()
        self._header = header

    def resume(self, record: SessionRecord) -> None:
        """Hold and continue the file of a loaded session (SessionBusy when someone holds it)."""
        if self.store is None:
            raise ValueError("a resumed session needs the store it is persisted in")
        self.end()
        self._writer = SessionWriter.reopen(record, sync=self.store.sync)

    def message(self, history: Sequence[Message]) -> None:
        """The last message of `history` was appended (the file is created if need be)."""
        if self._writer is None and not self._create(history[1:-1]):
            return
        self._write({"t": "msg", "m": history[-1]})

    def cut(self, length: int) -> None:
        """A failed turn rolled the history back to `length` messages (without the system one)."""
        self._write({"t": "cut", "n": length})

    def compacted(self, reason: str, before: int, after: int, history: Sequence[Message]) -> None:
        self._write(
            {"t": "compact", "reason": reason, "before": before, "after": after, "m": history}
        )

    def commit(
        self,
        length: int,
        at: float,
        title: str,
        usage: dict[str, Any],
        last: dict[str, Any] | None,
    ) -> None:
        """The end of a turn (or of a compaction): the consistent state, fsync'd off the turn."""
        writer = self._writer
        if writer is None:
            return
        writer.commit(
            {"t": "commit", "n": length, "at": at, "title": title, "usage": usage, "last": last}
        )
        self._report(writer.error)

    def end(self) -> None:
        """Release the session's file (it stays on disk)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    def _create(self, earlier: Sequence[Message]) -> bool:
        store, header = self.store, self._header
        if store is None or header is None:
            return False
        try:
            self._writer = store.create(header())
        except (OSError, ValueError) as exc:  # SessionError, PathRefused: keep chatting
            self._report(f"the session is not saved: {exc}")
            self.store = None
            return False
        for message in earlier:  # a history that had no file yet
            self._writer.append({"t": "msg", "m": message})
        return True

    def _write(self, record: dict[str, Any]) -> None:
        writer = self._writer
        if writer is None:
            return
        writer.append(record)
        self._report(writer.error)

    def _report(self, error: str | None) -> None:
        if error and error != self._reported:
            log.warning("%s", error)
            self._emit({"kind": "session_error", "message": error})
        self._reported = error
