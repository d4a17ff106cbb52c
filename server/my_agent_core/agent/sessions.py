"""Chat sessions persisted as they go, so a reload, a restart or a crash loses nothing, and resumed
byte for byte, so the provider's prompt cache still hits after a restart.

One file per session, `<folder>/.my_agent_core/sessions/<id>.jsonl` (owner-only, git-ignored: see
`private.py`), one JSON record per line, appended with one `write` each:

    {"t": "session", "format": "my-agent-session", "version": 1, "id", "folder", "model",
     "created", "system": <the frozen system prompt>, "tools": [<schemas as sent>],
     "snapshot": {"memory": [...], "user": [...]} | null, "meta": {...}}
    {"t": "msg", "m": <a message exactly as sent>}
    {"t": "cut", "n": N}           a failed turn rolled the history back to N messages
    {"t": "compact", "reason", "before", "after", "m": [<the new history>]}
    {"t": "commit", "n": N, "at", "title", "usage": {...}, "last": {...}}   the end of a turn

Counts never include the system message. A torn last line (a crash mid-write) is ignored and cut off
when the session is opened again; damage anywhere else is a clear error and the file is left as it is.
A session file is held under an exclusive `flock` while an agent has it open, so two processes never
write one session, and pruning never removes an open one. The text in a file is data: it goes back to
the model only as the session's own history, and a file that this user did not create here (not
owner-only: e.g. shipped inside a cloned repository) is refused before it is read.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import fcntl
import json
import logging
import os
import queue
import re
import stat
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..paths import PathRefused, read_regular, read_tail
from ..private import SESSIONS_DIR, private_dir
from .messages import Message

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

FORMAT = "my-agent-session"
VERSION = 1
SUFFIX = ".jsonl"
DEFAULT_MAX_COUNT = 50
DEFAULT_MAX_AGE_DAYS = 30
#: A session file larger than this is refused (a 1,000-message session is a few MB).
MAX_SESSION_BYTES = 64 * 1024 * 1024
#: The header line (system prompt, tool schemas) is read from the first this many bytes for a listing.
HEAD_BYTES = 1024 * 1024
#: The last commit record is looked for in the last this many bytes for a listing.
TAIL_BYTES = 256 * 1024
TITLE_CHARS = 80
#: A file modified this long after its last commit record was written is read whole for a listing.
MTIME_SLACK_S = 2.0
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ROLES = frozenset({"user", "assistant", "tool"})


class SessionError(ValueError):
    """A session that cannot be listed, loaded or written; the message says why and what to do."""


class SessionNotFound(SessionError):
    """No persisted session has this id (the language server answers -32602)."""


class SessionDamaged(SessionError):
    """The file is not a session this program wrote (hand-edited, truncated inside, hostile)."""


class SessionBusy(SessionError):
    """The session is open in another window or process (its file is locked)."""


def new_session_id() -> str:
    """A fresh, unguessable session id (32 hex digits)."""
    return os.urandom(16).hex()


def check_id(session_id: object) -> str:
    """`session_id` when it can name a session file (letters, digits, `_`, `-`; at most 64)."""
    if not isinstance(session_id, str) or not _ID.fullmatch(session_id):
        shown = repr(session_id)[:80]
        raise SessionNotFound(
            f"{shown} is not a session id: ids are 1-64 letters, digits, `_` or `-`."
        )
    return session_id


def title_of(text: str) -> str:
    """A one-line title from the user's first message (control characters dropped)."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1] + "…"


# --------------------------------------------------------------------------------- the records


