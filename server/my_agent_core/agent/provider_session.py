"""The agent's side of the memory providers: recall into the user message, archive finished
turns, forward memory writes, and say once when the provider broke.

The `MemoryManager` already guards every hook (a time limit, failures logged and skipped), so a
provider that hangs or raises never fails a turn; this module only decides WHEN the hooks run and
turns the manager's state into the session's events (`recall`, `provider_error`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..memory.journal import MAX_RECORDS as JOURNAL_RECORDS
from ..memory.providers import MemoryManager, make_memory_search_tool
from ..memory.store import MemoryStore, WriteEvent, WriteListener
from ..tools import Tool
from .events import EventCallback
from .messages import Message

__all__ = ["NO_REPLY", "RECALL_CHARS", "SessionProvider", "WriteFanOut"]

logger = logging.getLogger(__name__)

#: At most this many characters of recalled memory go into one user message.
RECALL_CHARS = 2000
#: The reply archived with a turn that ended without one (stopped, or failed and not retried).
NO_REPLY = "[no reply: the turn was stopped before it finished]"
_ITEM_HEADER = "## Recalled item "


class WriteFanOut:
    """A store write listener that calls several listeners in order, each under its own guard (a
    failing one is logged and the others still run)."""

    def __init__(self, *listeners: WriteListener | None) -> None:
        self.listeners: list[WriteListener] = [item for item in listeners if item is not None]

    def __call__(self, event: WriteEvent) -> None:
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception:
                logger.exception("memory write listener failed")


class SessionProvider:
    """One agent's use of a `MemoryManager`: its hooks at the right moments, its events once."""

    def __init__(self, manager: MemoryManager, emit: EventCallback) -> None:
        self.manager = manager
        self._emit = emit
        self._reported = False
        self._store: MemoryStore | None = None
        self._listener: WriteListener | None = None
        self._unfinished: str | None = None  # the message of a turn that has no reply yet

    @property
    def active(self) -> bool:
        return self.manager.active

    def search_tool(self) -> Tool:
        """`memory_search` over this manager (the agent offers it when the manager is active)."""
        return make_memory_search_tool(self.manager)

    def attach(self, store: MemoryStore | None) -> None:
        """Send the store's writes to the provider too, beside the listener the caller set."""
        if store is None or self._listener is not None:
            return
        self._store = store
        history = lambda: store.log(limit=JOURNAL_RECORDS)  # noqa: E731 (one expression, twice)
        self._listener = self.manager.memory_write_listener(history=history)
        self.manager.catch_up(history, wait=False)  # what an earlier write could not archive
        current = store.on_write
        if isinstance(current, WriteFanOut):
            current.listeners.append(self._listener)
        else:
            store.on_write = WriteFanOut(current, self._listener)

    def detach(self) -> None:
        store, listener = self._store, self._listener
        self._store = self._listener = None
        fan_out = store.on_write if store is not None else None
        if isinstance(fan_out, WriteFanOut) and listener in fan_out.listeners:
            fan_out.listeners.remove(listener)

    def recall(self, text: str, snapshot_entries: Sequence[str]) -> str:
        """The `<recalled_memory>` block for this user message ("" most turns); emits `recall`.
        A turn starts here: the previous one, if it never got its reply, is archived first (the
        same message sent again is a retry, not a second turn)."""
        if self._unfinished is not None and self._unfinished != text:
            self.manager.sync_turn(self._unfinished, NO_REPLY)
        self._unfinished = text
        block = self.manager.recall(
            text, snapshot_entries=list(snapshot_entries), max_chars=RECALL_CHARS
        )
        self.check()
        if block:
            items = sum(1 for line in block.splitlines() if line.startswith(_ITEM_HEADER))
            self._emit({"kind": "recall", "chars": len(block), "items": items})
        return block

    def sync_turn(self, user: str, reply: str) -> None:
        self._unfinished = None
        self.manager.sync_turn(user, reply)
        self.check()

    def end_session(self, messages: Sequence[Message]) -> None:
        """The session is over: archive a turn that was stopped, hand the history to the provider,
        forget what was recalled."""
        if self._unfinished is not None:
            self.manager.sync_turn(self._unfinished, NO_REPLY)
            self._unfinished = None
        if len(messages) > 1:
            self.manager.on_session_end(messages)
        self.manager.new_session()
        self.check()

    def check(self) -> None:
        """Emit `provider_error` the first time the manager reports its provider broken."""
        broken = self.manager.broken
        if broken is None or self._reported:
            return
        self._reported = True
        self._emit(
            {
                "kind": "provider_error",
                "provider": self.manager.name or "provider",
                "message": f"The memory provider was turned off for this session: {broken}",
            }
        )
