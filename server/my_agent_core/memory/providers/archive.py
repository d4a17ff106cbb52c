"""`archive`: the embedded default provider, an SQLite FTS5 index per workspace folder.

`<folder>/.my_agent_core/archive/archive.sqlite3` (private, git-ignored, never through a link) holds
finished turns and the entries a replace or remove took out of MEMORY.md / USER.md. Two windows, the
CLI and the MCP server may write it at once: WAL mode, `BEGIN IMMEDIATE` writes, a busy timeout shorter
than the manager's hook limit. A process crash loses at most the turn being written (each item is one
transaction). Nothing is created until the first item is stored: a folder that is only searched (a
client listing tools, a Recall view opened) gets no archive and no private folder. A database that cannot be read is moved aside with a clear message, never replaced in
place and never deleted; one made by a newer version is refused and left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from my_agent_core.memory.providers.indexed import (
    ArchiveBusy,
    ArchiveError,
    Candidate,
    IndexedArchiveProvider,
    MatchSyntax,
    NewItem,
    SearchWord,
    item_from_row,
    items_by_id,
    parse_item_id,
)
from my_agent_core.memory.providers.items import ItemKind, RecallItem
from my_agent_core.paths import PathRefused, kind_of
from my_agent_core.private import ARCHIVE_DIR, private_dir

__all__ = [
    "ARCHIVE_FILE",
    "SCHEMA_VERSION",
    "ArchiveProvider",
    "SqliteArchive",
    "archive_path",
    "create_owner_only",
    "open_archive",
    "refuse_odd_files",
]

logger = logging.getLogger(__name__)

ARCHIVE_FILE = "archive.sqlite3"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 1.5  # below the manager's 2 s hook limit: a held lock is reported, not waited out
_SIDE_FILES = ("-wal", "-shm", "-journal")
_CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

# Forward-only migrations: MIGRATIONS[n] takes a database from version n to n + 1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE items (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        created REAL NOT NULL,
        session TEXT,
        text_a TEXT NOT NULL,
        text_b TEXT,
        target TEXT,
        action TEXT
    );
    CREATE INDEX items_created ON items(created);
    CREATE VIRTUAL TABLE items_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0');
    CREATE TABLE terms (term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE stats (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO stats(key, value) VALUES ('items', 0);
    """,
]
_OWN_OBJECTS = {"items", "items_created", "items_fts", "terms", "stats", "sqlite_autoindex_stats_1"}
_FTS_SHADOW = ("items_fts_data", "items_fts_idx", "items_fts_content", "items_fts_docsize")
_FTS_SHADOW_CONFIG = "items_fts_config"
#: FTS5 MATCH: `"word"`, `"prefix"*`, AND, OR.
_FTS5 = MatchSyntax(term='"{}"', prefix='"{}"*', both=" AND ", either=" OR ")

Report = Callable[[str], None]
"""`report(message)`: a notice a person should see."""


def archive_path(folder: Path | str, *, create: bool = True) -> Path:
    """Where a workspace folder's archive lives (the private folder is created when `create`)."""
    return private_dir(folder, ARCHIVE_DIR, create=create) / ARCHIVE_FILE


