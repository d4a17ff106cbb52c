"""Undo: which recorded change an undo reverts, and the entries with that change taken back.

An undo must never revert the wrong entry, so it works on entries, not whole files (later edits by
others stay), refuses when an entry the change produced is gone, and never restores text the safety
scanner blocks. It must never be stuck either: a change that can no longer be reverted (its entry
was edited by hand since) is named and passed over (`CannotRevert`: the store marks it skipped), so
the next undo reaches the change before it. The store holds the locks and writes; this module only
decides.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from my_agent_core.layout import TARGETS
from my_agent_core.memory.edits import entry_preview, issues_of
from my_agent_core.memory.errors import MemoryEditError
from my_agent_core.memory.journal import Change, History, JournalRecord
from my_agent_core.memory.safety import describe

__all__ = ["CannotRevert", "describe_change", "pick_change", "revert_record", "undo_entries"]


class CannotRevert(MemoryEditError):
    """An undo that the change itself rules out (its entries changed since, or it would restore
    unsafe text), as opposed to one the history cannot vouch for."""


def pick_change(
    histories: Sequence[History], record_id: str | None
) -> tuple[JournalRecord, History]:
    """The change an undo reverts and the history it is in (the newest undoable change of all
    `histories` without `record_id`), or a `MemoryEditError` saying why there is none."""
    if record_id is None:
        candidates = [
            (record, history)
            for history in histories
            if (record := history.newest_undoable()) is not None
        ]
        if not candidates:
            problems = [h.problem for h in histories if h.problem]
            why = f" ({'; '.join(problems)})" if problems else ""
            raise MemoryEditError(
                f"Nothing to undo: the history has no change left to revert{why}."
            )
        record, history = max(candidates, key=lambda pair: pair[0].time)
    else:
        shown = repr(record_id if len(record_id) <= 40 else record_id[:39] + "…")
        history = next((h for h in histories if h.find(record_id) is not None), histories[0])
        found = history.find(record_id)
        if found is None:
            raise MemoryEditError(
                f"No change {shown} in the history (`my-agent memory log` lists the ids)."
            )
        if not found.changes_file or found.action == "undo":
            raise MemoryEditError(
                f"{shown} is a {found.action} record, not a change that can be undone."
            )
        undone = history.undone_by(found.id)
        if undone is not None:
            raise MemoryEditError(f"Change {shown} was already undone (by {undone.id}).")
        record = found
    if record.target not in TARGETS:
        raise MemoryEditError(
            f"Change {record.id} names an unknown file {record.target!r}; it cannot be undone."
        )
    return record, history


def undo_entries(
    record: JournalRecord,
    history: History,
    entries: list[str],
    digest: str,
    name: str,
    *,
    by_id: bool,
) -> tuple[list[str], list[Change], list[str]]:
    """`entries` (whose digest is `digest`) with `record` taken back, as `revert_record`.

    A plain undo (not `by_id`) reverts only a change the history shows is the newest one to its
    file. When it cannot show that (the file was changed by hand since), a change that could still
    be reverted on top of the file is refused with its id (the user decides); one that cannot
    (its entry was edited or removed since) raises `CannotRevert` saying so, so it is passed over
    rather than blocking every later undo."""
    reason = None if by_id else history.unexplained(record, digest, name)
    if reason is None:
        return revert_record(record, entries, name)
    try:
        revert_record(record, list(entries), name)
    except CannotRevert as exc:
        raise CannotRevert(f"{exc} ({reason})") from None
    raise MemoryEditError(
        f"Cannot undo {describe_change(record, name)}: {reason}. Undo reverts a change only when "
        "the history shows it is the newest one, so nothing was written. To revert it anyway, on "
        f"top of {name} as it is now, undo it by its id: {record.id}."
    )


def revert_record(
    record: JournalRecord, entries: list[str], name: str
) -> tuple[list[str], list[Change], list[str]]:
    """`entries` with `record`'s changes taken back, the inverse changes, and the note; raises
    `CannotRevert` when an entry it produced is gone or the text it would restore looks unsafe."""
    inverse: list[Change] = []
    for change in reversed(record.changes):
        issues = issues_of(change.before) if change.before is not None else ()
        if issues:
            raise CannotRevert(
                f"Cannot undo {describe_change(record, name)}: it would restore an entry that looks "
                f"unsafe ({describe(list(issues))}); restore it by hand if you trust it."
            )
        undone = _revert(entries, change, name, record)
        if undone is not None:
            inverse.append(undone)
    if not inverse:
        raise CannotRevert(
            f"Cannot undo {describe_change(record, name)}: {name} already reads as it did before it."
        )
    return entries, inverse, [f"Undid {record.action} by {record.author}"]


def _revert(entries: list[str], change: Change, name: str, record: JournalRecord) -> Change | None:
    """Take back one change in place; the inverse change, or None when there was nothing to do."""
    if change.after is not None:
        if change.after not in entries:
            raise CannotRevert(
                f"Cannot undo {describe_change(record, name)}: the entry "
                f'"{entry_preview(change.after)}" is no longer in {name} as that change left it.'
            )
        index = entries.index(change.after)
        if change.before is None:
            del entries[index]
        else:
            entries[index] = change.before
        return Change(index, change.after, change.before)
    if change.before is not None and change.before not in entries:
        index = min(change.index, len(entries))
        entries.insert(index, change.before)
        return Change(index, None, change.before)
    return None


def describe_change(record: JournalRecord, name: str) -> str:
    """`change 3f2a… (add "…" in MEMORY.md by agent, 2026-12-01 10:42)`; text the scanner blocks is
    not quoted."""
    text = record.after if record.after is not None else record.before
    quoted = f' "{entry_preview(text)}"' if text and not issues_of(text) else ""
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.time))
    return f"change {record.id} ({record.action}{quoted} in {name} by {record.author}, {stamp})"
