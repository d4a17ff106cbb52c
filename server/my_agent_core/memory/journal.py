"""The history journal: every change to a memory file, with who made it, so any change can be undone.

One JSON object per line in `history.jsonl` beside the memory files. Records are appended under the
store's lock; the file is trimmed to the newest `MAX_RECORDS` so it stays small. A record holds the
entry-level changes (not whole files) so an undo applies to the file as it is now, never clobbering what
others wrote since.

An undo must never revert the wrong entry, so the history also proves what it claims: each record
carries a digest of the file's entries before and after its change, and `History.unexplained` walks
those digests from a record to the file as it is now. A damaged line (a torn append, a hand edit) and
a `gap` record (a change saved while the journal could not be written) are kept in view as places
where a change may be missing. A record is never glued onto a torn line, and a write that fails
half-way is taken back, so one bad append cannot eat the next record.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import math
import os
import re
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from my_agent_core.bounded_json import loads
from my_agent_core.memory.document import serialize
from my_agent_core.memory.provenance import Provenance
from my_agent_core.paths import PathRefused, read_tail
from my_agent_core.private import keep_private_memory
from my_agent_core.safe_write import write_atomic

__all__ = [
    "FILE_ACTIONS",
    "MAX_RECORDS",
    "Change",
    "Damage",
    "History",
    "Journal",
    "JournalError",
    "JournalRecord",
    "canonical_digest",
    "entries_digest",
]

MAX_RECORDS = 200
_TRIM_AT_BYTES = 512 * 1024  # trim when the file grows past this...
_KEEP_BYTES = 256 * 1024  # ...down to the newest MAX_RECORDS records within this size
_READ_BYTES = 4 * 1024 * 1024  # what a reader takes from the end of a journal grown by other hands
_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")
_NEWEST_WINDOW = 8 * 1024  # bytes first read to find the newest record (most are far smaller)

#: How many forks separate this process from the one that imported this module: a descriptor kept
#: open is re-opened in a forked child (each append checks, so without a `getpid` system call).
_FORKS = [0]
os.register_at_fork(after_in_child=lambda: _FORKS.__setitem__(0, _FORKS[0] + 1))

#: Actions that changed a memory file. `skip` (an undo passed over a change it could not revert) and
#: `gap` (a change saved without its record, or a damaged line dropped by a trim) change no file.
FILE_ACTIONS = frozenset({"add", "replace", "remove", "batch", "undo"})


def entries_digest(entries: Iterable[str]) -> str:
    """A short fingerprint of a file's entries (its content as the store sees it, not its bytes):
    a hand edit that only reformats delimiters or line ends keeps it."""
    return canonical_digest(serialize(list(entries)).encode("utf-8", "surrogatepass"))


def canonical_digest(canonical: bytes) -> str:
    """`entries_digest` from the canonical bytes the store writes (`serialize(entries)` in UTF-8),
    so a write fingerprints the bytes it already has."""
    return hashlib.blake2b(canonical, digest_size=12).hexdigest()


class JournalError(Exception):
    """The journal could not be written; the message says why (for "history not recorded: ...")."""


@dataclass(frozen=True, slots=True)
class Change:
    """One entry-level change: `before` None = added, `after` None = removed, both = replaced."""

    index: int
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """A journal line: what changed in which file, when, by whom, and what it undoes (if an undo).

    `before_digest` / `after_digest` fingerprint the target's entries around the change (None in
    records of older versions); `skips` names the change a `skip` passed over; `note` says why for
    `skip` and `gap` records; `provenance` is where an agent write in a chat session came from
    (`memory/provenance.py`; None for other authors and for records of older versions)."""

    id: str
    time: float
    action: str
    target: str
    author: str
    changes: tuple[Change, ...] = field(default=())
    undoes: str | None = None
    skips: str | None = None
    before_digest: str | None = None
    after_digest: str | None = None
    note: str | None = None
    provenance: Provenance | None = None

    @property
    def changes_file(self) -> bool:
        """Whether this record changed a memory file (as opposed to a skip or gap marker)."""
        return self.action in FILE_ACTIONS

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
            "skips": self.skips,
            "before_digest": self.before_digest,
            "after_digest": self.after_digest,
            "note": self.note,
            "provenance": self.provenance.to_json() if self.provenance is not None else None,
            "before": self.before,
            "after": self.after,
        }

    def to_line(self) -> bytes:
        """The record as one line of the journal: `to_json` without the display fields (`before`,
        `after`, which the changes hold) and without empty ones.

        Written out field by field, as `json.dumps(..., ensure_ascii=False)` writes them (a test
        holds the two equal): every edit appends one, and the general encoder cost as much as the
        rest of the append."""
        out = [
            '{"id": ',
            _string(self.id),
            ', "time": ',
            _number(self.time),
            ', "action": ',
            _string(self.action),
            ', "target": ',
            _string(self.target),
            ', "author": ',
            _string(self.author),
        ]
        if self.changes:
            out.append(', "changes": [')
            for n, c in enumerate(self.changes):
                out += (
                    '{"index": ' if n == 0 else ', {"index": ',
                    _number(c.index),
                    ', "before": ',
                    _NULL if c.before is None else _string(c.before),
                    ', "after": ',
                    _NULL if c.after is None else _string(c.after),
                    "}",
                )
            out.append("]")
        for key, value in (
            ('"undoes"', self.undoes),
            ('"skips"', self.skips),
            ('"before_digest"', self.before_digest),
            ('"after_digest"', self.after_digest),
            ('"note"', self.note),
        ):
            if value is not None:
                out += (", ", key, ": ", _string(value))
        if self.provenance is not None:
            out += (', "provenance": ', _ENCODER.encode(self.provenance.to_json()))
        out.append("}\n")
        # a lone surrogate (never from the store) becomes its JSON escape, never an invalid line
        return "".join(out).encode("utf-8", "backslashreplace")

    @classmethod
    def from_json(cls, data: object) -> JournalRecord:
        """Parse one line's object; anything not shaped like a record raises ValueError."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        raw_changes = data.get("changes", [])
        if not isinstance(raw_changes, list):
            raise ValueError("changes is not a list")
        changes = []
        for c in raw_changes:
            if not isinstance(c, dict):
                raise ValueError("a change is not an object")
            changes.append(
                Change(_int(c.get("index")), _opt_str(c.get("before")), _opt_str(c.get("after")))
            )
        stamp = data.get("time")
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
            raise ValueError("time is not a number")
        return cls(
            id=_id(data.get("id")),
            time=float(stamp),
            action=_str(data.get("action")),
            target=_str(data.get("target")),
            author=_opt_str(data.get("author")) or "unknown",
            changes=tuple(changes),
            undoes=_opt_str(data.get("undoes")),
            skips=_opt_str(data.get("skips")),
            before_digest=_opt_str(data.get("before_digest")),
            after_digest=_opt_str(data.get("after_digest")),
            note=_opt_str(data.get("note")),
            provenance=Provenance.from_json(data.get("provenance")),
        )


