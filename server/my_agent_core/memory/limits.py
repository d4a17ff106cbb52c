"""The store's budgets and bounds, in the one place every component reads them from (a light module:
the command line and the git merge driver import it without the store)."""

from __future__ import annotations

__all__ = ["LOCK_TIMEOUT", "MAX_FILE_BYTES", "MEMORY_CHAR_LIMIT", "USER_CHAR_LIMIT"]

MEMORY_CHAR_LIMIT = 2200
USER_CHAR_LIMIT = 1375

#: Seconds an edit waits for another process's lock before it gives up (configurable per store).
LOCK_TIMEOUT = 10.0
#: Bytes the store reads of one memory file: ~100x the default budget even in 4-byte characters, so a
#: hand-overfilled file still loads (the snapshot cuts it) and can be repaired with edits, while a
#: runaway file (a log piped into MEMORY.md) is refused with a message instead of read.
MAX_FILE_BYTES = 256 * 1024
