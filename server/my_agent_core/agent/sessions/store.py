"""Chat sessions persisted as they go, so a reload, a restart or a crash loses nothing, and resumed
byte for byte, so the provider's prompt cache still hits after a restart.

One file per session, `<folder>/.my_agent_core/sessions/<id>.jsonl` (owner-only, git-ignored: see
`private.py`), one JSON record per line, appended with one `write` each:

    {"t": "session", "format": "my-agent-session", "version": 1, "id", "folder", "model",
     "created", "system": <the frozen system prompt>, "tools": [<schemas as sent>],
     "snapshot": {"memory": [...], "user": [...]} | null, "meta": {...}, "mac": <signing.py>}
    {"t": "msg", "m": <a message exactly as sent>}
    {"t": "cut", "n": N}           a failed turn rolled the history back to N messages
    {"t": "compact", "reason", "before", "after", "m": [<the new history>]}
    {"t": "commit", "n": N, "at", "title", "usage": {...}, "last": {...}}   the end of a turn

Counts never include the system message. A torn last line (a crash mid-write) is ignored and cut off
when the session is opened again; damage anywhere else is a clear error and the file is left as it is.
A session file is held under an exclusive `flock` while an agent has it open, so two processes never
write one session, and pruning never removes an open one. The text in a file is data: it goes back to
the model only as the session's own history. A file that my-agent did not write for this user on this
machine is refused before it is read: not owner-only and yours (`writer.check_owned`), or without this
machine's signature on its header (`signing.py`: a session shipped inside a cloned repository, whatever
its mode). Every JSON line is parsed with a bound on its depth (`bounded_json`).
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ...bounded_json import loads
from ...paths import PathRefused, read_regular, read_tail
from ...private import SESSIONS_DIR, private_dir
from .format import (
    SUFFIX,
    SessionBusy,
    SessionDamaged,
    SessionError,
    SessionHeader,
    SessionInfo,
    SessionNotFound,
    SessionRecord,
    check_header,
    check_id,
    is_session_id,
    new_session_id,
    parse_session,
    title_of,
)
from .signing import SessionKeyError, SessionNotTrusted, verify_header
from .writer import TAIL_BYTES, SessionWriter, check_owned, is_open, remove_unless_open

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "DEFAULT_MAX_COUNT",
    "MAX_SESSION_BYTES",
    "SessionBusy",
    "SessionDamaged",
    "SessionError",
    "SessionHeader",
    "SessionInfo",
    "SessionNotFound",
    "SessionRecord",
    "SessionStore",
    "SessionWriter",
    "new_session_id",
    "title_of",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_COUNT = 50
DEFAULT_MAX_AGE_DAYS = 30
#: A session file larger than this is refused (a 1,000-message session is a few MB).
MAX_SESSION_BYTES = 64 * 1024 * 1024
#: The header line (system prompt, tool schemas) is read from the first this many bytes for a listing.
HEAD_BYTES = 1024 * 1024
#: ... of which this much is read first (a header is usually a few tens of KB).
FIRST_READ_BYTES = 64 * 1024
#: A file modified this long after its last commit record was written is read whole for a listing.
MTIME_SLACK_S = 2.0


class SessionStore:
    """The persisted sessions of one workspace folder: list (newest first), load, delete, prune.

    The folder `<folder>/.my_agent_core/sessions/` is created (owner-only, git-ignored) when the
    first session is written; a link or a non-folder there is refused (`PathRefused`).
    """

    def __init__(
        self,
        folder: Path | str,
        *,
        max_count: int = DEFAULT_MAX_COUNT,
        max_age_days: float = DEFAULT_MAX_AGE_DAYS,
        sync: bool = True,
    ) -> None:
        self.folder = Path(os.path.abspath(folder))
        self.max_count = max_count if isinstance(max_count, int) and max_count > 0 else 50
        ok_age = isinstance(max_age_days, (int, float)) and max_age_days > 0
        self.max_age_days = float(max_age_days) if ok_age else float(DEFAULT_MAX_AGE_DAYS)
        self.sync = sync

    def directory(self, *, create: bool = False) -> Path:
        return private_dir(self.folder, SESSIONS_DIR, create=create)

    def path(self, session_id: str) -> Path:
        return self.directory() / f"{check_id(session_id)}{SUFFIX}"

    # reading

    def load(self, session_id: str) -> SessionRecord:
        """The session, as its file says (SessionNotFound, SessionDamaged, SessionError)."""
        path = self.path(session_id)
        if check_owned(path) is None:
            raise SessionNotFound(f"no persisted session has the id {session_id}")
        try:
            head = _head_line(path)  # the signature first: a file not ours is not even read whole
            if head is not None:
                verify_header(head, name=path.name)
            data = read_regular(path, max_bytes=MAX_SESSION_BYTES, name=path.name)
        except PathRefused as exc:
            raise SessionError(f"{exc} The session cannot be resumed.") from None
        if data is None:
            raise SessionNotFound(f"no persisted session has the id {session_id}")
        end = data.find(b"\n")
        if end >= 0:
            verify_header(data[:end], name=path.name)  # what is parsed is what was checked
        record = parse_session(data, name=path.name)
        if record.id != session_id:
            raise SessionDamaged(
                f"{path.name} holds the session {record.id}, not {session_id}; it is not resumed."
            )
        record.path = path
        return record

    def latest(self) -> SessionInfo | None:
        """The most recently updated session that can be resumed."""
        return next((info for info in self.list() if info.error is None), None)

    def list(self) -> list[SessionInfo]:
        """Every session of the folder, newest first (damaged ones too, with `error`). Files that
        are not this user's own sessions are left out (and never touched)."""
        infos = [info for info in self._scan(self.directory()) if info is not None]
        infos.sort(key=lambda info: (info.updated, info.created, info.id), reverse=True)
        return infos

    def _scan(self, directory: Path) -> Iterator[SessionInfo | None]:
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionError(f"cannot list {directory}: {exc.strerror or exc}") from None
        for entry in entries:
            name = entry.name
            if not name.endswith(SUFFIX) or not is_session_id(name[: -len(SUFFIX)]):
                continue
            yield self._info(Path(entry.path), name[: -len(SUFFIX)])

    def _info(self, path: Path, session_id: str) -> SessionInfo | None:
        try:
            st = check_owned(path)
        except SessionError as exc:
            logger.info("session file left out of the listing: %s", exc)
            return None
        if st is None:
            return None
        opened = is_open(path)
        try:
            return _quick_info(path, session_id, opened, st) or _full_info(
                path, session_id, opened, self
            )
        except (SessionError, PathRefused) as exc:  # listed with why; the others still are
            return SessionInfo(
                session_id,
                "",
                st.st_mtime,
                st.st_mtime,
                0,
                "",
                "",
                opened,
                str(exc),
                # not provably ours (or the key cannot say): never pruned
                signed=not isinstance(exc, (SessionNotTrusted, SessionKeyError)),
            )

    # writing

    def create(self, header: SessionHeader) -> SessionWriter:
        """A new session file (the folder is created on first use); older sessions are pruned."""
        writer = SessionWriter.create(self.directory(create=True), header, sync=self.sync)
        try:
            self.prune(keep=[header.id])
        except (SessionError, PathRefused, OSError):
            logger.warning("pruning old sessions failed", exc_info=True)
        return writer

    def delete(self, session_id: str) -> None:
        """Remove a persisted session (SessionBusy while it is open anywhere)."""
        path = self.path(session_id)
        if check_owned(path) is None:
            raise SessionNotFound(f"no persisted session has the id {session_id}")
        if not remove_unless_open(path):
            raise SessionBusy(f"the session {session_id} is open; close it before deleting it")

    def prune(self, *, keep: Iterable[str] = (), now: float | None = None) -> builtins.list[str]:
        """Delete sessions beyond `max_count` (newest kept) or not updated for `max_age_days`,
        never one that is open (anywhere) or named in `keep`. Returns the ids deleted."""
        keep_ids = set(keep)
        moment = time.time() if now is None else now
        oldest = moment - self.max_age_days * 86400
        deleted: builtins.list[str] = []
        for index, info in enumerate(self.list()):
            if index < self.max_count and info.updated >= oldest:
                continue
            if info.open or info.id in keep_ids or not info.signed:
                continue  # a file this machine did not sign is not ours to delete
            with contextlib.suppress(SessionError, OSError):
                if remove_unless_open(self.path(info.id)):
                    deleted.append(info.id)
        return deleted


