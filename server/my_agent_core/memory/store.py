"""MemoryStore: live entries on disk, a frozen snapshot for the system prompt, safe concurrent writes.

Two states live side by side (the design's "parallel states"): `_entries`, the live store every edit
updates at once, and `_snapshot`, frozen by `load_from_disk()` and never touched by writes, so the
system prompt of a session stays byte-identical and the provider's prompt cache keeps hitting.

Every edit takes an exclusive lock on the memory folder (waiting at most `lock_timeout`), re-reads the
file, applies the edit to what is on disk, writes atomically (temp file, fsync, rename, folder fsync),
journals it and unlocks: edits from two windows, two chat sessions and the CLI serialise and none is
lost. Every read goes through the one path check (`my_agent_core.paths`): regular files only, bounded,
never through a link out of the folder, and never one file under two of the folder's names.

This module only orchestrates; each part reads alone: `edits` (the rules of add / replace / remove),
`undo`, `snapshot` (rendering, cached), `store_folder` with `own_files` (path checks), `lock_file`
(the held lock), `journal_writer` (history gaps), `backups`, and `errors`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path

from my_agent_core.layout import FILE_NAMES, JOURNAL_NAME, LOCK_NAME, TARGETS
from my_agent_core.memory import edits
from my_agent_core.memory.backups import BACKUP_DIR, MAX_BACKUPS, back_up
from my_agent_core.memory.conflicts import has_markers
from my_agent_core.memory.document import budget_used, parse, serialize
from my_agent_core.memory.errors import (
    MemoryChanged,
    MemoryEditError,
    MemoryLockTimeout,
    MemoryStoreError,
    MemoryWriteError,
    Unavailable,
)
from my_agent_core.memory.journal import (
    Change,
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
from my_agent_core.memory.merge_pairs import record_pairs
from my_agent_core.memory.own_files import OnDisk, read_text, signature
from my_agent_core.memory.provenance import Provenance
from my_agent_core.memory.render import render_memory_block
from my_agent_core.memory.snapshot import TITLES, load_section
from my_agent_core.memory.store_folder import StoreFolder
from my_agent_core.memory.store_types import (
    MemoryPreview,
    Operation,
    StoreState,
    WriteEvent,
    WriteListener,
)
from my_agent_core.memory.undo import CannotRevert, pick_change, undo_entries
from my_agent_core.safe_write import write_atomic

__all__ = [
    "BACKUP_DIR",
    "LOCK_TIMEOUT",
    "MAX_BACKUPS",
    "MAX_FILE_BYTES",
    "MEMORY_CHAR_LIMIT",
    "USER_CHAR_LIMIT",
    "MemoryChanged",
    "MemoryEditError",
    "MemoryLockTimeout",
    "MemoryPreview",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryWriteError",
    "Operation",
    "StoreState",
    "WriteEvent",
    "WriteListener",
]

logger = logging.getLogger(__name__)

_OWN_FILES = (*FILE_NAMES.values(), JOURNAL_NAME, LOCK_NAME)
_PROFILE_OWN_FILES = (FILE_NAMES["user"], JOURNAL_NAME, LOCK_NAME)


class _Plan:
    """An edit worked out under the lock: the file it writes, the file as read, the entries it
    leaves, its changes (none: nothing to write) and its success message."""

    __slots__ = ("changes", "disk", "entries", "message", "path")

    def __init__(
        self, path: Path, disk: OnDisk, entries: list[str], changes: list[Change], message: str
    ) -> None:
        self.path = path
        self.disk = disk
        self.entries = entries
        self.changes = changes
        self.message = message


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
        self._errors: dict[str, str | None] = {t: None for t in TARGETS}
        self._thread_lock = threading.RLock()
        if os.path.realpath(self.user_dir) == os.path.realpath(self.mem_dir):
            workspace = StoreFolder(self.mem_dir, TARGETS, _OWN_FILES, private=False)
            self._folders: dict[str, StoreFolder] = dict.fromkeys(TARGETS, workspace)
        else:
            workspace = StoreFolder(self.mem_dir, ("memory",), _OWN_FILES, private=False)
            profile = StoreFolder(self.user_dir, ("user",), _PROFILE_OWN_FILES, private=True)
            self._folders = {"memory": workspace, "user": profile}
        #: Each folder once, the workspace's first (the order locks are taken in).
        self._folder_list = list(dict.fromkeys(self._folders[t] for t in TARGETS))
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
        return (self._folders[target].dir / self.files[target]).absolute()

    def folder(self, target: str) -> Path:
        """The folder a target's file, lock and history live in."""
        return self._folders[self._check_target(target)].dir

    def limit(self, target: str) -> int:
        return self.limits[self._check_target(target)]

    @property
    def journal_path(self) -> Path:
        return self.journal.path

    @property
    def journal_error(self) -> str | None:
        """Why this store's last change was saved without its history record ("history not
        recorded: ..."), so it cannot be undone; None once a record was written again."""
        return next((f.writer.error for f in self._folder_list if f.writer.error), None)

    @property
    def folder_error(self) -> str | None:
        """Why the memory folder itself is refused (its workspace layout links out of the
        workspace), checked now; None when it may be used."""
        return next((e for f in self._folder_list if (e := f.folder_error()) is not None), None)

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
        files, and never waits for a lock (writes are atomic renames, so a read needs none). An
        unchanged file is parsed and rendered once per process (`snapshot`)."""
        errors = {id(f): f.folder_error() for f in self._folder_list}
        for folder in self._folder_list:
            if errors[id(folder)] is None:
                folder.clean_stale_temp_files([self.files[t] for t in folder.targets])
        for target in TARGETS:
            text = ""
            error = errors[id(self._folders[target])]
            if error is None:
                try:
                    text = self._read_text(target)
                except Unavailable as exc:
                    error = str(exc)
            loaded = load_section(
                self.files[target], TITLES[target], self.limits[target], text, error
            )
            self._errors[target] = error
            self._entries[target] = list(loaded.entries)
            self._snapshot_entries[target] = list(loaded.entries)
            self._snapshot[target] = loaded.section

    def state(self, target: str) -> StoreState:
        """The target as it is on disk now (fresh read, no lock: writes are atomic renames)."""
        target = self._check_target(target)
        folder = self._folders[target]
        journal_error = folder.writer.error or folder.journal.problem()
        error = folder.folder_error()
        entries: list[str] = []
        if error is None:
            try:
                entries = parse(self._read_text(target)).stored_texts
            except Unavailable as exc:
                error = str(exc)
        path, limit = self.path(target), self.limits[target]
        if error is not None:
            return StoreState(target, path, 0, limit, [], False, error, journal_error)
        return StoreState(
            target, path, budget_used(entries), limit, entries, True, None, journal_error
        )

    # ------------------------------------------------------------------ the frozen snapshot

    def format_for_system_prompt(self, target: str) -> str:
        """One target's section of the frozen snapshot."""
        return self._snapshot[self._check_target(target)]

    def format_all_for_system_prompt(self) -> str:
        """The FROZEN snapshot rendered as a `<MEMORY_CONTEXT>` block; edits never change it."""
        return render_memory_block([self._snapshot[t] for t in TARGETS])

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
        provenance: Provenance | None = None,
    ) -> str:
        """Apply edits all-or-nothing: budget checked on the final state, one write, one journal record.

        `expect`: the file's text the edit was previewed on (`preview(...).before`); when the file
        under the lock is anything else, `MemoryChanged` is raised and nothing is written.
        `provenance`: where an agent's write came from, kept in its journal record."""
        target = self._check_target(target)
        action, mutate = edits.batch(self.files[target], self.limits[target], operations)
        return self._edit(
            target, action, author or self.author, mutate, expect=expect, provenance=provenance
        )

    def preview(self, target: str, operations: list[Operation]) -> MemoryPreview:
        """What `apply(target, operations)` would write, computed under the lock from the file as it
        is now, without writing anything; raises `MemoryEditError` exactly where `apply` would.

        The lock is released before this returns (a user may take minutes to approve), so apply
        the result with `expect=preview.before`: it lands only if nobody wrote meanwhile."""
        target = self._check_target(target)
        _action, mutate = edits.batch(self.files[target], self.limits[target], operations)
        with self._hold(self._folders[target], self.files[target]):
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

    def undo(self, record_id: str | None = None, *, author: str = "user") -> JournalRecord:
        """Revert a change and journal the undo; returns the undo record (`undoes` names the change).

        Without `record_id`: the newest change not yet undone or skipped (any target), and only when
        the history shows it is the newest change to its file (every later change of that file is
        recorded and no record may be missing since); otherwise nothing is written and the message
        says why and gives the change's id. With `record_id`: that change, on top of the file as it
        is now, provided the entries it produced are still there as it left them. A change that
        cannot be reverted (its entry was edited by hand since, or it would restore unsafe text) is
        named and marked skipped, so the next undo reaches the change before it (`undo.py`).
        """
        with contextlib.ExitStack() as locks:
            for folder in self._folder_list:  # always in this order: two stores never deadlock
                locks.enter_context(self._hold(folder, "The memory folder"))
            record, history = pick_change([f.history() for f in self._folder_list], record_id)
            name = self.files[record.target]

            def mutate(entries: list[str]) -> tuple[list[str], list[Change], list[str]]:
                digest = entries_digest(entries)
                by_id = record_id is not None
                return undo_entries(record, history, entries, digest, name, by_id=by_id)

            try:
                self._edit(record.target, "undo", author, mutate, undoes=record.id, locked=True)
            except CannotRevert as exc:  # never again revertable: passed over, so undo goes on
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
        folders = self._folder_list
        if len(folders) == 1:
            folder = folders[0]
            return [] if folder.folder_error() is not None else folder.journal.read()[-limit:]
        records: list[JournalRecord] = []
        for folder in folders:
            if folder.folder_error() is None:
                records += [r for r in folder.journal.read() if folder.serves(r)]
        records.sort(key=lambda r: r.time)  # stable: each history keeps its own order
        return records[-limit:]

    def close(self) -> None:
        """Release the descriptors the store keeps open (also done when it is garbage-collected)."""
        for folder in self._folder_list:
            folder.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # ------------------------------------------------------------------ internals

    def _hold(self, folder: StoreFolder, what: str) -> contextlib.AbstractContextManager[None]:
        """Exclusive lock across threads and processes (flock on `.lock` in the folder), waited for
        at most `lock_timeout` seconds; `what` names the locked thing in messages."""
        return folder.hold(self._thread_lock, self.lock_timeout, what)

    def _mark_skipped(self, record: JournalRecord, author: str, reason: str) -> str:
        """Journal that an undo passed over `record`; says what the next undo will do."""
        writer = self._folders[record.target].writer
        skip = writer.journal.new_record(
            "skip", record.target, author, skips=record.id, note=reason[:500]
        )
        failure = writer.append(skip)
        if failure is not None:
            return (
                f"It could not be marked skipped ({failure}), so the next undo stops here again; "
                "undo an older change by its id."
            )
        return "It is marked skipped: the next undo reaches the change before it."

    def _edit(
        self,
        target: str,
        action: str,
        author: str,
        mutate: edits.Mutation,
        *,
        undoes: str | None = None,
        locked: bool = False,
        expect: str | None = None,
        provenance: Provenance | None = None,
    ) -> str:
        event: WriteEvent | None = None
        warning = ""
        folder = self._folders[target]
        with contextlib.nullcontext() if locked else self._hold(folder, self.files[target]):
            plan = self._plan(target, mutate, expect)
            disk = plan.disk
            if plan.changes:
                if disk.text and not disk.canonical:
                    back_up(folder.dir, self.files[target], disk.text)
                    warning = self._resolved_note(target, disk.text, plan.entries)
                event, journal_warning = self._write(
                    target, plan, action, author, undoes, provenance
                )
                warning += journal_warning
            self._entries[target] = plan.entries
        if event is not None:
            if locked:
                self._pending_events.append(event)
            else:
                self._notify(event)
        return plan.message + warning

    def _resolved_note(self, target: str, text: str, entries: list[str]) -> str:
        """What the success message adds when the file held git conflict markers: its entries were
        read the merge driver's way (both sides kept, no marker; `document.py`), so this write
        removes the markers; the pairs both sides changed are recorded for the linter."""
        if not has_markers(text):
            return ""
        doc = parse(text)
        conflicts = doc.conflicts
        if not conflicts:
            return ""
        name = self.files[target]
        pairs = doc.resolve(conflicts).both_changed
        record_pairs(self._folders[target].dir, name, pairs, entries)
        both = (
            f" {len(pairs)} entr{'y was' if len(pairs) == 1 else 'ies were'} changed on both sides: "
            "both versions stand next to each other; keep one."
            if pairs
            else ""
        )
        return edits.conflict_note(name, len(conflicts.blocks), BACKUP_DIR) + both

    def _plan(self, target: str, mutate: edits.Mutation, expect: str | None) -> _Plan:
        """An edit worked out on the file as it is now (the caller holds the lock): refused here,
        with the message the caller raises, or ready to be written."""
        path, disk = self._read_for_edit(target)
        name = self.files[target]
        if expect is not None and disk.text != expect:
            raise MemoryChanged(
                f"{name} changed while this edit waited for approval (another session, the user "
                "or a program wrote it), so the change that was approved is not the one that would "
                "be made; nothing was written. Look at the current entries and call `memory` again "
                "if the edit is still needed."
            )
        entries, changes, message = edits.plan(name, self.limits[target], disk.entries, mutate)
        return _Plan(path, disk, entries, changes, message)

    def _write(
        self,
        target: str,
        plan: _Plan,
        action: str,
        author: str,
        undoes: str | None,
        provenance: Provenance | None = None,
    ) -> tuple[WriteEvent, str]:
        """Write the new entries and their journal record; returns the event and a warning for the
        success message when the record could not be written."""
        writer = self._folders[target].writer
        disk = plan.disk
        text = serialize(plan.entries)
        data = text.encode("utf-8")
        record = writer.journal.new_record(
            action,
            target,
            author,
            plan.changes,
            undoes,
            before_digest=disk.digest or entries_digest(disk.entries),
            after_digest=canonical_digest(data),
            provenance=provenance,
        )
        outcome: list[str | None] = []

        def journal() -> None:  # appended before the file's fsync: one disk flush carries both
            outcome.append(writer.append(record, commit=False))

        try:
            st = write_atomic(plan.path, data, mode=disk.mode, keep_mode=False, before_sync=journal)
        except OSError as exc:
            if outcome and outcome[0] is None:
                writer.retract()  # the record of an edit that did not land
            raise MemoryWriteError(
                f"{self.files[target]} could not be saved ({exc.strerror or exc}); nothing was "
                "written."
            ) from None
        failure = outcome[0] if outcome else "history not recorded: the journal was not reached"
        writer.saved(record, failure)
        self._disk_cache[target] = (
            signature(st),
            text,
            tuple(plan.entries),
            record.after_digest or "",
        )
        self.last_record = record
        event = WriteEvent(target, disk.text if disk.mode is not None else None, text, record)
        warning = "" if failure is None else f" Warning: {failure}; this change cannot be undone."
        return event, warning

    def _notify(self, event: WriteEvent) -> None:
        listener = self.on_write
        if listener is None:
            return
        try:
            listener(event)
        except Exception:  # the edit is on disk: a broken listener must not turn it into a failure
            logger.exception("memory write listener failed")

    def _read_for_edit(self, target: str) -> tuple[Path, OnDisk]:
        """The file an edit of `target` writes, and the file as it is now, read under the lock:
        text, deduplicated entries, whether it is canonical, its permission bits. Refused
        (`MemoryEditError`): a link out of the folder, any two of the folder's own files that are
        one, a file the reader refuses. A file whose identity (inode, size, times) is the one this
        store last wrote is not read again."""
        name = self.files[target]
        try:
            path, st = self._folders[target].files.locate(name, every_pair=True)
            mode = st.st_mode & 0o7777 if st is not None else None
            cached = self._disk_cache.get(target)
            if cached is not None and st is not None and cached[0] == signature(st):
                return path, OnDisk(cached[1], list(cached[2]), True, mode, cached[3])
            raw = read_text(path, name, self.max_file_bytes)
        except Unavailable as exc:
            self._errors[target] = str(exc)
            raise MemoryEditError(str(exc)) from None
        doc = parse(raw)
        return path, OnDisk(raw, doc.stored_texts, doc.is_canonical(), mode, None)

    def _read_text(self, target: str) -> str:
        """The text of a target's file for a load (only pairs involving it refused)."""
        name = self.files[target]
        path, _st = self._folders[target].files.locate(name, every_pair=False)
        return read_text(path, name, self.max_file_bytes)

    def _check_target(self, target: str) -> str:
        if target not in self._entries:
            raise MemoryEditError(
                f"Unknown target {target!r}: use 'memory' (your notes, MEMORY.md) or 'user' "
                "(the user's profile, USER.md)."
            )
        return target
