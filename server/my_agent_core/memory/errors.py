"""The memory store's errors under one root, and the command line's exit code for each.

A lock timeout and a refused write are failed edits, so they are `MemoryEditError`s, which are
`ValueError`s (docs/contract.md). Telling them apart by the order of `except` clauses breaks the day
someone reorders them: `exit_code` reads an explicit table instead, and the most specific class of
the error that the table names wins, whatever the order of the table or of any `except` clause.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from my_agent_core.memory.lock import LockHolder

__all__ = [
    "EXIT_CODES",
    "EXIT_REFUSED",
    "EXIT_SYSTEM",
    "MemoryChanged",
    "MemoryEditError",
    "MemoryLockTimeout",
    "MemoryStoreError",
    "MemoryWriteError",
    "Unavailable",
    "exit_code",
]


class MemoryStoreError(Exception):
    """The root of every error the memory store raises on purpose (its message says what to do)."""


class MemoryEditError(MemoryStoreError, ValueError):
    """A refused edit. The message says why and how to fix the call; nothing changed on disk."""


class MemoryLockTimeout(MemoryEditError):
    """Another process (`holder`, when known) held the folder's lock for the whole wait."""

    def __init__(self, message: str, holder: LockHolder | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class MemoryWriteError(MemoryEditError):
    """The disk refused the write (full, read-only, an I/O error); the file was left as it was."""


class MemoryChanged(MemoryEditError):
    """The file is no longer the text an edit was previewed on (`apply(..., expect=...)`): someone
    wrote it meanwhile, so the edit the user approved would not be the edit made; nothing written."""


class Unavailable(Exception):
    """A file the store must not read or write (undecodable, too large, not a regular file, a link
    out of the folder, one file under two names). Internal: edits turn it into `MemoryEditError`,
    loads into the target's `error`."""


#: `my-agent` exit code: a refused edit (README: "1 lint errors or a refused edit").
EXIT_REFUSED = 1
#: `my-agent` exit code: locked past the timeout, or the disk refused the write (retrying may work).
EXIT_SYSTEM = 3

#: The exit code of each memory error; a class not named here takes its nearest named base's.
EXIT_CODES: Mapping[type[MemoryStoreError], int] = MappingProxyType(
    {
        MemoryStoreError: EXIT_REFUSED,
        MemoryEditError: EXIT_REFUSED,
        MemoryChanged: EXIT_REFUSED,
        MemoryLockTimeout: EXIT_SYSTEM,
        MemoryWriteError: EXIT_SYSTEM,
    }
)


def exit_code(
    error: MemoryStoreError, table: Mapping[type[MemoryStoreError], int] = EXIT_CODES
) -> int:
    """The exit code of `error`: that of the first class in its method resolution order (itself,
    then its bases, most specific first) that `table` names."""
    for cls in type(error).__mro__:
        if issubclass(cls, MemoryStoreError) and cls in table:
            return table[cls]
    raise LookupError(f"no exit code for {type(error).__name__}")  # the root is always named