@dataclass(frozen=True)
class SessionHeader:
    """What a session freezes when it starts: the exact system prompt and tool schemas it sends,
    its model and folder, the memory entries frozen into the prompt, and the caller's `meta`."""

    id: str
    folder: str
    model: str
    system_prompt: str
    tools: list[dict[str, Any]]
    created: float
    snapshot: dict[str, list[str]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {
            "t": "session",
            "format": FORMAT,
            "version": VERSION,
            "id": self.id,
            "folder": self.folder,
            "model": self.model,
            "created": self.created,
            "system": self.system_prompt,
            "tools": self.tools,
            "snapshot": self.snapshot,
            "meta": self.meta,
        }


@dataclass
class SessionRecord:
    """A persisted session as loaded: its header, its history (without the system message) as it
    was after the last record, and the meter's state at the last commit."""

    header: SessionHeader
    messages: list[Message]
    updated: float
    title: str
    usage: dict[str, Any] | None = None
    last_request: dict[str, Any] | None = None
    compactions: int = 0
    interrupted: bool = False  # the file ends inside a turn (a crash); what was valid is kept
    path: Path | None = None
    valid_bytes: int = 0  # the length of the file without a torn last line

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def system_prompt(self) -> str:
        return self.header.system_prompt

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.header.tools

    @property
    def model(self) -> str:
        return self.header.model


@dataclass(frozen=True)
class SessionInfo:
    """One line of a listing. `open`: an agent holds the session right now (any process).
    `error`: why the session cannot be resumed (damaged), else None."""

    id: str
    title: str
    created: float
    updated: float
    messages: int
    folder: str
    model: str
    open: bool = False
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
            "messages": self.messages,
            "folder": self.folder,
            "model": self.model,
            "open": self.open,
            "error": self.error,
            "meta": self.meta,
        }


def _encode(record: Mapping[str, Any]) -> bytes:
    """One line; UTF-8 as sent, with `\\u` escapes only if some text cannot be encoded."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return data + b"\n"


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_message(message: object) -> str | None:
    """Why `message` is not a chat message this program sends, or None."""
    if not isinstance(message, dict):
        return "a message is not an object"
    role = message.get("role")
    if role not in _ROLES:
        return f"a message has the role {str(role)[:20]!r}"
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return "a message's content is not text"
    if role == "tool" and (not isinstance(message.get("tool_call_id"), str) or content is None):
        return "a tool result has no call id or no text"
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list) or not calls:
            return "tool calls outside an assistant message"
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not (
                isinstance(function, dict)
                and isinstance(call.get("id"), str)
                and isinstance(function.get("name"), str)
                and isinstance(function.get("arguments"), str)
            ):
                return "a tool call is malformed"
    elif content is None:
        return "a message has no content"
    return None


def _check_header(data: object) -> SessionHeader:
    if not isinstance(data, dict) or data.get("t") != "session" or data.get("format") != FORMAT:
        raise SessionDamaged("its first line is not a my-agent session header")
    version = data.get("version")
    if version != VERSION:
        raise SessionDamaged(
            f"it is version {str(version)[:10]} of the session format; this my-agent reads "
            f"version {VERSION} (update my-agent to resume it)"
        )
    session_id, folder, model = data.get("id"), data.get("folder"), data.get("model")
    system, tools, created = data.get("system"), data.get("tools"), data.get("created")
    if not (
        isinstance(session_id, str)
        and _ID.fullmatch(session_id)
        and isinstance(folder, str)
        and isinstance(model, str)
        and isinstance(system, str)
        and isinstance(created, (int, float))
        and isinstance(tools, list)
        and all(
            isinstance(t, dict)
            and isinstance(t.get("function"), dict)
            and isinstance(t["function"].get("name"), str)
            for t in tools
        )
    ):
        raise SessionDamaged("its header lacks the id, folder, model, system prompt or tools")
    snapshot = data.get("snapshot")
    if snapshot is not None and not (
        isinstance(snapshot, dict) and all(_is_str_list(v) for v in snapshot.values())
    ):
        raise SessionDamaged("its memory snapshot is malformed")
    meta = data.get("meta")
    return SessionHeader(
        session_id,
        folder,
        model,
        system,
        tools,
        float(created),
        snapshot,
        meta if isinstance(meta, dict) else {},
    )


def _valid_end(history: list[Message]) -> int:
    """The length of the longest prefix of `history` whose tool calls all have their results (a
    crash mid-step leaves an assistant call without them: that step never happened). A result
    without its call, or a message between a call and its results, is damage."""
    pending: set[str] = set()
    start = 0
    for index, message in enumerate(history):
        if message.get("role") == "tool":
            if message["tool_call_id"] not in pending:
                raise SessionDamaged("its history has a tool result without its call")
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            raise SessionDamaged("its history has a tool call whose results are missing")
        if message.get("role") == "assistant" and message.get("tool_calls"):
            pending = {call["id"] for call in message["tool_calls"]}
            start = index
    return start if pending else len(history)


def parse_session(data: bytes, *, name: str) -> SessionRecord:
    """A session from its file's bytes; `SessionDamaged` (naming the line) for anything else."""
    valid = data.rfind(b"\n") + 1
    lines = data[:valid].split(b"\n")[:-1]
    if not lines:
        raise SessionDamaged(f"{name} holds no complete record; it cannot be resumed.")
    records: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SessionDamaged(
                f"{name}: line {number} is not JSON ({exc}); the session cannot be resumed and the "
                "file is left as it is."
            ) from None
        if not isinstance(record, dict):
            raise SessionDamaged(f"{name}: line {number} is not a record.")
        records.append(record)
    try:
        header = _check_header(records[0])
    except SessionDamaged as exc:
        raise SessionDamaged(f"{name}: {exc}; it cannot be resumed.") from None
    history: list[Message] = []
    state = SessionRecord(header, history, header.created, "", valid_bytes=valid)
    committed = 0
    for number, record in enumerate(records[1:], start=2):
        problem = _apply(state, record)
        if problem:
            raise SessionDamaged(
                f"{name}: line {number}: {problem}; the session cannot be resumed and the file is "
                "left as it is."
            )
        if record.get("t") == "commit":
            committed = len(state.messages)
    try:
        end = _valid_end(state.messages)
    except SessionDamaged as exc:
        raise SessionDamaged(f"{name}: {exc}; it cannot be resumed.") from None
    state.interrupted = len(state.messages) != committed or end != len(state.messages)
    del state.messages[end:]
    return state


