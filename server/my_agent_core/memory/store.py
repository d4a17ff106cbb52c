"""MemoryStore: live entries on disk, a frozen snapshot for the system prompt, safe concurrent writes.

Two states live side by side (the design's "parallel states"): `_entries`, the live store every edit
updates at once, and `_snapshot`, frozen by `load_from_disk()` and never touched by writes, so the
system prompt of a session stays byte-identical and the provider's prompt cache keeps hitting.

Every edit takes an exclusive lock on the memory folder (waiting at most `lock_timeout`), re-reads the
file, applies the edit to what is on disk, writes atomically (temp file, fsync, rename, folder fsync),
journals it and unlocks: edits from two windows, two chat sessions and the CLI serialise and none is
lost. Every read goes through the one path check (`my_agent_core.paths`): regular files only, bounded,
never through a link out of the folder, and never one file under two of the folder's names.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from my_agent_core.memory import lock as folder_lock
from my_agent_core.memory.document import (
    SECTION_SIGN,
    budget_used,
    normalize_entry,
    parse,
    serialize,
)
from my_agent_core.memory.journal import (
    Change,
    History,
    Journal,
    JournalError,
    JournalRecord,
    canonical_digest,
    entries_digest,
)
from my_agent_core.memory.limits import (
    LOCK_TIMEOUT,
    MAX_FILE_BYTES,
    MEMORY_CHAR_LIMIT,
    USER_CHAR_LIMIT,
)
from my_agent_core.memory.paths import FILE_NAMES, JOURNAL_NAME, LOCK_NAME, TARGETS
from my_agent_core.memory.render import (
    MemorySection,
    bounded_notes,
    preview,
    quote,
    render_listing,
    render_memory_block,
    render_memory_section,
)
from my_agent_core.memory.safety import describe, scan
from my_agent_core.memory.similar import near_duplicate_note
from my_agent_core.paths import (
    FileTooLarge,
    PathRefused,
    check_link_inside,
    check_memory_folder,
    look_up,
    read_regular,
)
from my_agent_core.safe_write import write_atomic

__all__ = [
    "LOCK_TIMEOUT",
    "MAX_FILE_BYTES",
    "MEMORY_CHAR_LIMIT",
    "USER_CHAR_LIMIT",
    "MemoryChanged",
    "MemoryEditError",
    "MemoryLockTimeout",
    "MemoryPreview",
    "MemoryStore",
    "MemoryWriteError",
    "Operation",
    "StoreState",
    "WriteEvent",
    "WriteListener",
]

logger = logging.getLogger(__name__)

BACKUP_DIR = ".backups"
MAX_BACKUPS = 20

_TITLES = {"memory": "agent notes", "user": "user profile"}
_OWN_FILES = (*FILE_NAMES.values(), JOURNAL_NAME, LOCK_NAME)


class MemoryEditError(ValueError):
    """A refused edit. The message says why and how to fix the call; nothing changed on disk."""


class MemoryLockTimeout(MemoryEditError):
    """Another process (`holder`, when known) held the folder's lock for the whole wait."""

    def __init__(self, message: str, holder: folder_lock.LockHolder | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class MemoryWriteError(MemoryEditError):
    """The disk refused the write (full, read-only, an I/O error); the file was left as it was."""


class MemoryChanged(MemoryEditError):
    """The file is no longer the text an edit was previewed on (`apply(..., expect=...)`): someone
    wrote it meanwhile, so the edit the user approved would not be the edit made; nothing written."""


@dataclass(frozen=True, slots=True)
class MemoryPreview:
    """What an edit would do, computed under the lock without writing (`MemoryStore.preview`):
    the file's text now (`before`, "" when there is no file) and the text the store would write
    (`after`; equal to `before` when the edit changes nothing). Apply it with
    `apply(..., expect=preview.before)` so it lands only on the file the user saw."""

    target: str
    path: Path
    before: str
    after: str
    changed: bool
    existed: bool
    summary: str


@dataclass(frozen=True, slots=True)
class StoreState:
    """One store as it is on disk (what panels and `memory/state` show). `journal_error` says why
    changes are not being recorded in the history (so cannot be undone), or None."""

    target: str
    path: Path
    used: int
    limit: int
    entries: list[str]
    available: bool
    error: str | None = None
    journal_error: str | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """One edit of a batch: `action` is add, replace or remove."""

    action: str
    content: str | None = None
    old_text: str | None = None
    new_content: str | None = None


@dataclass(frozen=True, slots=True)
class WriteEvent:
    """A write the store made: the file's text before (None: there was no file) and after it, and the
    journal record (who, what). Editors merge it into open buffers without reading the file again."""

    target: str
    before: str | None
    after: str
    record: JournalRecord


WriteListener = Callable[[WriteEvent], None]


class _NotFound(MemoryEditError):
    """`old_text` matched no entry; `apply` adds the listing of the entries as they are on disk."""


@dataclass(frozen=True, slots=True)
class _OnDisk:
    """A memory file as an edit read it under the lock."""

    text: str
    entries: list[str]
    canonical: bool
    mode: int | None  # permission bits; None when there was no file
    digest: str | None  # its entries' digest, when this store wrote it (else computed on demand)


@dataclass(frozen=True, slots=True)
class _Plan:
    """An edit worked out under the lock: the file it writes, the file as read, the entries it
    leaves, its changes (none: nothing to write) and its success message."""

    path: Path
    disk: _OnDisk
    entries: list[str]
    changes: list[Change]
    message: str


class _Unavailable(Exception):
    """A file the store must not read or write (undecodable, or a symlink out of the folder)."""


class _CannotRevert(MemoryEditError):
    """An undo that the change itself rules out (its entries changed since, or it would restore
    unsafe text), as opposed to one the history cannot vouch for."""


@dataclass(slots=True)
class _Gap:
    """Changes saved while the journal could not be written, to be marked in it once it can."""

    count: int
    first: float
    target: str
    reason: str


@dataclass(eq=False)
class _Home:
    """One folder the store keeps files in, and what belongs to that folder: its lock, its history,
    its backups. Both targets share one home, unless the user profile lives in a folder of its own
    (`MemoryStore(user_dir=...)`: one USER.md for every workspace), which then has its own."""

    dir: Path
    targets: tuple[str, ...]
    names: tuple[str, ...]  # the folder's own files, which must stay separate files
    journal: Journal
    private: bool = False  # created owner-only (the user's own profile folder)
    lock_fd: int | None = None
    lock_pid: int = 0
    journal_error: str | None = None
    gap: _Gap | None = None

    def folder_error(self) -> str | None:
        """Why this folder is refused now (a workspace layout linked out), or None."""
        try:
            check_memory_folder(self.dir)
        except PathRefused as exc:
            return str(exc)
        return None

    def serves(self, record: JournalRecord) -> bool:
        """Whether `record` is about a file of this home (a workspace history keeps the records of
        its own USER.md from before the profile moved; they are not about the shared one)."""
        return self.targets == TARGETS or record.target in self.targets


class MemoryStore:
    """The two memory files of one folder: live entries, frozen snapshot, budgets, locked writes."""

    def __init__(
        self,
        mem_dir: Path | str,
        memory_char_limit: int = MEMORY_CHAR_LIMIT,
        user_char_limit: int = USER_CHAR_LIMIT,
        author: str = "agent",
        on_write: WriteListener | None = None,
        *,
        lock_timeout: float = LOCK_TIMEOUT,
        max_file_bytes: int = MAX_FILE_BYTES,
        user_dir: Path | str | None = None,
    ) -> None:
        self.mem_dir = Path(mem_dir)
        #: Where USER.md lives: `mem_dir`, or a folder of its own shared by every workspace (the
        #: global profile), with its own lock, history and backups there.
        self.user_dir = Path(user_dir) if user_dir is not None else self.mem_dir
        #: Called after every successful write (edits and undos), on the writing thread, once the
        #: lock is released; a failing listener is logged and never turns a saved edit into an error.
        self.on_write = on_write
        self.limits: dict[str, int] = {"memory": memory_char_limit, "user": user_char_limit}
        self.files: dict[str, str] = dict(FILE_NAMES)
        self.author = author
        #: Seconds an edit waits for the folder's lock before it fails with `MemoryLockTimeout`.
        self.lock_timeout = lock_timeout
        #: Bytes read at most of one memory file; a larger file is unavailable, with a message.
        self.max_file_bytes = max_file_bytes
        # (1) live state: changes with every edit.  (2) frozen snapshot: captured by load_from_disk().
        self._entries: dict[str, list[str]] = {t: [] for t in TARGETS}
        self._snapshot: dict[str, str] = {t: "" for t in TARGETS}
        self._snapshot_entries: dict[str, list[str]] = {t: [] for t in TARGETS}
        self._snapshot_used: dict[str, int] = {t: 0 for t in TARGETS}
        self._errors: dict[str, str | None] = {t: None for t in TARGETS}
        self._thread_lock = threading.RLock()
        workspace = _Home(self.mem_dir, TARGETS, _OWN_FILES, Journal(self.mem_dir / JOURNAL_NAME))
        if os.path.realpath(self.user_dir) == os.path.realpath(self.mem_dir):
            self._homes: dict[str, _Home] = dict.fromkeys(TARGETS, workspace)
        else:
            workspace.targets = ("memory",)
            own = (FILE_NAMES["user"], JOURNAL_NAME, LOCK_NAME)
            profile = _Home(
                self.user_dir, ("user",), own, Journal(self.user_dir / JOURNAL_NAME), private=True
            )
            self._homes = {"memory": workspace, "user": profile}
        #: The history of `mem_dir` (the user profile's, when it lives elsewhere, is its own).
        self.journal = workspace.journal
        self.last_record: JournalRecord | None = None
        # target -> (identity of the file this store last wrote, its text, entries, digest)
        self._disk_cache: dict[str, tuple[tuple[int, ...], str, tuple[str, ...], str]] = {}
        self._pending_events: list[WriteEvent] = []  # writes made under undo's lock, sent after it

    # ------------------------------------------------------------------ reading

    def path(self, target: str) -> Path:
        """Absolute path of a target's file."""
        target = self._check_target(target)
        return (self._homes[target].dir / self.files[target]).absolute()

    def folder(self, target: str) -> Path:
        """The folder a target's file, lock and history live in."""
        return self._homes[self._check_target(target)].dir

    @property
    def _home_list(self) -> list[_Home]:
        """Each home once, the workspace's first (the order locks are taken in)."""
        return list(dict.fromkeys(self._homes[t] for t in TARGETS))

    def limit(self, target: str) -> int:
        return self.limits[self._check_target(target)]

    @property
    def journal_path(self) -> Path:
        return self.journal.path

    @property
    def journal_error(self) -> str | None:
        """Why this store's last change was saved without its history record ("history not
        recorded: ..."), so it cannot be undone; None once a record was written again."""
        return next((h.journal_error for h in self._home_list if h.journal_error), None)

    @property
    def folder_error(self) -> str | None:
        """Why the memory folder itself is refused (its workspace layout links out of the
        workspace), checked now; None when it may be used."""
        return next((e for h in self._home_list if (e := h.folder_error()) is not None), None)

    def entries(self, target: str) -> list[str]:
        """The live entries of a target (a copy)."""
        return list(self._entries[self._check_target(target)])

    def used(self, target: str) -> int:
        """Characters the live entries take, delimiters included."""
        return budget_used(self._entries[self._check_target(target)])

    def snapshot_entries(self, target: str) -> list[str]:
        """The entries frozen into this session's snapshot."""
        return list(self._snapshot_entries[self._check_target(target)])

    def error(self, target: str) -> str | None:
        """Why a target is unavailable since the last load, or None."""
        return self._errors[self._check_target(target)]

    def load_from_disk(self) -> None:
        """Read both files, dedup preserving order, and freeze the snapshot. Never raises for bad
        files, and never waits for a lock (writes are atomic renames, so a read needs none)."""
        errors = {id(h): h.folder_error() for h in self._home_list}
        for home in self._home_list:
            if errors[id(home)] is None:
                self._clean_stale_temp_files(home)
        for target in TARGETS:
            entries: list[str] = []
            error = errors[id(self._homes[target])]
            if error is None:
                try:
                    entries = self._read_entries(target)
                except _Unavailable as exc:
                    error = str(exc)
            self._errors[target] = error
            self._entries[target] = entries
            self._snapshot_entries[target] = list(entries)
            self._snapshot_used[target] = budget_used(entries)
            self._snapshot[target] = self._render_section(target, entries)

    def state(self, target: str) -> StoreState:
        """The target as it is on disk now (fresh read, no lock: writes are atomic renames)."""
        target = self._check_target(target)
        home = self._homes[target]
        journal_error = home.journal_error or home.journal.problem()
        error = home.folder_error()
        entries: list[str] = []
        if error is None:
            try:
                entries = self._read_entries(target)
            except _Unavailable as exc:
                error = str(exc)
        if error is not None:
            return StoreState(
                target, self.path(target), 0, self.limits[target], [], False, error, journal_error
            )
        return StoreState(
            target,
            self.path(target),
            budget_used(entries),
            self.limits[target],
            entries,
            True,
            None,
            journal_error,
        )

    # ------------------------------------------------------------------ the frozen snapshot

    def format_for_system_prompt(self, target: str) -> str:
        """One target's section of the frozen snapshot."""
        return self._snapshot[self._check_target(target)]

    def format_all_for_system_prompt(self) -> str:
        """The FROZEN snapshot rendered as a `<MEMORY_CONTEXT>` block; edits never change it."""
        return render_memory_block([self._snapshot[t] for t in TARGETS])

    def _render_section(self, target: str, entries: list[str]) -> str:
        """One file's section of the snapshot (rendered once, at load: see render.py)."""
        section = MemorySection(
            self.files[target],
            _TITLES[target],
            entries,
            self.limits[target],
            self._errors.get(target),
        )
        return render_memory_section(section)

    # ------------------------------------------------------------------ edits

    def add(self, target: str, content: str, *, author: str | None = None) -> str:
        """Append an entry (a duplicate is a success that writes nothing)."""
        return self.apply(target, [Operation("add", content=content)], author=author)

    def replace(
        self, target: str, old_text: str, new_content: str, *, author: str | None = None
    ) -> str:
        """Swap the one entry addressed by `old_text` for `new_content`."""
        return self.apply(
            target,
            [Operation("replace", old_text=old_text, new_content=new_content)],
            author=author,
        )

    def remove(self, target: str, old_text: str, *, author: str | None = None) -> str:
        """Delete the one entry addressed by `old_text`."""
        return self.apply(target, [Operation("remove", old_text=old_text)], author=author)

    def apply(
        self,
        target: str,
        operations: list[Operation],
        *,
        author: str | None = None,
        expect: str | None = None,
    ) -> str:
        """Apply edits all-or-nothing: budget checked on the final state, one write, one journal record.

        `expect`: the file's text the edit was previewed on (`preview(...).before`); when the file
        under the lock is anything else, `MemoryChanged` is raised and nothing is written."""
        target = self._check_target(target)
        action, mutate = self._batch(target, operations)
        return self._edit(target, action, author or self.author, mutate, expect=expect)

    def preview(self, target: str, operations: list[Operation]) -> MemoryPreview:
        """What `apply(target, operations)` would write, computed under the lock from the file as it
        is now, without writing anything; raises `MemoryEditError` exactly where `apply` would.

        The lock is released before this returns (a user may take minutes to approve), so apply
        the result with `expect=preview.before`: it lands only if nobody wrote meanwhile."""
        target = self._check_target(target)
        _action, mutate = self._batch(target, operations)
        home = self._homes[target]
        with self._locked(home, self.files[target]):
            plan = self._plan(target, mutate, None)
        before = plan.disk.text
        after = serialize(plan.entries) if plan.changes else before
        return MemoryPreview(
            target,
            self.path(target),
            before,
            after,
            bool(plan.changes),
            plan.disk.mode is not None,
            plan.message,
        )

    def _batch(
        self, target: str, operations: list[Operation]
    ) -> tuple[str, Callable[[list[str]], tuple[list[str], list[Change], list[str]]]]:
        """The journal action of a batch and the function that applies it to a list of entries."""
        if not operations:
            raise MemoryEditError("No operations given: pass at least one add, replace or remove.")
        for op in operations:
            _validate(op)
        batch = len(operations) > 1
        action = "batch" if batch else operations[0].action
        name, limit = self.files[target], self.limits[target]

        def mutate(entries: list[str]) -> tuple[list[str], list[Change], list[str]]:
            on_disk = list(entries)  # what error messages list: never an edit of this failed call
            changes: list[Change] = []
            notes: list[str] = []
            for n, op in enumerate(operations, start=1):
                prefix = f"Operation {n} of {len(operations)} ({op.action}): " if batch else ""
                try:
                    notes.append(self._apply_one(target, entries, op, changes))
                except _NotFound as exc:
                    title = (
                        "Current entries (as on disk: nothing of this batch was saved)"
                        if batch
                        else "Current entries"
                    )
                    listing = render_listing(on_disk, name=name, limit=limit, title=title)
                    raise MemoryEditError(f"{prefix}{exc}\n{listing}") from None
                except MemoryEditError as exc:
                    raise MemoryEditError(prefix + str(exc)) from None
            if batch and on_disk and not entries:
                raise MemoryEditError(
                    f"Refused: this batch would remove every entry of {name}, and one call never "
                    "empties a memory file. Nothing was written. Keep the entries that still hold, or "
                    "remove entries one call at a time; the user can clear the file by hand."
                )
            return entries, changes, bounded_notes(notes)

        return action, mutate

    def undo(self, record_id: str | None = None, *, author: str = "user") -> JournalRecord:
        """Revert a change and journal the undo; returns the undo record (`undoes` names the change).

        Without `record_id`: the newest change not yet undone or skipped (any target), and only when
        the history shows it is the newest change to its file (every later change of that file is
        recorded and no record may be missing since); otherwise nothing is written and the message
        says why and gives the change's id. When that change itself cannot be reverted (its entries
        changed since, or it would restore unsafe text), it is marked skipped, so the next undo
        reaches the change before it. With `record_id`: that change, on top of the file as it is now,
        provided the entries it produced are still there as it left them.
        """
        with contextlib.ExitStack() as locks:
            for home in self._home_list:  # always in this order: two stores never deadlock
                locks.enter_context(self._locked(home, "The memory folder"))
            record, history = self._undo_target(record_id)
            name = self.files[record.target]

            def mutate(entries: list[str]) -> tuple[list[str], list[Change], list[str]]:
                if record_id is None:
                    reason = history.unexplained(record, entries_digest(entries), name)
                    if reason is not None:
                        raise MemoryEditError(
                            f"Cannot undo {_describe_change(record, name)}: {reason}. Undo reverts "
                            "a change only when the history shows it is the newest one, so nothing "
                            f"was written. To revert it anyway, on top of {name} as it is now, undo "
                            f"it by its id: {record.id}."
                        )
                return _revert_record(record, entries, name)

            try:
                self._edit(record.target, "undo", author, mutate, undoes=record.id, locked=True)
            except _CannotRevert as exc:
                if record_id is not None:
                    raise
                raise MemoryEditError(
                    f"{exc} {self._mark_skipped(record, author, str(exc))}"
                ) from None
            assert self.last_record is not None and self.last_record.undoes == record.id
            undo_record = self.last_record
        events, self._pending_events = self._pending_events, []
        for event in events:
            self._notify(event)
        return undo_record

    def log(self, limit: int = 50) -> list[JournalRecord]:
        """The newest journal records, newest last (none of a folder that is refused). With the
        user profile in a folder of its own, both histories, merged by time."""
        if limit <= 0:
            return []
        homes = self._home_list
        if len(homes) == 1:
            return [] if homes[0].folder_error() is not None else homes[0].journal.read()[-limit:]
        records: list[JournalRecord] = []
        for home in homes:
            if home.folder_error() is None:
                records += [r for r in home.journal.read() if home.serves(r)]
        records.sort(key=lambda r: r.time)  # stable: each history keeps its own order
        return records[-limit:]

    def _histories(self) -> list[tuple[_Home, History]]:
        """Each home's history, holding only the records about files of that home."""
        found: list[tuple[_Home, History]] = []
        for home in self._home_list:
            history = home.journal.history()
            if home.targets != TARGETS:
                items = tuple(
                    item
                    for item in history.items
                    if not isinstance(item, JournalRecord) or home.serves(item)
                )
                history = History(items, history.problem)
            found.append((home, history))
        return found

    # ------------------------------------------------------------------ internals

    def _undo_target(self, record_id: str | None) -> tuple[JournalRecord, History]:
        """The change an undo reverts and the history it is in, or a MemoryEditError saying why
        there is none (the newest of every home's candidates, when the profile has its own)."""
        histories = self._histories()
        if record_id is None:
            candidates = [
                (record, history)
                for _home, history in histories
                if (record := history.newest_undoable()) is not None
            ]
            if not candidates:
                problems = [h.problem for _home, h in histories if h.problem]
                why = f" ({'; '.join(problems)})" if problems else ""
                raise MemoryEditError(
                    f"Nothing to undo: the history has no change left to revert{why}."
                )
            record, history = max(candidates, key=lambda pair: pair[0].time)
        else:
            shown = repr(record_id if len(record_id) <= 40 else record_id[:39] + "…")
            history = next(
                (h for _home, h in histories if h.find(record_id) is not None), histories[0][1]
            )
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

    def _mark_skipped(self, record: JournalRecord, author: str, reason: str) -> str:
        """Journal that an undo passed over `record`; says what the next undo will do."""
        home = self._homes[record.target]
        skip = home.journal.new_record(
            "skip", record.target, author, skips=record.id, note=reason[:500]
        )
        failure = self._append_records(home, skip)
        if failure is not None:
            return (
                f"It could not be marked skipped ({failure}), so the next undo stops here again; "
                "undo an older change by its id."
            )
        return "It is marked skipped: the next undo reaches the change before it."

    def _apply_one(
        self, target: str, entries: list[str], op: Operation, changes: list[Change]
    ) -> str:
        name = self.files[target]
        if op.action == "add":
            content = normalize_entry(op.content or "")
            self._check_content(content, "content")
            if content in entries:
                return f"Entry already exists in {name}; nothing to add."
            entries.append(content)
            changes.append(Change(len(entries) - 1, None, content))
            return f"Added to {name}.{near_duplicate_note(entries[:-1], content, name)}"
        index = self._locate(target, entries, op.old_text or "")
        old = entries[index]
        if op.action == "remove":
            del entries[index]
            changes.append(Change(index, old, None))
            return f'Removed from {name}: "{_preview(old)}".'
        new = normalize_entry(op.new_content or "")
        self._check_content(new, "new_content")
        if new == old:
            return f"The entry in {name} already reads exactly that; nothing to replace."
        if new in entries:  # replacing with an existing entry merges the two
            del entries[index]
            changes.append(Change(index, old, None))
            return f'Removed "{_preview(old)}" from {name}: its replacement already exists.'
        entries[index] = new
        changes.append(Change(index, old, new))
        return f'Replaced the entry "{_preview(old)}" in {name}.'

    def _locate(self, target: str, entries: list[str], old_text: str) -> int:
        needle = normalize_entry(old_text)
        name = self.files[target]
        if not needle:
            raise MemoryEditError(
                "`old_text` is empty: pass a short piece of text that appears in one entry."
            )
        exact = [i for i, entry in enumerate(entries) if entry == needle]
        if exact:
            return exact[0]
        matches = [i for i, entry in enumerate(entries) if needle in entry]
        if len(matches) == 1:
            return matches[0]
        if not matches:  # `apply` adds the listing of the entries on disk
            raise _NotFound(
                f"No entry in {name} contains {quote(needle, what='old_text')}. Check the current "
                "entries and use a piece of text copied from one of them."
            )
        listing = render_listing(
            entries,
            name=name,
            limit=self.limits[target],
            title="Matching entries",
            numbers=[i + 1 for i in matches],
        )
        raise MemoryEditError(
            f"Ambiguous: {quote(needle, what='old_text')} matches {len(matches)} entries in {name}. "
            f"Nothing was changed. Pass a longer old_text that appears in only one of them.\n{listing}"
        )

    def _check_content(self, content: str, field_name: str) -> None:
        if not content:
            raise MemoryEditError(f"`{field_name}` is empty: pass the text of the entry.")
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise MemoryEditError(
                f"`{field_name}` is not valid Unicode text (a lone surrogate at position {exc.start}); "
                "send the text as proper UTF-8."
            ) from None
        doc = parse(content) if SECTION_SIGN in content else None  # no §, no delimiter line
        if doc is not None and (len(doc.entries) != 1 or doc.delimiters):
            raise MemoryEditError(
                f"`{field_name}` contains a line holding only §, the entry delimiter; pass one entry "
                "per operation (several adds can go in one call with `operations`)."
            )
        issues = scan(content)
        if issues:
            raise MemoryEditError(
                f"Refused as unsafe content: it {describe(issues)}. Memory is placed in future system "
                "prompts, so it must hold plain facts and preferences, not instructions, hidden "
                "characters or payloads. Rephrase it as a plain fact, or skip saving it."
            )

    def _edit(
        self,
        target: str,
        action: str,
        author: str,
        mutate: Callable[[list[str]], tuple[list[str], list[Change], list[str]]],
        *,
        undoes: str | None = None,
        locked: bool = False,
        expect: str | None = None,
    ) -> str:
        event: WriteEvent | None = None
        warning = ""
        home = self._homes[target]
        with contextlib.nullcontext() if locked else self._locked(home, self.files[target]):
            plan = self._plan(target, mutate, expect)
            disk = plan.disk
            if plan.changes:
                if disk.text and not disk.canonical:
                    self._backup(target, disk.text)
                event, warning = self._write(
                    target, plan.path, disk, plan.entries, action, author, plan.changes, undoes
                )
            self._entries[target] = plan.entries
        if event is not None:
            if locked:
                self._pending_events.append(event)
            else:
                self._notify(event)
        return plan.message + warning

    def _plan(
        self,
        target: str,
        mutate: Callable[[list[str]], tuple[list[str], list[Change], list[str]]],
        expect: str | None,
    ) -> _Plan:
        """An edit worked out on the file as it is now (the caller holds the lock): refused here,
        with the message the caller raises, or ready to be written."""
        path, st = self._path_for_edit(target)
        disk = self._read_for_edit(target, path, st)
        name = self.files[target]
        if expect is not None and disk.text != expect:
            raise MemoryChanged(
                f"{name} changed while this edit waited for approval (another session, the user "
                "or a program wrote it), so the change that was approved is not the one that would "
                "be made; nothing was written. Look at the current entries and call `memory` again "
                "if the edit is still needed."
            )
        original = disk.entries
        before_used = budget_used(original)
        entries, changes, notes = mutate(list(original))
        after_used = budget_used(entries)
        limit = self.limits[target]
        if after_used > limit and after_used > before_used:
            raise MemoryEditError(
                f"{name} is full: this edit needs {after_used}/{limit} chars, the store now uses "
                f"{before_used}/{limit}. Nothing was written. Consolidate in this turn: merge related "
                "entries into one shorter entry with `replace` (or several edits at once with "
                "`operations`), or `remove` outdated ones, then retry. If nothing can go, do not "
                f"retry: carry on with your reply.\n{render_listing(original, name=name, limit=limit)}"
            )
        message = f"{' '.join(notes)} ({after_used}/{limit} chars used)"
        return _Plan(path, disk, entries, changes, message)

    def _write(
        self,
        target: str,
        path: Path,
        disk: _OnDisk,
        entries: list[str],
        action: str,
        author: str,
        changes: list[Change],
        undoes: str | None,
    ) -> tuple[WriteEvent, str]:
        """Write the new entries and their journal record; returns the event and a warning for the
        success message when the record could not be written."""
        name = self.files[target]
        home = self._homes[target]
        text = serialize(entries)
        data = text.encode("utf-8")
        record = home.journal.new_record(
            action,
            target,
            author,
            changes,
            undoes,
            before_digest=disk.digest or entries_digest(disk.entries),
            after_digest=canonical_digest(data),
        )
        outcome: list[str | None] = []

        def journal() -> None:
            outcome.append(self._append_records(home, record, commit=False))

        try:
            signature = _signature(
                write_atomic(path, data, mode=disk.mode, keep_mode=False, before_sync=journal)
            )
        except OSError as exc:
            if outcome and outcome[0] is None:
                home.journal.retract()  # the record of an edit that did not land
            raise MemoryWriteError(
                f"{name} could not be saved ({exc.strerror or exc}); nothing was written."
            ) from None
        failure = outcome[0] if outcome else "history not recorded: the journal was not reached"
        if failure is None:
            home.gap = None  # marked in the journal together with this record
            home.journal_error = None
        else:
            home.journal_error = failure
            if home.gap is None:
                home.gap = _Gap(0, record.time, target, failure)
            home.gap.count += 1
        self._disk_cache[target] = (signature, text, tuple(entries), record.after_digest or "")
        self.last_record = record
        event = WriteEvent(target, disk.text if disk.mode is not None else None, text, record)
        warning = "" if failure is None else f" Warning: {failure}; this change cannot be undone."
        return event, warning

    def _append_records(
        self, home: _Home, record: JournalRecord, *, commit: bool = True
    ) -> str | None:
        """Append `record` after the mark of any change saved while the journal was failing; None
        on success, else "history not recorded: ...". `commit`: forget that mark once written
        (an edit does that itself, once its file write succeeded)."""
        records = [record]
        if home.gap is not None:
            gap = home.gap
            records.insert(
                0,
                home.journal.new_record(
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
            home.journal.append(*records)
        except JournalError as exc:
            return f"history not recorded: {exc}"
        if commit:
            home.gap = None
            home.journal_error = None
        return None

    def _notify(self, event: WriteEvent) -> None:
        listener = self.on_write
        if listener is None:
            return
        try:
            listener(event)
        except Exception:  # the edit is on disk: a broken listener must not turn it into a failure
            logger.exception("memory write listener failed")

    @contextlib.contextmanager
    def _locked(self, home: _Home, what: str) -> Iterator[None]:
        """Exclusive lock across threads and processes (flock on `.lock` in the home's folder),
        waited for at most `lock_timeout` seconds; `what` names the locked thing in messages."""
        folder_error = home.folder_error()
        if folder_error is not None:
            raise MemoryEditError(folder_error)
        timeout = max(0.0, self.lock_timeout)
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=timeout):
            raise MemoryLockTimeout(
                f"{what} is locked by another thread of this process for {timeout:g} s; nothing "
                "was written. Retry."
            )
        try:
            try:
                fd = self._lock_descriptor(home, deadline)
            except _Unavailable as exc:
                raise MemoryEditError(str(exc)) from None
            except folder_lock.LockTimeout as exc:
                holder = exc.holder
                if holder is None:
                    who, end = "another process", f"end the process that holds {LOCK_NAME}"
                else:
                    who, end = str(holder), "end that process"
                raise MemoryLockTimeout(
                    f"{what} is locked by {who} for {exc.waited:.3g} s; nothing was written. "
                    f"Retry, or {end}.",
                    holder,
                ) from None
            except OSError as exc:
                raise MemoryWriteError(
                    f"Cannot lock the memory folder ({home.dir / LOCK_NAME}: {exc.strerror}); "
                    "nothing was written."
                ) from None
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._thread_lock.release()

    def _lock_descriptor(self, home: _Home, deadline: float) -> int:
        """Lock `.lock` and return its descriptor, kept open between edits (re-opened after a fork or
        when the file was deleted or replaced, so every process always locks the same inode)."""
        lock_path = home.dir / LOCK_NAME
        while True:
            if home.lock_fd is None or home.lock_pid != os.getpid():
                # An open lock is re-checked only when re-opened: swapping the file for a link unlinks
                # the inode we hold (st_nlink 0 below), which brings us back here.
                self._refuse_outside_link(home, lock_path)
                if home.private and not home.dir.exists():
                    home.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                home.dir.mkdir(parents=True, exist_ok=True)
                flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
                fd = os.open(lock_path, flags, 0o600)
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    os.close(fd)
                    raise _Unavailable(
                        f"{LOCK_NAME} in {home.dir} is not a regular file; move it away and "
                        "retry (the store recreates it)."
                    )
                home.lock_fd = fd
                home.lock_pid = os.getpid()
            folder_lock.acquire(home.lock_fd, deadline - time.monotonic())
            if os.fstat(home.lock_fd).st_nlink > 0:  # still the file the others open by that name
                return home.lock_fd
            os.close(home.lock_fd)  # deleted or replaced under us: lock the new one
            home.lock_fd = None

    def close(self) -> None:
        """Release the descriptors the store keeps open (also done when it is garbage-collected)."""
        for home in self._home_list:
            if home.lock_fd is not None and home.lock_pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.close(home.lock_fd)
            home.lock_fd = None
            home.journal.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _path_for_edit(self, target: str) -> tuple[Path, os.stat_result | None]:
        """The file an edit of `target` writes and its stat (None: missing), refused
        (MemoryEditError) when it is a link out of the folder or when any two of the folder's own
        files are one."""
        try:
            return self._own_file(target, every_pair=True)
        except _Unavailable as exc:
            self._errors[target] = str(exc)
            raise MemoryEditError(str(exc)) from None

    def _read_for_edit(self, target: str, path: Path, st: os.stat_result | None) -> _OnDisk:
        """The file as it is now (`st`: its stat, just taken), read under the lock: text,
        deduplicated entries, whether it is canonical, its permission bits. A file whose identity
        (inode, size, times) is the one this store last wrote is not read again."""
        try:
            mode = st.st_mode & 0o7777 if st is not None else None
            cached = self._disk_cache.get(target)
            if cached is not None and st is not None and cached[0] == _signature(st):
                return _OnDisk(cached[1], list(cached[2]), True, mode, cached[3])
            raw = self._read_text(path, self.files[target])
        except _Unavailable as exc:
            self._errors[target] = str(exc)
            raise MemoryEditError(str(exc)) from None
        doc = parse(raw)
        return _OnDisk(raw, doc.stored_texts, doc.is_canonical(), mode, None)

    def _read_entries(self, target: str) -> list[str]:
        path, _st = self._own_file(target, every_pair=False)
        return parse(self._read_text(path, self.files[target])).stored_texts

    def _read_text(self, path: Path, name: str) -> str:
        """The decoded text of a memory file ("" when missing); `name` is what messages call it."""
        try:
            data = read_regular(path, max_bytes=self.max_file_bytes, name=name)
        except FileTooLarge as exc:
            raise _Unavailable(
                f"{exc} The budget is a few thousand characters: trim the file in an editor "
                "(`my-agent lint` shows what is over budget); the store will not touch it until then."
            ) from None
        except PathRefused as exc:
            raise _Unavailable(f"{exc} The store will not touch it.") from None
        if data is None:
            return ""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unavailable(
                f"{name} is not valid UTF-8 (bad byte at offset {exc.start}); the store will "
                "not overwrite it. Fix or move the file, then retry."
            ) from None
        return text  # a BOM stays: the parser skips it and marks the file non-canonical

    def _own_file(self, target: str, *, every_pair: bool) -> tuple[Path, os.stat_result | None]:
        """Where a target's file really is and its stat (None: missing), from one look at the
        folder's own files. Refused (`_Unavailable`): a link out of the folder, and two own files
        that are one (a hard link, or a symbolic link from one name to another), since a write of
        one would be a write of the other; with `every_pair` any two, else only a pair that
        involves this file."""
        name = self.files[target]
        home = self._homes[target]
        names = look_up(home.dir, home.names)
        named = names.names[name]
        path = home.dir / name
        if named.link:
            self._refuse_outside_link(home, path)
            path = Path(named.real or path)
        pair = names.aliased_pair()
        if pair is not None and (every_pair or name in pair):
            raise _Unavailable(
                f"{pair[0]} and {pair[1]} in {home.dir} are one file (joined by a hard link or "
                "a symbolic link); the store will not write one file as two. Make each a separate "
                "plain file, then retry."
            )
        return path, named.stat

    def _refuse_outside_link(self, home: _Home, path: Path) -> None:
        try:
            check_link_inside(home.dir, path)
        except PathRefused as exc:
            raise _Unavailable(str(exc)) from None

    def _backup(self, target: str, raw: str) -> None:
        """Keep the previous bytes of a non-canonical (hand-edited) file recoverable before rewriting.

        The copy is complete and on disk before the rewrite, or the rewrite is refused: a failed
        copy (a full disk) leaves nothing behind, so it never pushes a real backup out."""
        name = self.files[target]
        backups = self._homes[target].dir / BACKUP_DIR
        if backups.is_symlink() or (backups.exists() and not backups.is_dir()):
            raise MemoryEditError(
                f"{self.files[target]} was edited by hand and must be backed up before the store rewrites "
                f"it, but {backups} is not a plain folder (a link or a file); move it away and retry."
            )
        now = time.time_ns()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now / 1e9))
        final = backups / f"{name}.{stamp}.{now % 1_000_000_000:09d}.{os.getpid()}.bak"
        tmp = backups / f".{final.name}.tmp"
        try:
            backups.mkdir(mode=0o700, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(tmp, flags, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(raw.encode("utf-8"))  # the exact bytes: valid UTF-8 round-trips
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise MemoryWriteError(
                f"{name} was edited by hand and is backed up before the store rewrites it, but the "
                f"backup could not be written ({exc.strerror or exc}); nothing was written."
            ) from None
        kept = 0
        for old in sorted(backups.glob(f"{name}.*.bak"), reverse=True):
            with contextlib.suppress(OSError):
                st = old.lstat()
                if not stat.S_ISREG(st.st_mode):
                    continue
                if st.st_size and kept < MAX_BACKUPS:
                    kept += 1
                    continue
                old.unlink()  # past the newest MAX_BACKUPS, or an empty leftover of a failed copy

    def _clean_stale_temp_files(self, home: _Home) -> None:
        """Temp files of a writer that died mid-write (only when no writer holds the lock)."""
        if not home.dir.is_dir():
            return
        lock_path = home.dir / LOCK_NAME
        if lock_path.is_symlink() or not lock_path.is_file():
            return
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return
            stale = [
                p
                for name in (*(self.files[t] for t in home.targets), JOURNAL_NAME)  # journal: trim
                for p in home.dir.glob(f".{name}.*.tmp")
            ]
            backups = home.dir / BACKUP_DIR
            if backups.is_dir() and not backups.is_symlink():  # never sweep through a link
                stale += backups.glob(".*.bak.tmp")
            for path in stale:
                with contextlib.suppress(OSError):
                    path.unlink()
        finally:
            os.close(fd)

    def _check_target(self, target: str) -> str:
        if target not in self._entries:
            raise MemoryEditError(
                f"Unknown target {target!r}: use 'memory' (your notes, MEMORY.md) or 'user' "
                "(the user's profile, USER.md)."
            )
        return target


def _validate(op: Operation) -> None:
    if op.action == "add":
        if not (op.content or "").strip():
            raise MemoryEditError("`content` is empty: pass the text of the entry to add.")
    elif op.action in ("replace", "remove"):
        if not (op.old_text or "").strip():
            raise MemoryEditError(
                f"`old_text` is empty: pass a short piece of text that appears in the one entry to {op.action}."
            )
        if op.action == "replace" and not (op.new_content or "").strip():
            raise MemoryEditError("`new_content` is empty: pass the full new text of the entry.")
    else:
        raise MemoryEditError(f"Unknown action {op.action!r}: use 'add', 'replace' or 'remove'.")


def _revert_record(
    record: JournalRecord, entries: list[str], name: str
) -> tuple[list[str], list[Change], list[str]]:
    """`entries` with `record`'s changes taken back, the inverse changes, and the note; raises
    `_CannotRevert` when an entry it produced is gone or the text it would restore looks unsafe."""
    inverse: list[Change] = []
    for change in reversed(record.changes):
        if change.before is not None and scan(change.before):
            raise _CannotRevert(
                f"Cannot undo {_describe_change(record, name)}: it would restore an entry that looks "
                f"unsafe ({describe(scan(change.before))}); restore it by hand if you trust it."
            )
        undone = _revert(entries, change, name, record)
        if undone is not None:
            inverse.append(undone)
    if not inverse:
        raise _CannotRevert(
            f"Cannot undo {_describe_change(record, name)}: {name} already reads as it did before it."
        )
    return entries, inverse, [f"Undid {record.action} by {record.author}"]


def _revert(entries: list[str], change: Change, name: str, record: JournalRecord) -> Change | None:
    """Take back one change in place; the inverse change, or None when there was nothing to do."""
    if change.after is not None:
        if change.after not in entries:
            raise _CannotRevert(
                f"Cannot undo {_describe_change(record, name)}: the entry "
                f'"{_preview(change.after)}" is no longer in {name} as that change left it.'
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


def _describe_change(record: JournalRecord, name: str) -> str:
    """`change 3f2a… (add "…" in MEMORY.md by agent, 2026-12-01 10:42)`; text the scanner blocks is
    not quoted."""
    text = record.after if record.after is not None else record.before
    quoted = f' "{_preview(text)}"' if text and not scan(text) else ""
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.time))
    return f"change {record.id} ({record.action}{quoted} in {name} by {record.author}, {stamp})"


def _signature(st: os.stat_result) -> tuple[int, ...]:
    """What identifies one version of a file: any rewrite changes it (ctime cannot be set back)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _preview(text: str) -> str:
    """An entry named in a success message: one line, bounded, never a blocked entry's text."""
    return preview(text)