def _quick_info(
    path: Path, session_id: str, opened: bool, st: os.stat_result
) -> SessionInfo | None:
    """The listing from the header line and the last commit record, without reading the middle;
    None (then the whole file is read) when the tail holds no commit, or when the file changed
    after its last commit was written (edited by hand, or by a writer that has not committed)."""
    head = _head_line(path)
    if head is None:
        return None
    verify_header(head, name=path.name)
    try:
        header = check_header(loads(head, what="the header"))
    except (ValueError, SessionDamaged):
        return None
    if header.id != session_id:
        return None
    tail = read_tail(path, max_bytes=TAIL_BYTES, name=path.name)
    if tail is None:
        return None
    data, was_cut = tail
    lines = data.split(b"\n")[:-1]  # the last piece is empty, or a torn record
    if was_cut:
        lines = lines[1:]  # starts inside a record
    for raw in reversed(lines):
        if not raw.startswith(b'{"t":"commit"'):
            if raw.startswith((b'{"t":"msg"', b'{"t":"cut"', b'{"t":"compact"')):
                return None  # a turn was going on after the last commit: count properly
            continue
        try:
            commit = loads(raw, what="a commit record")
        except ValueError:
            return None
        if not isinstance(commit, dict) or not isinstance(commit.get("n"), int):
            return None
        at = commit.get("at")
        if not isinstance(at, (int, float)) or st.st_mtime > at + MTIME_SLACK_S:
            return None
        title = commit.get("title")
        return SessionInfo(
            header.id,
            title_of(title) if isinstance(title, str) else "",
            header.created,
            float(at),
            commit["n"],
            header.folder,
            header.model,
            opened,
            None,
            header.meta,
        )
    return None


def _head_line(path: Path) -> bytes | None:
    """The header line of a session file (without its newline), read from the first `HEAD_BYTES`;
    None when there is none that short (the whole file is then read by `load`)."""
    head = read_regular(path, max_bytes=FIRST_READ_BYTES, truncate=True, name=path.name) or b""
    end = head.find(b"\n")
    if end < 0 and len(head) == FIRST_READ_BYTES:  # a big header (long context files): read on
        head = read_regular(path, max_bytes=HEAD_BYTES, truncate=True, name=path.name) or b""
        end = head.find(b"\n")
    return head[:end] if end >= 0 else None


def _full_info(path: Path, session_id: str, opened: bool, store: SessionStore) -> SessionInfo:
    record = store.load(session_id)
    header = record.header
    return SessionInfo(
        header.id,
        record.title,
        header.created,
        record.updated,
        len(record.messages),
        header.folder,
        header.model,
        opened,
        None,
        header.meta,
    )