def _apply(state: SessionRecord, record: dict[str, Any]) -> str | None:
    kind = record.get("t")
    if kind == "msg":
        problem = _check_message(record.get("m"))
        if problem:
            return problem
        state.messages.append(record["m"])
    elif kind == "cut":
        n = record.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(state.messages):
            return "a rollback to a point the history never had"
        del state.messages[n:]
    elif kind == "compact":
        messages = record.get("m")
        if not isinstance(messages, list):
            return "a compaction without its history"
        for message in messages:
            problem = _check_message(message)
            if problem:
                return problem
        state.messages[:] = messages
        state.compactions += 1
    elif kind == "commit":
        n, at = record.get("n"), record.get("at")
        if n != len(state.messages) or not isinstance(at, (int, float)):
            return "a turn's end that does not match its history"
        state.updated = float(at)
        title = record.get("title")
        if isinstance(title, str):
            state.title = title_of(title)
        usage, last = record.get("usage"), record.get("last")
        state.usage = usage if isinstance(usage, dict) else state.usage
        state.last_request = last if isinstance(last, dict) else state.last_request
    else:
        return f"an unknown record {str(kind)[:20]!r}"
    return None


# --------------------------------------------------------------------------------- files


def _lock(fd: int) -> bool:
    """Try the session's exclusive lock; False when another holder has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def _check_owned(path: Path) -> os.stat_result | None:
    """The file's status when it is a regular, owner-only file of this user (what this program
    writes); None when it does not exist. Anything else is refused without being read."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SessionError(f"{path.name} cannot be read: {exc.strerror or exc}.") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise SessionDamaged(
            f"{path.name} is not a regular file (a link or a special file); it is not read."
        )
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise SessionDamaged(
            f"{path.name} was not written by my-agent for you on this machine: session files are "
            f"owner-only (0600) and yours, this one is {stat.S_IMODE(st.st_mode):04o} owned by uid "
            f"{st.st_uid} (a cloned repository may have shipped it). It is not resumed."
        )
    return st


