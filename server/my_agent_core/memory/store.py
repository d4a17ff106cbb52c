"""MemoryStore: live entries on disk, a frozen snapshot for the system prompt, safe concurrent writes.

Two states live side by side (the design's "parallel states"): `_entries`, the live store every edit
updates at once, and `_snapshot`, frozen by `load_from_disk()` and never touched by writes, so the
system prompt of a session stays byte-identical and the provider's prompt cache keeps hitting.

Every edit takes an exclusive lock on the memory folder, re-reads the file, applies the edit to what is
on disk, writes atomically (temp file, fsync, rename, folder fsync), journals it and unlocks: edits from
two windows, two chat sessions and the CLI serialise and none is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from my_agent_core.memory.document import budget_used, normalize_entry, parse, serialize
from my_agent_core.memory.journal import Change, Journal, JournalRecord
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

__all__ = [
    "MEMORY_CHAR_LIMIT",
    "USER_CHAR_LIMIT",
    "MemoryEditError",
    "MemoryStore",
    "Operation",
    "StoreState",
    "WriteEvent",
    "WriteListener",
]

logger = logging.getLogger(__name__)

MEMORY_CHAR_LIMIT = 2200
USER_CHAR_LIMIT = 1375
BACKUP_DIR = ".backups"
MAX_BACKUPS = 20

_TITLES = {"memory": "agent notes", "user": "user profile"}


class MemoryEditError(ValueError):
    """A refused edit. The message says why and how to fix the call; nothing changed on disk."""


@dataclass(frozen=True, slots=True)
class StoreState:
    """One store as it is on disk (what panels and `memory/state` show)."""

    target: str
    path: Path
    used: int
    limit: int
    entries: list[str]
    available: bool
    error: str | None = None


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


class _Unavailable(Exception):
    """A file the store must not read or write (undecodable, or a symlink out of the folder)."""


class MemoryStore:
    """The two memory files of one folder: live entries, frozen snapshot, budgets, locked writes."""

    def __init__(
        self,
        mem_dir: Path | str,
        memory_char_limit: int = MEMORY_CHAR_LIMIT,
        user_char_limit: int = USER_CHAR_LIMIT,
        author: str = "agent",
        on_write: WriteListener | None = None,
    ) -> None:
        self.mem_dir = Path(mem_dir)
        #: Called after every successful write (edits and undos), on the writing thread, once the
        #: lock is released; a failing listener is logged and never turns a saved edit into an error.
        self.on_write = on_write
        self.limits: dict[str, int] = {"memory": memory_char_limit, "user": user_char_limit}
        self.files: dict[str, str] = dict(FILE_NAMES)
        self.author = author
        # (1) live state: changes with every edit.  (2) frozen snapshot: captured by load_from_disk().
        self._entries: dict[str, list[str]] = {t: [] for t in TARGETS}
        self._snapshot: dict[str, str] = {t: "" for t in TARGETS}
        self._snapshot_entries: dict[str, list[str]] = {t: [] for t in TARGETS}
        self._snapshot_used: dict[str, int] = {t: 0 for t in TARGETS}
        self._errors: dict[str, str | None] = {t: None for t in TARGETS}
        self._thread_lock = threading.RLock()
        self.journal = Journal(self.mem_dir / JOURNAL_NAME)
        self.last_record: JournalRecord | None = None
        self.journal_error: str | None = None
        self._lock_fd: int | None = None
        self._lock_pid = 0
        self._disk_cache: dict[str, tuple[tuple[int, ...], str, tuple[str, ...]]] = {}
        self._pending_events: list[WriteEvent] = []  # writes made under undo's lock, sent after it

    # ------------------------------------------------------------------ reading

    def path(self, target: str) -> Path:
        """Absolute path of a target's file."""
        return (self.mem_dir / self.files[self._check_target(target)]).absolute()

    def limit(self, target: str) -> int:
        return self.limits[self._check_target(target)]

    @property
    def journal_path(self) -> Path:
        return self.journal.path

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
        """Read both files, dedup preserving order, and freeze the snapshot. Never raises for bad files."""
        with self._thread_lock:
            self._clean_stale_temp_files()
            for target in TARGETS:
                try:
                    entries = self._read_entries(target)
                    self._errors[target] = None
                except _Unavailable as exc:
                    entries = []
                    self._errors[target] = str(exc)
                except OSError as exc:
                    entries = []
                    self._errors[target] = f"{self.files[target]} could not be read: {exc}"
                self._entries[target] = entries
                self._snapshot_entries[target] = list(entries)
                self._snapshot_used[target] = budget_used(entries)
                self._snapshot[target] = self._render_section(target, entries)

    def state(self, target: str) -> StoreState:
        """The target as it is on disk now (fresh read, no lock: writes are atomic renames)."""
        target = self._check_target(target)
        try:
            entries = self._read_entries(target)
        except (_Unavailable, OSError) as exc:
            return StoreState(
                target, self.path(target), 0, self.limits[target], [], False, str(exc)
            )
        return StoreState(
            target, self.path(target), budget_used(entries), self.limits[target], entries, True
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

    def apply(self, target: str, operations: list[Operation], *, author: str | None = None) -> str:
        """Apply edits all-or-nothing: budget checked on the final state, one write, one journal record."""
        target = self._check_target(target)
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

        return self._edit(target, action, author or self.author, mutate)

    def undo(self, *, author: str = "user") -> JournalRecord:
        """Revert the newest change not yet undone (any target), as applied to the files now."""
        with self._locked():
            record = self.journal.last_undoable()
            if record is None:
                raise MemoryEditError("Nothing to undo: the history has no change left to revert.")

            def mutate(entries: list[str]) -> tuple[list[str], list[Change], list[str]]:
                inverse: list[Change] = []
                for change in reversed(record.changes):
                    if change.before is not None and scan(change.before):
                        raise MemoryEditError(
                            f"Cannot undo: it would restore an entry that looks unsafe "
                            f"({describe(scan(change.before))}); restore it by hand if you trust it."
                        )
                    entries = _revert(entries, change, self.files[record.target])
                    inverse.append(Change(change.index, change.after, change.before))
                return entries, inverse, [f"Undid {record.action} by {record.author}"]

            self._edit(record.target, "undo", author, mutate, undoes=record.id, locked=True)
            assert self.last_record is not None
            undo_record = self.last_record
        events, self._pending_events = self._pending_events, []
        for event in events:
            self._notify(event)
        return undo_record

    def log(self, limit: int = 50) -> list[JournalRecord]:
        """The newest journal records, newest last."""
        return self.journal.read()[-limit:] if limit > 0 else []

    # ------------------------------------------------------------------ internals

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
            return f"Added to {name}."
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
        doc = parse(content)
        if len(doc.entries) != 1 or doc.delimiters:
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
    ) -> str:
        event: WriteEvent | None = None
        with contextlib.nullcontext() if locked else self._locked():
            try:
                path = self._resolved(target)
            except _Unavailable as exc:
                self._errors[target] = str(exc)
                raise MemoryEditError(str(exc)) from None
            raw, original, canonical, mode = self._read_for_edit(target, path)
            before_used = budget_used(original)
            entries, changes, notes = mutate(list(original))
            after_used = budget_used(entries)
            limit = self.limits[target]
            name = self.files[target]
            if after_used > limit and after_used > before_used:
                raise MemoryEditError(
                    f"{name} is full: this edit needs {after_used}/{limit} chars, the store now uses "
                    f"{before_used}/{limit}. Nothing was written. Consolidate in this turn: merge related "
                    "entries into one shorter entry with `replace` (or several edits at once with "
                    "`operations`), or `remove` outdated ones, then retry. If nothing can go, do not "
                    f"retry: carry on with your reply.\n{render_listing(original, name=name, limit=limit)}"
                )
            if changes:
                if raw and not canonical:
                    self._backup(target)
                text = serialize(entries)
                record = self.journal.new_record(action, target, author, changes, undoes)

                def journal() -> None:
                    try:
                        self.journal.append(record)
                    except OSError as exc:  # a broken journal must not block the edit itself
                        self.journal_error = f"history not recorded: {exc}"

                signature = self._atomic_write(path, text, mode, before_sync=journal)
                self._disk_cache[target] = (signature, text, tuple(entries))
                self.last_record = record
                event = WriteEvent(target, raw if mode is not None else None, text, record)
            self._entries[target] = entries
        if event is not None:
            if locked:
                self._pending_events.append(event)
            else:
                self._notify(event)
        return f"{' '.join(notes)} ({after_used}/{limit} chars used)"

    def _notify(self, event: WriteEvent) -> None:
        listener = self.on_write
        if listener is None:
            return
        try:
            listener(event)
        except Exception:  # the edit is on disk: a broken listener must not turn it into a failure
            logger.exception("memory write listener failed")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive lock across threads and processes (flock on `.lock` in the memory folder)."""
        with self._thread_lock:
            try:
                fd = self._lock_descriptor()
            except _Unavailable as exc:
                raise MemoryEditError(str(exc)) from None
            except OSError as exc:
                raise MemoryEditError(
                    f"Cannot lock the memory folder ({self.mem_dir / LOCK_NAME}: {exc.strerror}); "
                    "nothing was written."
                ) from None
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_descriptor(self) -> int:
        """Lock `.lock` and return its descriptor, kept open between edits (re-opened after a fork or
        when the file was deleted or replaced, so every process always locks the same inode)."""
        lock_path = self.mem_dir / LOCK_NAME
        while True:
            if self._lock_fd is None or self._lock_pid != os.getpid():
                # An open lock is re-checked only when re-opened: swapping the file for a link unlinks
                # the inode we hold (st_nlink 0 below), which brings us back here.
                self._refuse_outside_link(lock_path)
                self.mem_dir.mkdir(parents=True, exist_ok=True)
                self._lock_fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
                self._lock_pid = os.getpid()
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            if os.fstat(self._lock_fd).st_nlink > 0:  # still the file the others open by that name
                return self._lock_fd
            os.close(self._lock_fd)  # deleted or replaced under us: lock the new one
            self._lock_fd = None

    def close(self) -> None:
        """Release the descriptors the store keeps open (also done when it is garbage-collected)."""
        if self._lock_fd is not None and self._lock_pid == os.getpid():
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
        self._lock_fd = None
        self.journal.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _read_for_edit(self, target: str, path: Path) -> tuple[str, list[str], bool, int | None]:
        """The file's text, its deduplicated entries, whether it is canonical and its permission bits
        (None when missing), read under the lock.

        A file whose identity (inode, size, times) is the one this store last wrote is not read again.
        """
        try:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            mode = st.st_mode & 0o7777 if st is not None else None
            cached = self._disk_cache.get(target)
            if cached is not None and st is not None and cached[0] == _signature(st):
                return cached[1], list(cached[2]), True, mode
            raw = self._read_text(path, self.files[target])
        except _Unavailable as exc:
            self._errors[target] = str(exc)
            raise MemoryEditError(str(exc)) from None
        doc = parse(raw)
        return raw, doc.stored_texts, doc.is_canonical(), mode

    def _read_entries(self, target: str) -> list[str]:
        return parse(self._read_text(self._resolved(target), self.files[target])).stored_texts

    def _read_text(self, path: Path, name: str) -> str:
        """The decoded text of a memory file ("" when missing); `name` is what messages call it."""
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return ""
        except IsADirectoryError:
            raise _Unavailable(
                f"{name} is a folder, not a file; the store will not touch it."
            ) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unavailable(
                f"{name} is not valid UTF-8 (bad byte at offset {exc.start}); the store will "
                "not overwrite it. Fix or move the file, then retry."
            ) from None
        return text  # a BOM stays: the parser skips it and marks the file non-canonical

    def _resolved(self, target: str) -> Path:
        path = self.mem_dir / self.files[target]
        self._refuse_outside_link(path)
        return path.resolve() if path.is_symlink() else path

    def _refuse_outside_link(self, path: Path) -> None:
        if not path.is_symlink():
            return
        real = path.resolve()
        folder = self.mem_dir.resolve()
        if not real.is_relative_to(folder) or real == folder:
            raise _Unavailable(
                f"{path.name} is a symbolic link to {real}, outside the memory folder; the store refuses "
                "to read or write through it (a cloned repository could aim it at your files)."
            )

    def _backup(self, target: str) -> None:
        """Keep the previous bytes of a non-canonical (hand-edited) file recoverable before rewriting."""
        backups = self.mem_dir / BACKUP_DIR
        if backups.is_symlink() or (backups.exists() and not backups.is_dir()):
            raise MemoryEditError(
                f"{self.files[target]} was edited by hand and must be backed up before the store rewrites "
                f"it, but {backups} is not a plain folder (a link or a file); move it away and retry."
            )
        backups.mkdir(exist_ok=True)
        now = time.time_ns()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now / 1e9))
        name = f"{self.files[target]}.{stamp}.{now % 1_000_000_000:09d}.{os.getpid()}.bak"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(backups / name, flags, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(self._resolved(target).read_bytes())
        olds = sorted(p for p in backups.glob(f"{self.files[target]}.*.bak") if not p.is_symlink())
        for old in olds[:-MAX_BACKUPS]:
            old.unlink(missing_ok=True)

    def _atomic_write(
        self,
        path: Path,
        text: str,
        mode: int | None,
        before_sync: Callable[[], None] | None = None,
    ) -> tuple[int, ...]:
        """Temp file in the same folder (with `mode`, or 0o666 less the umask for a new file), fsync,
        rename over the target, fsync the folder.

        `before_sync` runs just before the fsync (the journal append: one disk flush then carries both,
        and a crash can at worst leave a journal record of an edit that did not land, which undo
        reports as already gone). Returns the new file's identity signature (for the re-read cache)."""
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            os.fchmod(fd, mode if mode is not None else 0o666 & ~_current_umask())
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                if before_sync is not None:
                    before_sync()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
            signature = _signature(os.stat(path))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return signature

    def _clean_stale_temp_files(self) -> None:
        """Temp files of a writer that died mid-write (only when no writer holds the lock)."""
        if not self.mem_dir.is_dir():
            return
        lock_path = self.mem_dir / LOCK_NAME
        if lock_path.is_symlink() or not lock_path.is_file():
            return
        try:
            fd = os.open(lock_path, os.O_RDWR)
        except OSError:
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            for name in (
                *self.files.values(),
                JOURNAL_NAME,
            ):  # the journal trims via a temp file too
                for stale in self.mem_dir.glob(f".{name}.*.tmp"):
                    stale.unlink(missing_ok=True)
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


def _revert(entries: list[str], change: Change, name: str) -> list[str]:
    if change.after is not None:
        if change.after not in entries:
            raise MemoryEditError(
                f'Cannot undo: the entry "{_preview(change.after)}" is no longer in {name} (changed since).'
            )
        index = entries.index(change.after)
        if change.before is None:
            del entries[index]
        else:
            entries[index] = change.before
        return entries
    if change.before is not None and change.before not in entries:
        entries.insert(min(change.index, len(entries)), change.before)
    return entries


def _current_umask() -> int:
    """The process umask without changing it (os.umask can only read it by setting it, which would
    race with threads creating files); Linux exposes it in /proc/self/status."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _signature(st: os.stat_result) -> tuple[int, ...]:
    """What identifies one version of a file: any rewrite changes it (ctime cannot be set back)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _preview(text: str) -> str:
    """An entry named in a success message: one line, bounded, never a blocked entry's text."""
    return preview(text)