class SqliteArchive:
    """The SQLite storage of one archive (implements `ArchiveBackend`).

    An existing database is opened (checked, migrated) at once; a missing one is created by the
    first write only (`prepare` first makes its folder), and until then every read finds nothing.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        report: Report | None = None,
        prepare: Callable[[], object] | None = None,
    ) -> None:
        self.path = Path(path)
        self._report = report
        self._prepare = prepare
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        refuse_odd_files(self.path)
        if os.path.lexists(self.path):
            self._open()

    # ---------------------------------------------------------------- opening

    def _open(self) -> None:
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                raise ArchiveBusy(
                    f"The archive {self.path} is locked by another process; try again later."
                ) from None
            if isinstance(exc, sqlite3.OperationalError) and not _is_corruption(exc):
                raise ArchiveError(f"The archive {self.path} cannot be opened: {exc}.") from None
            self._move_aside(str(exc))
            self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        create_owner_only(self.path)
        refuse_odd_files(self.path)
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA trusted_schema = OFF")  # no SQL from the file runs with our rights
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise ArchiveError(
                    f"The archive {self.path} was made by a newer my-agent (schema {version}, this "
                    f"one knows {SCHEMA_VERSION}); it is left untouched. Upgrade my-agent to use it."
                )
            self._check_objects(db)
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            if version < SCHEMA_VERSION:
                self._migrate(db)
        except BaseException:
            db.close()
            raise
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o600)
        return db

    def _check_objects(self, db: sqlite3.Connection) -> None:
        """A database holding anything we did not create (a trigger, a view, other tables) is not an
        archive made by my-agent: a cloned repository may have planted it."""
        rows = db.execute("SELECT type, name FROM sqlite_master").fetchall()
        names = {str(name) for _, name in rows}
        strange = sorted(
            f"{kind} {name}"
            for kind, name in rows
            if kind in ("trigger", "view")
            or (
                name not in _OWN_OBJECTS
                and name not in _FTS_SHADOW
                and name != _FTS_SHADOW_CONFIG
                and not str(name).startswith("sqlite_autoindex_")
            )
        )
        if strange or (names and "items" not in names):
            raise sqlite3.DatabaseError(
                "it holds objects my-agent did not create (" + ", ".join(strange[:5]) + ")"
            )

    def _migrate(self, db: sqlite3.Connection) -> None:
        with _transaction(db):
            version = int(db.execute("PRAGMA user_version").fetchone()[0])  # re-read under the lock
            for step in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[step]):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {step + 1}")

    def _move_aside(self, reason: str) -> None:
        """Rename the unreadable database (and its side files) out of the way; never delete it."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.getpid()}")
        os.replace(self.path, target)
        for suffix in _SIDE_FILES:
            side = Path(f"{self.path}{suffix}")
            if side.exists() and not side.is_symlink():
                with contextlib.suppress(OSError):
                    os.replace(side, Path(f"{target}{suffix}"))
        message = (
            f"The recall archive {self.path} could not be read ({reason}). It was moved aside to "
            f"{target.name}, and a new, empty archive was started; nothing was deleted. Inspect or "
            "delete the old file yourself."
        )
        logger.error("%s", message)
        if self._report is not None:
            with contextlib.suppress(Exception):
                self._report(message)

    @contextlib.contextmanager
    def _conn(self, *, create: bool = False) -> Iterator[sqlite3.Connection | None]:
        """The open database (opened on first use), or None when there is none yet and `create`
        is false: a reader finds nothing and makes nothing."""
        with self._lock:
            if self._closed:
                raise ArchiveError(f"The archive {self.path} is closed.")
            if self._db is None:
                if not create and not os.path.lexists(self.path):
                    yield None
                    return
                if self._prepare is not None:
                    self._prepare()
                self._open()
            db = self._db
            if db is None:
                raise ArchiveError(f"The archive {self.path} is closed.")
            try:
                yield db
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise ArchiveBusy(
                        f"The archive {self.path} is locked by another process."
                    ) from None
                if not _is_corruption(exc):
                    raise
                self._recover(str(exc))
                raise ArchiveError(f"The archive {self.path} is damaged: {exc}.") from None
            except sqlite3.DatabaseError as exc:
                self._recover(str(exc))
                raise ArchiveError(f"The archive {self.path} is damaged: {exc}.") from None

    def _recover(self, reason: str) -> None:
        """After a corruption error: if the database fails its check, move it aside and start anew."""
        db = self._db
        assert db is not None
        try:
            ok = db.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        except sqlite3.DatabaseError:
            ok = False
        if ok:
            return
        db.close()
        self._db = None
        self._move_aside(reason)
        self._db = self._connect()

    # ---------------------------------------------------------------- ArchiveBackend

    def add(self, item: NewItem) -> str:
        terms = sorted(set(item.body.split()))
        with self._conn(create=True) as opened:
            db = _must(opened)
            with _transaction(db):
                cursor = db.execute(
                    "INSERT INTO items(kind, created, session, text_a, text_b, target, action) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        item.kind,
                        item.created,
                        item.session,
                        item.a,
                        item.b,
                        item.target,
                        item.action,
                    ),
                )
                rowid = cursor.lastrowid
                db.execute("INSERT INTO items_fts(rowid, body) VALUES (?, ?)", (rowid, item.body))
                db.executemany(
                    "INSERT INTO terms(term, df) VALUES (?, 1) "
                    "ON CONFLICT(term) DO UPDATE SET df = df + 1",
                    [(t,) for t in terms],
                )
                db.execute("UPDATE stats SET value = value + 1 WHERE key = 'items'")
        return str(rowid)

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        if not terms:
            return {}, 0
        marks = ",".join("?" * len(terms))
        with self._conn() as db:  # one statement, one snapshot: counts and total agree
            if db is None:
                return {}, 0
            rows = db.execute(
                f"SELECT 0, term, df FROM terms WHERE term IN ({marks}) "
                "UNION ALL SELECT 1, '', value FROM stats WHERE key = 'items'",
                list(terms),
            ).fetchall()
        counts = {str(t): int(df) for total, t, df in rows if not total}
        return counts, next((int(df) for total, _, df in rows if total), 0)

    def prefix_freq(self, prefixes: Sequence[str]) -> dict[str, int]:
        if not prefixes:
            return {}
        query = " UNION ALL ".join(
            ["SELECT ?, coalesce(sum(df), 0) FROM terms WHERE term >= ? AND term < ?"]
            * len(prefixes)
        )  # a range of the primary key: the terms starting with the prefix, no scan
        args = [v for p in prefixes for v in (p, p, p + _LAST_CHAR)]
        with self._conn() as db:
            if db is None:
                return {}
            rows = db.execute(query, args).fetchall()
        return {str(prefix): int(total) for prefix, total in rows}

    def candidates(self, terms: Sequence[str], limit: int) -> list[Candidate]:
        return self._match(_FTS5.any_term(terms), limit) if terms else []

    def search_candidates(
        self, words: Sequence[SearchWord], limit: int, *, every: bool
    ) -> list[Candidate]:
        return self._match(_FTS5.words(words, every=every), limit) if words else []

    def _match(self, match: str, limit: int) -> list[Candidate]:
        with self._conn() as db:  # no join: a lookup per matched row would cost more than the match
            if db is None:
                return []
            rows = db.execute(
                "SELECT rowid, body FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT ?",
                (match, limit),
            ).fetchall()
        return [Candidate(str(rowid), str(body)) for rowid, body in rows]

    def items(self, item_ids: Sequence[str]) -> list[RecallItem]:
        def fetch(ids: list[int]) -> Sequence[Sequence[object]]:
            with self._conn() as db:
                if db is None:
                    return []
                rows: Sequence[Sequence[object]] = db.execute(
                    f"SELECT {_COLUMNS} FROM items WHERE id IN ({','.join('?' * len(ids))})", ids
                ).fetchall()
            return rows

        return items_by_id(item_ids, fetch)

    def containing(self, needle: str, limit: int) -> list[RecallItem]:
        with self._conn() as db:
            if db is None:
                return []
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM items WHERE instr(lower(text_a), lower(?)) > 0 "
                "OR instr(lower(coalesce(text_b, '')), lower(?)) > 0 ORDER BY created DESC LIMIT ?",
                (needle, needle, limit),
            ).fetchall()
        return [item_from_row(row) for row in rows]

    def get(self, item_id: str) -> RecallItem | None:
        rowid = parse_item_id(item_id)
        if rowid is None:
            return None
        with self._conn() as db:
            if db is None:
                return None
            row = db.execute(f"SELECT {_COLUMNS} FROM items WHERE id = ?", (rowid,)).fetchone()
        return item_from_row(row) if row else None

    def list_items(self, limit: int, offset: int, kind: ItemKind | None) -> list[RecallItem]:
        with self._conn() as db:
            if db is None:
                return []
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM items WHERE (? IS NULL OR kind = ?) "
                "ORDER BY created DESC, id DESC LIMIT ? OFFSET ?",
                (kind, kind, limit, offset),
            ).fetchall()
        return [item_from_row(row) for row in rows]

    def items_after(self, item_id: int, limit: int) -> list[tuple[int, str, str, str | None]]:
        """Up to `limit` items with an id above `item_id` as (id, kind, text_a, text_b), oldest
        first: a walk through the whole archive (to give old items their vectors)."""
        with self._conn() as db:
            if db is None:
                return []
            rows = db.execute(
                "SELECT id, kind, text_a, text_b FROM items WHERE id > ? ORDER BY id LIMIT ?",
                (item_id, limit),
            ).fetchall()
        return [(int(i), str(k), str(a), None if b is None else str(b)) for i, k, a, b in rows]

    def session_item_ids(self, session: str) -> set[int]:
        """The ids of the items one chat session archived."""
        with self._conn() as db:
            if db is None:
                return set()
            rows = db.execute("SELECT id FROM items WHERE session = ?", (session,)).fetchall()
        return {int(row[0]) for row in rows}

    def delete(self, item_id: str) -> bool:
        rowid = parse_item_id(item_id)
        if rowid is None:
            return False
        with self._conn() as db:
            if db is None:
                return False
            with _transaction(db):
                row = db.execute("SELECT body FROM items_fts WHERE rowid = ?", (rowid,)).fetchone()
                gone = db.execute("DELETE FROM items WHERE id = ?", (rowid,)).rowcount
                if not gone:
                    return False
                if row is not None:
                    db.execute("DELETE FROM items_fts WHERE rowid = ?", (rowid,))
                    terms = [(t,) for t in sorted(set(str(row[0]).split()))]
                    db.executemany("UPDATE terms SET df = df - 1 WHERE term = ?", terms)
                    db.execute("DELETE FROM terms WHERE df <= 0")
                db.execute("UPDATE stats SET value = max(0, value - 1) WHERE key = 'items'")
        return True

    def count(self) -> int:
        with self._conn() as db:
            if db is None:
                return 0
            return int(db.execute("SELECT count(*) FROM items").fetchone()[0])

    def check(self) -> None:
        """An existing archive was opened and checked when this backend was made; a missing one
        is fine (the first write creates it)."""
        refuse_odd_files(self.path)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None