class _Syncer:
    """One daemon thread that fsyncs session files after their turns, off the turn's path: a record
    is in the kernel (it survives the process) when `write` returns; the fsync makes it survive a
    power cut about a millisecond later."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[int, threading.Event]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fd: int) -> threading.Event:
        done = threading.Event()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="my-agent-fsync", daemon=True
                )
                self._thread.start()
        self._jobs.put((fd, done))
        return done

    def _run(self) -> None:
        while True:
            fd, done = self._jobs.get()
            try:
                os.fsync(fd)
            except OSError:
                logger.warning("fsync of a session file failed", exc_info=True)
            finally:
                done.set()


_SYNCER = _Syncer()


class SessionWriter:
    """Appends the records of one open session to its file and holds the file's lock.

    Each record is one `os.write` on an O_APPEND descriptor. A write that fails (a full disk) is
    undone with `ftruncate`, so the file stays a valid prefix; the records not written are kept and
    retried with the next record, and `error` says what went wrong until they are all on disk.
    """

    def __init__(self, path: Path, fd: int, size: int, *, sync: bool = True) -> None:
        self.path = path
        self._fd: int | None = fd
        # A writer dropped without close() (an agent nobody closed) still releases the file and its
        # lock when it is collected, so no session stays locked for the life of the process.
        self._release = weakref.finalize(self, os.close, fd)
        self._size = size
        self._pending: list[bytes] = []
        self._synced: threading.Event | None = None
        self.sync = sync
        self.error: str | None = None

    @classmethod
    def create(cls, directory: Path, header: SessionHeader, *, sync: bool = True) -> SessionWriter:
        """A new session file holding `header` (refused when the id is taken)."""
        path = directory / f"{check_id(header.id)}{SUFFIX}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:
            raise SessionError(f"a session with the id {header.id} exists already") from None
        except OSError as exc:
            raise SessionError(
                f"cannot create the session file {path}: {exc.strerror or exc}"
            ) from None
        _lock(fd)
        writer = cls(path, fd, 0, sync=sync)
        writer.append(header.record())
        if writer.error is None and sync:
            with contextlib.suppress(OSError):
                dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        return writer

    @classmethod
    def reopen(cls, record: SessionRecord, *, sync: bool = True) -> SessionWriter:
        """Hold and continue the file `record` was loaded from: a torn last line is cut off, and an
        interrupted turn's invalid tail is rolled back with a `cut` record."""
        path = record.path
        if path is None:
            raise SessionError("this session was not loaded from a file")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise SessionNotFound(f"the session {record.id} no longer exists") from None
        except OSError as exc:
            raise SessionError(f"cannot open {path.name}: {exc.strerror or exc}") from None
        try:
            if not _lock(fd):
                raise SessionBusy(
                    f"the session {record.id} is open in another window or process; close it "
                    "there first."
                )
            st, now = os.fstat(fd), _stat(path)
            if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                raise SessionNotFound(f"the session {record.id} was deleted meanwhile")
            if st.st_size != record.valid_bytes:
                if st.st_size < record.valid_bytes:
                    raise SessionError(f"{path.name} changed while it was being resumed")
                # Records past the loaded ones: written by another holder since, or a torn line.
                _check_tail_is_torn(path, record.valid_bytes, st.st_size)
                os.ftruncate(fd, record.valid_bytes)
        except BaseException:
            os.close(fd)
            raise
        writer = cls(path, fd, record.valid_bytes, sync=sync)
        if record.interrupted:
            writer.append({"t": "cut", "n": len(record.messages)})
        return writer

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record (after any that an earlier failure left pending)."""
        self._pending.append(_encode(record))
        self._flush()

    def _flush(self) -> None:
        fd = self._fd
        if fd is None:
            return
        while self._pending:
            data = self._pending[0]
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(errno.ENOSPC, "short write (is the disk full?)")
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self._size)  # never leave half a record
                self.error = (
                    f"the session could not be saved to {self.path}: {exc.strerror or exc}; it "
                    "goes on in memory and is saved again once the disk accepts it"
                )
                return
            self._size += written
            self._pending.pop(0)
        self.error = None

    def commit(self, record: Mapping[str, Any]) -> None:
        """Write the end-of-turn record, then fsync the file off the caller's path."""
        self.append(record)
        fd = self._fd
        if fd is not None and self.sync and self.error is None:
            self._synced = _SYNCER.submit(fd)

    def close(self) -> None:
        """Release the file (after its pending fsync; records never written stay unwritten)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if self._synced is not None:
            self._synced.wait(10)
        self._release()


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _check_tail_is_torn(path: Path, start: int, end: int) -> None:
    """Refuse to cut complete records that appeared after `start` (another writer's work)."""
    loaded = read_tail(path, max_bytes=min(end - start, TAIL_BYTES), name=path.name)
    tail = loaded[0] if loaded else b""
    if b"\n" in tail:
        raise SessionBusy(f"{path.name} was written by another process while it was being resumed")


# --------------------------------------------------------------------------------- the store


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
        if _check_owned(path) is None:
            raise SessionNotFound(f"no persisted session has the id {session_id}")
        try:
            data = read_regular(path, max_bytes=MAX_SESSION_BYTES, name=path.name)
        except PathRefused as exc:
            raise SessionError(f"{exc} The session cannot be resumed.") from None
        if data is None:
            raise SessionNotFound(f"no persisted session has the id {session_id}")
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
            if not name.endswith(SUFFIX) or not _ID.fullmatch(name[: -len(SUFFIX)]):
                continue
            yield self._info(Path(entry.path), name[: -len(SUFFIX)])

    def _info(self, path: Path, session_id: str) -> SessionInfo | None:
        try:
            st = _check_owned(path)
        except SessionError as exc:
            logger.info("session file left out of the listing: %s", exc)
            return None
        if st is None:
            return None
        opened = _is_open(path)
        try:
            return _quick_info(path, session_id, opened, st) or _full_info(
                path, session_id, opened, self
            )
        except SessionError as exc:
            return SessionInfo(
                session_id, "", st.st_mtime, st.st_mtime, 0, "", "", opened, str(exc)
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
        if _check_owned(path) is None:
            raise SessionNotFound(f"no persisted session has the id {session_id}")
        if not _remove_unless_open(path):
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
            if info.open or info.id in keep_ids:
                continue
            with contextlib.suppress(SessionError, OSError):
                if _remove_unless_open(self.path(info.id)):
                    deleted.append(info.id)
        return deleted


def _is_open(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return not _lock(fd)
    finally:
        os.close(fd)  # closing releases the probe's lock


def _remove_unless_open(path: Path) -> bool:
    """Unlink `path` while holding its lock; False when someone holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    try:
        if not _lock(fd):
            return False
        os.unlink(path)
        return True
    finally:
        os.close(fd)


def _quick_info(
    path: Path, session_id: str, opened: bool, st: os.stat_result
) -> SessionInfo | None:
    """The listing from the header line and the last commit record, without reading the middle;
    None (then the whole file is read) when the tail holds no commit, or when the file changed
    after its last commit was written (edited by hand, or by a writer that has not committed)."""
    head = read_regular(path, max_bytes=HEAD_BYTES, truncate=True, name=path.name) or b""
    end = head.find(b"\n")
    if end < 0:
        return None
    try:
        header = _check_header(json.loads(head[:end]))
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
            commit = json.loads(raw)
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
