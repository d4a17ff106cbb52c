"""One folder a store keeps files in, and what belongs to that folder: its own files, lock and history.

Both targets share one folder, unless the user profile lives in a folder of its own
(`MemoryStore(user_dir=...)`: one USER.md for every workspace), which then has its own lock, history
and backups. The store asks a folder for a hold before each edit and for its history before an undo.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import os
import stat
import threading
from pathlib import Path

from my_agent_core.layout import JOURNAL_NAME, LOCK_NAME, TARGETS
from my_agent_core.memory.backups import stale_temp_files
from my_agent_core.memory.errors import MemoryEditError
from my_agent_core.memory.journal import History, Journal, JournalRecord
from my_agent_core.memory.journal_writer import JournalWriter
from my_agent_core.memory.lock_file import FolderHold, LockFile
from my_agent_core.memory.own_files import OwnFiles
from my_agent_core.paths import PathRefused, check_memory_folder
from my_agent_core.safe_write import TEMP_SUFFIX

__all__ = ["StoreFolder"]

_SWEEP_OPEN = os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _names_matching(folder: Path, patterns: list[str]) -> list[str]:
    """The names in `folder` that match any of the glob `patterns` (one listing)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


class StoreFolder:
    """The folder `dir` holding the files of `targets` (`names`: its own files, which must stay
    separate files), with its lock, its history and its backups."""

    __slots__ = ("dir", "files", "lock", "targets", "writer")

    def __init__(
        self,
        folder: Path,
        targets: tuple[str, ...],
        names: tuple[str, ...],
        *,
        private: bool = False,
    ) -> None:
        self.dir = folder
        self.targets = targets
        self.files = OwnFiles(folder, names)
        #: `private`: the folder is created owner-only (the user's own profile folder).
        self.lock = LockFile(self.files, private=private)
        self.writer = JournalWriter(Journal(folder / JOURNAL_NAME))

    @property
    def journal(self) -> Journal:
        return self.writer.journal

    def folder_error(self) -> str | None:
        """Why this folder is refused now (a workspace layout linked out), or None."""
        try:
            check_memory_folder(self.dir)
        except PathRefused as exc:
            return str(exc)
        return None

    def hold(self, thread_lock: threading.RLock, timeout: float, what: str) -> FolderHold:
        """The hold an edit takes (`with folder.hold(...)`), refused at once when the folder is."""
        error = self.folder_error()
        if error is not None:
            raise MemoryEditError(error)
        return FolderHold(self.lock, thread_lock, timeout, what)

    def serves(self, record: JournalRecord) -> bool:
        """Whether `record` is about a file of this folder (a workspace history keeps the records
        of its own USER.md from before the profile moved; they are not about the shared one)."""
        return self.targets == TARGETS or record.target in self.targets

    def history(self) -> History:
        """This folder's history, holding only the records about its own files."""
        history = self.journal.history()
        if self.targets == TARGETS:
            return history
        items = tuple(
            item
            for item in history.items
            if not isinstance(item, JournalRecord) or self.serves(item)
        )
        return History(items, history.problem)

    def clean_stale_temp_files(self, file_names: list[str]) -> None:
        """Delete temp files of a writer that died mid-write (of `file_names`, the journal's trim
        and backups), only when no writer holds the lock. Its own descriptor, not the held one: a
        flock on that would succeed while another thread of this process is mid-write. Every
        session start runs this, so it lists the folder once."""
        try:
            fd = os.open(self.dir / LOCK_NAME, _SWEEP_OPEN)  # no lock yet: nothing ever wrote
        except OSError:
            return
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return
            # journal: its trim
            patterns = [f".{name}.*{TEMP_SUFFIX}" for name in (*file_names, JOURNAL_NAME)]
            stale = [self.dir / name for name in _names_matching(self.dir, patterns)]
            stale += stale_temp_files(self.dir)
            for path in stale:
                with contextlib.suppress(OSError):
                    path.unlink()
        finally:
            os.close(fd)

    def close(self) -> None:
        """Release the descriptors kept open between edits."""
        self.lock.close()
        self.journal.close()