@dataclass(frozen=True, slots=True)
class Damage:
    """A line of the journal that is not a record (torn by a crash or a full disk, or hand-edited):
    a change may be missing there."""

    line: int  # 1-based, counted in what was read


@dataclass(frozen=True, slots=True)
class History:
    """The journal as read: records and damaged lines in file order, and why it could not be read."""

    items: tuple[JournalRecord | Damage, ...] = ()
    problem: str | None = None

    @property
    def records(self) -> list[JournalRecord]:
        return [item for item in self.items if isinstance(item, JournalRecord)]

    def find(self, record_id: str) -> JournalRecord | None:
        return next((r for r in self.records if r.id == record_id), None)

    def undone_by(self, record_id: str) -> JournalRecord | None:
        """The undo record that reverted `record_id`, if any."""
        return next((r for r in self.records if r.undoes == record_id), None)

    def newest_undoable(self) -> JournalRecord | None:
        """The newest change that is not an undo and was neither undone nor skipped."""
        records = self.records
        passed = {r.undoes for r in records if r.undoes} | {r.skips for r in records if r.skips}
        for record in reversed(records):
            if (
                record.action in FILE_ACTIONS
                and record.action != "undo"
                and record.id not in passed
            ):
                return record
        return None

    def unexplained(self, record: JournalRecord, current: str, name: str) -> str | None:
        """Why the history cannot show that `record` is the newest change to its file, given the
        digest `current` of the file's entries now; None when every later change of that file is
        recorded, so the file is exactly what the history says (`name` is the file's name).

        Walking forward, each later change must start from where the one before left the file,
        or from where it started (that change never landed, or was reverted by hand exactly): both
        states are fully explained by recorded changes."""
        try:
            position = self.items.index(record)
        except ValueError:
            return "that change is not in the history"
        if record.after_digest is None or record.before_digest is None:
            return (
                "that change was recorded by an older version, without the fingerprint undo checks"
            )
        expected, fallback = record.after_digest, record.before_digest
        for item in self.items[position + 1 :]:
            if isinstance(item, Damage):
                return (
                    f"line {item.line} of the history after it is damaged, so a later change may "
                    "be missing from the history"
                )
            if item.action == "gap":
                return f"a later change was saved without its history record ({item.note})"
            if item.target != record.target or not item.changes_file:
                continue
            if item.before_digest is None or item.before_digest not in (expected, fallback):
                return f"{name} was changed outside the history before change {item.id}"
            expected, fallback = item.after_digest or "", item.before_digest
        if current not in (expected, fallback):
            return (
                f"{name} was changed outside the history since (by hand, by another program, or "
                "by an edit whose history could not be recorded)"
            )
        return None


