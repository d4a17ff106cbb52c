"""One folder's history as the store writes it, including the changes it could not record.

A broken history must not block memory, so an edit whose record cannot be appended is still saved;
but undo must then know a change is missing. The writer remembers such changes (a gap) and puts a
`gap` record before the next record it manages to write, and it keeps the reason, so the store can
say once that history is not being recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from my_agent_core.memory.journal import Journal, JournalError, JournalRecord

__all__ = ["Gap", "JournalWriter"]


@dataclass(slots=True)
class Gap:
    """Changes saved while the journal could not be written, to be marked in it once it can."""

    count: int
    first: float
    target: str
    reason: str


class JournalWriter:
    """Appends the records of one folder's `journal`. `error` is why the last change was saved
    without its record ("history not recorded: ..."), None once a record was written again."""

    __slots__ = ("error", "gap", "journal")

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.error: str | None = None
        self.gap: Gap | None = None

    def append(self, record: JournalRecord, *, commit: bool = True) -> str | None:
        """Append `record` after the mark of any change saved while the journal was failing; None
        on success, else "history not recorded: ...". `commit`: forget that mark once written
        (an edit calls `saved` itself instead, once its file write succeeded)."""
        records = [record]
        gap = self.gap
        if gap is not None:
            records.insert(
                0,
                self.journal.new_record(
                    "gap",
                    gap.target,
                    record.author,
                    note=(
                        f"{gap.count} change(s) saved without a history record, the first at "
                        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(gap.first))}: "
                        f"{gap.reason}"
                    ),
                ),
            )
        try:
            self.journal.append(*records)
        except JournalError as exc:
            return f"history not recorded: {exc}"
        if commit:
            self.gap = None
            self.error = None
        return None

    def saved(self, record: JournalRecord, failure: str | None) -> None:
        """The change of `record` is on disk; `failure`: why its record is not (None: it is, and
        so is the mark of any earlier gap)."""
        if failure is None:
            self.gap = None
            self.error = None
            return
        self.error = failure
        if self.gap is None:
            self.gap = Gap(0, record.time, record.target, failure)
        self.gap.count += 1

    def retract(self) -> None:
        """Take back the record of an edit that did not reach the disk (same hold of the lock)."""
        self.journal.retract()
