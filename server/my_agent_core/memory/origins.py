"""Who made each memory entry, and from what, in words: derived from the journal, never stored in
the memory files (their `§` format does not change).

The record that created or last changed an entry is the newest change (not undone) whose new text
is exactly that entry. An entry no record made is explained by the file's fingerprint
(`entries_digest`): when the file is what the newest record left, the entry is older than the
history kept; otherwise someone edited the file outside the history (by hand, another program).

The words are the same everywhere (the hover on an entry, the Memory view's tooltip,
`my-agent memory log`): "added 7 Dec by the chat 'Fix the tests' · text from README.md:5 ·
approved by you", "added 7 Dec by the chat 'Fix the tests' · your own words".
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from my_agent_core.memory.journal import FILE_ACTIONS, Journal, JournalRecord, entries_digest
from my_agent_core.memory.provenance import Provenance, clean_label, describe_refs

__all__ = [
    "EntryOrigin",
    "entry_origins",
    "journal_records",
    "origin_summary",
    "record_summary",
]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_EMPTY = entries_digest([])
_CACHED_JOURNALS = 16

Known = Literal["recorded", "hand", "older", "unknown"]


@dataclass(frozen=True, slots=True)
class EntryOrigin:
    """Where one entry comes from: the record that made it (`recorded`), or why none did: `hand`
    (the file was changed outside the history), `older` (the file is as the history left it: the
    entry predates the records kept), `unknown` (edited by hand, or older than the history)."""

    known: Known
    record: JournalRecord | None = None
    added: bool = True  # the record added it (else it changed an entry into it)


def entry_origins(
    records: Sequence[JournalRecord], target: str, entries: Sequence[str]
) -> list[EntryOrigin]:
    """The origin of each of `entries` (the target's entries as the store keeps them), from
    `records` (that target's history, oldest first)."""
    mine = [r for r in records if r.target == target and r.action in FILE_ACTIONS]
    undone = {r.undoes for r in mine if r.undoes}
    made: dict[str, tuple[JournalRecord, bool]] = {}
    for record in mine:
        if record.id in undone:
            continue
        for change in record.changes:
            if change.after is not None:
                made[change.after] = (record, change.before is None)
    newest = next((r for r in reversed(mine) if r.after_digest), None)
    in_sync = newest is not None and newest.after_digest == entries_digest(list(entries))
    complete = bool(mine) and mine[0].before_digest == _EMPTY  # recorded since the file was empty
    out: list[EntryOrigin] = []
    for text in entries:
        found = made.get(text)
        if found is not None:
            out.append(EntryOrigin("recorded", found[0], found[1]))
        elif in_sync:
            out.append(EntryOrigin("older"))
        elif complete:
            out.append(EntryOrigin("hand"))
        else:
            out.append(EntryOrigin("unknown"))
    return out


def origin_summary(origin: EntryOrigin, now: float | None = None) -> str:
    """One entry's origin in words."""
    if origin.known == "hand":
        return "edited by hand (not in the history)"
    if origin.known == "older":
        return "older than the history kept"
    if origin.known == "unknown" or origin.record is None:
        return "edited by hand, or older than the history kept"
    record = origin.record
    if record.action == "undo":
        verb = "restored by an undo"
    else:
        verb = "added" if origin.added else "changed"
    return _sentence(verb, record, now)


def record_summary(record: JournalRecord, now: float | None = None) -> str:
    """A journal record in words (`my-agent memory log`, the log request)."""
    verbs = {"add": "added", "replace": "changed", "remove": "removed", "batch": "changed"}
    if record.action == "undo":
        verb = "undid a change"
    elif record.action in verbs:
        verb = verbs[record.action]
    else:
        return clean_label(record.note or record.action)
    return _sentence(verb, record, now)


def _sentence(verb: str, record: JournalRecord, now: float | None) -> str:
    parts = [f"{verb} {_date(record.time, now)} {_by(record)}"]
    provenance = record.provenance
    if provenance is not None:
        parts.extend(_provenance_words(provenance))
    return " · ".join(parts)


def _date(stamp: float, now: float | None) -> str:
    when = time.localtime(stamp)
    this_year = time.localtime(time.time() if now is None else now).tm_year
    day = f"{when.tm_mday} {_MONTHS[when.tm_mon - 1]}"
    return day if when.tm_year == this_year else f"{day} {when.tm_year}"


def _by(record: JournalRecord) -> str:
    author = record.author
    provenance = record.provenance
    if author == "agent" or author.startswith("agent:"):
        if provenance is not None and provenance.title:
            return f"by the chat '{clean_label(provenance.title, 80)}'"
        return "by the agent in a chat"
    if author == "user":
        return "by you in the editor"
    if author == "cli":
        return "by you (my-agent memory)"
    for prefix, how in (("vscode-lm:", "language-model tool"), ("mcp:", "MCP")):
        if author.startswith(prefix):
            return f"by {clean_label(author[len(prefix) :], 64)} ({how})"
    return f"by {clean_label(author, 64)}"


def _provenance_words(provenance: Provenance) -> list[str]:
    if provenance.from_user:
        words = ["your own words"]
    else:
        copied = [r for r in provenance.sources if r.how == "copied"]
        read = [r for r in provenance.sources if r.how == "read"]
        words = []
        if copied:
            words.append(f"text from {describe_refs(copied, 0 if read else provenance.more)}")
        if read:
            words.append(f"written after reading {describe_refs(read, provenance.more)}")
    if provenance.approved:
        words.append("approved by you")
    elif not provenance.from_user and provenance.mode == "auto":
        words.append("not asked (memory approval: auto)")
    return words


# ------------------------------------------------------------------------------------ reading

_cache: OrderedDict[tuple[str, int, int, int], list[JournalRecord]] = OrderedDict()
_cache_lock = threading.Lock()


def journal_records(path: Path) -> list[JournalRecord]:
    """The readable records of a history file, oldest first ([] when it cannot be read), kept per
    process while the file's identity (inode, size, modification time) stays the same: a hover and
    every change notification ask for them."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return []
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    records = Journal(path).read()
    with _cache_lock:
        _cache[key] = records
        while len(_cache) > _CACHED_JOURNALS:
            _cache.popitem(last=False)
    return records