class Journal:
    """Append-only, bounded history file. Callers hold the store's lock while writing."""

    def __init__(self, path: Path, *, max_read_bytes: int = _READ_BYTES) -> None:
        self.path = path
        self.max_read_bytes = max_read_bytes
        self._fd: int | None = None
        self._fd_pid = -1  # the fork generation that opened `_fd`
        self._retract_to: int | None = None
        self._ends_at = -1  # the size our last append left the file at (-1: unknown)

    def close(self) -> None:
        """Close the append descriptor kept open between records."""
        if self._fd is not None and self._fd_pid == _FORKS[0]:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None

    def new_record(
        self,
        action: str,
        target: str,
        author: str,
        changes: Sequence[Change] = (),
        undoes: str | None = None,
        *,
        skips: str | None = None,
        before_digest: str | None = None,
        after_digest: str | None = None,
        note: str | None = None,
        provenance: Provenance | None = None,
    ) -> JournalRecord:
        return JournalRecord(
            id=os.urandom(6).hex(),
            time=time.time(),
            action=action,
            target=target,
            author=author,
            changes=tuple(changes),
            undoes=undoes,
            skips=skips,
            before_digest=before_digest,
            after_digest=after_digest,
            note=note,
            provenance=provenance,
        )

    def append(self, *records: JournalRecord) -> None:
        """Append records as whole lines, or nothing (raises `JournalError`).

        A file that ends in a torn line gets a newline first, so the torn line stays one damaged
        line instead of swallowing this record; a write that fails half-way is cut back off."""
        lines = (
            records[0].to_line() if len(records) == 1 else b"".join(r.to_line() for r in records)
        )
        self._retract_to = None
        try:
            fd, size = self._descriptor()
            # Where our own last append ended, the file ends with its newline: no need to look.
            if size and size != self._ends_at and os.pread(fd, 1, size - 1) != b"\n":
                lines = b"\n" + lines
        except OSError as exc:
            raise JournalError(f"{self.path.name} could not be written: {_reason(exc)}") from None
        written = 0
        try:
            while written < len(lines):
                n = os.write(fd, lines[written:])
                if n <= 0:
                    raise OSError(errno.EIO, "short write")
                written += n
        except OSError as exc:
            if written:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)  # we hold the store's lock: nobody appended since
            raise JournalError(f"{self.path.name} could not be written: {_reason(exc)}") from None
        self._retract_to = size
        self._ends_at = size + written
        if size + written > _TRIM_AT_BYTES:
            with contextlib.suppress(OSError, PathRefused):
                self._trim()  # a failed trim leaves the (longer) journal as it was
            self._retract_to = None

    def retract(self) -> None:
        """Take back the last `append` (the edit it recorded did not reach the disk). Only valid
        under the same hold of the store's lock as that append."""
        if self._retract_to is None or self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._retract_to)
        self._retract_to = None
        self._ends_at = -1

    def _descriptor(self) -> tuple[int, int]:
        """A read-write O_APPEND descriptor of the journal and the file's size, re-opened after a
        fork or once the file it names was replaced or deleted. Refused: a link, anything but a
        regular file, and a file with another name (a hard link), which an in-place append would
        write too."""
        if self._fd is not None and self._fd_pid == _FORKS[0]:
            st = os.fstat(self._fd)
            if st.st_nlink == 1:
                return self._fd, st.st_size
            self.close()
            if st.st_nlink > 1:
                raise OSError(errno.EMLINK, "it has another name (a hard link)")
        # The journal is private and is written by the first write of every front end, so this is
        # where a workspace's `.my_agent_core/.gitignore` is made complete (a no-op once it is), even
        # when the journal itself turns out unusable.
        keep_private_memory(self.path.parent)
        flags = (
            os.O_RDWR
            | os.O_APPEND
            | os.O_CREAT
            | os.O_NONBLOCK
            | getattr(os, "O_NOFOLLOW", 0)
            | getattr(os, "O_CLOEXEC", 0)
        )
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "it is a symbolic link") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            what = "it has another name (a hard link)" if st.st_nlink > 1 else "not a regular file"
            raise OSError(errno.EINVAL, what)
        self._fd = fd
        self._fd_pid = _FORKS[0]
        self._ends_at = -1  # a file we did not write last: look at its end
        return fd, st.st_size

    def history(self) -> History:
        """The records and damaged lines, oldest first; never raises. A journal that is a symbolic
        link is not read (a cloned repository must not feed `undo`)."""
        if self.path.is_symlink():
            return History(problem=f"{self.path.name} is a symbolic link; it is not read")
        try:
            found = read_tail(self.path, max_bytes=self.max_read_bytes, name=self.path.name)
        except PathRefused as exc:
            return History(problem=str(exc))
        if found is None:
            return History()
        items: list[JournalRecord | Damage] = []
        for number, line in enumerate(_whole_lines(*found), start=1):
            if not line.strip():
                continue
            try:
                items.append(_parse(line))
            except ValueError:
                items.append(Damage(number))
        return History(tuple(items))

    def read(self) -> list[JournalRecord]:
        """All readable records, oldest first; a torn or garbled line is skipped, not fatal."""
        return self.history().records

    def newest(self) -> JournalRecord | None:
        """The newest readable record, parsed from the file's end backwards: the editor asks for it
        on every change it announces, and parsing the whole history each time cost milliseconds."""
        if self.path.is_symlink():
            return None
        window = min(_NEWEST_WINDOW, self.max_read_bytes)
        while True:
            try:
                found = read_tail(self.path, max_bytes=window, name=self.path.name)
            except PathRefused:
                return None
            if found is None:
                return None
            for line in reversed(_whole_lines(*found)):
                if not line.strip():
                    continue
                try:
                    return _parse(line)
                except ValueError:
                    continue  # a torn or garbled line: the one before it may be whole
            if not found[1] or window >= self.max_read_bytes:
                return None
            window = min(window * 8, self.max_read_bytes)  # the last record is bigger than this

    def problem(self) -> str | None:
        """Why records cannot be appended now, from a cheap look at the file (no read); None when
        it looks writable."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{self.path.name} cannot be checked: {_reason(exc)}"
        if stat.S_ISLNK(st.st_mode):
            return f"{self.path.name} is a symbolic link; history is not written through it"
        if not stat.S_ISREG(st.st_mode):
            return f"{self.path.name} is not a regular file"
        if st.st_nlink > 1:
            return f"{self.path.name} has another name (a hard link); history is not written to it"
        if not os.access(self.path, os.W_OK):
            return f"{self.path.name} is not writable"
        return None

    def _trim(self) -> None:
        """Keep the newest records (amortised: runs once per ~256 KiB of appends). A damaged line
        among them becomes a `gap` record, so what it stood for stays in view."""
        kept: list[bytes] = []
        size = 0
        for count, item in enumerate(reversed(self.history().items), start=1):
            record = item
            if isinstance(record, Damage):
                record = self.new_record(
                    "gap", "", "journal", note="a damaged history line was dropped here"
                )
            line = record.to_line()
            size += len(line)
            if kept and (size > _KEEP_BYTES or count > MAX_RECORDS):
                break
            kept.append(line)
        write_atomic(self.path, b"".join(reversed(kept)))  # keeps the journal's mode (0600)
        self.close()  # the next append opens the new file


_ENCODER = json.JSONEncoder(ensure_ascii=False)
_string = json.encoder.encode_basestring  # a JSON string literal, as `ensure_ascii=False` writes it
_NULL = "null"


def _number(value: int | float) -> str:
    """A number as `json.dumps` writes it (a time read back from a hand-edited line may be NaN or
    infinite, and a trim writes it again)."""
    if not isinstance(value, float):
        return int.__repr__(value)
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


def _id(value: object) -> str:
    # ids go into messages and command lines: short and plain, or the line is not a record
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValueError("not a record id")
    return value


def _opt_str(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError("not a string")


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("not an index")
    return value


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _whole_lines(data: bytes, cut: bool) -> list[bytes]:
    """The lines of what `read_tail` read, without the first one when it starts before the read."""
    lines = data.split(b"\n")
    if cut:
        lines = lines[1:]
    if lines and lines[-1] == b"":
        lines.pop()  # the file ends with a newline
    return lines


def _parse(line: bytes) -> JournalRecord:
    """One journal line as a record (raises ValueError when it is not one, `JsonTooDeep` for a line
    nested past any record's depth)."""
    return JournalRecord.from_json(loads(line.decode("utf-8"), what="a history line"))