class ArchiveProvider(IndexedArchiveProvider):
    """The built-in `archive` provider on a workspace folder's SQLite archive."""

    def __init__(
        self,
        folder: Path | str,
        *,
        session_id: str | None = None,
        report: Report | None = None,
        path: Path | str | None = None,
    ) -> None:
        if path is None:
            backend = SqliteArchive(
                archive_path(folder, create=False),
                report=report,
                prepare=lambda: archive_path(folder, create=True),
            )
        else:
            backend = SqliteArchive(path, report=report)
        super().__init__(backend, name="archive", session_id=session_id)
        self.sqlite = backend
        self.path = backend.path


def open_archive(folder: Path | str, *, report: Report | None = None) -> ArchiveProvider:
    """The folder's archive for a person (CLI, Recall view): every session's items are visible."""
    return ArchiveProvider(folder, session_id=None, report=report)


# -------------------------------------------------------------------- helpers

_COLUMNS = "id, kind, created, session, text_a, text_b, target, action"
_LAST_CHAR = "\U0010ffff"  # sorts after every character: "abc" <= term < "abc\U0010ffff" = "abc..."


def _must(db: sqlite3.Connection | None) -> sqlite3.Connection:
    assert db is not None  # opened with create=True
    return db


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_corruption(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text or "corrupt" in text


def create_owner_only(path: Path) -> None:
    """Create the database file, empty and owner-only, unless a file (or link) has its name: SQLite
    would create it readable by others and would follow a link planted there. `O_EXCL|O_NOFOLLOW`
    never opens through a link; what exists is then checked by `refuse_odd_files`."""
    try:
        fd = os.open(path, _CREATE_NEW, 0o600)
    except FileExistsError:
        return
    except OSError as exc:
        raise ArchiveError(
            f"The archive {path} cannot be created: {exc.strerror or exc}."
        ) from None
    os.close(fd)


def refuse_odd_files(path: Path) -> None:
    """The database and its side files must be plain files (or absent), never links or FIFOs: a
    cloned repository could plant either, to aim writes elsewhere or hang the server."""
    for candidate in (path, *(Path(f"{path}{s}") for s in _SIDE_FILES)):
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(
                f"{candidate} is {kind_of(st.st_mode)}, not a plain file; the archive is not opened "
                "through it. Move it away and retry."
            )
