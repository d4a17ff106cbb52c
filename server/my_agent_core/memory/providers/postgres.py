"""`postgres`: the archive in PostgreSQL full-text search, so a team shares recall across machines.

Same items, same terms and the same relevance bar as the SQLite archive (`indexed.py`); each row
carries a `project` key (the folder's name unless set), so one database serves many folders. The
index text is turned into a `tsvector` with `array_to_tsvector`, so PostgreSQL indexes exactly the
archive's terms (CJK pairs included) whatever its text-search configuration, in a GIN index.

The connection is opened, and the schema created or migrated (forward only, under an advisory lock,
versioned in `my_agent_schema_version`), on first use on the manager's worker thread: a slow or
unreachable server delays no session start and is bounded by the hook time limit. A front end that
must not start with a bad configuration (`my-agent mcp`, `my-agent recall`) calls `check()` first. A
server that cannot be reached is `ArchiveUnavailable`: that call fails, the next one connects again. Requires the
`postgres` extra (`pip install 'my-agent-core[postgres]'`, psycopg 3).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from my_agent_core.memory.providers.indexed import (
    ArchiveBusy,
    ArchiveError,
    ArchiveUnavailable,
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

if TYPE_CHECKING:
    import psycopg

    from my_agent_core.memory.providers.registry import ProviderContext

__all__ = [
    "DSN_ENV",
    "PROJECT_ENV",
    "SCHEMA_VERSION",
    "PostgresArchive",
    "PostgresProvider",
]

DSN_ENV = "MY_AGENT_PG_DSN"
PROJECT_ENV = "MY_AGENT_PG_PROJECT"
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_MS = 1500  # below the manager's 2 s hook limit
_LOCK_KEY = 7_270_414_221  # pg_advisory_xact_lock key for schema changes
#: tsquery: `'word'`, `'prefix':*`, &, |.
_TSQUERY = MatchSyntax(term="'{}'", prefix="'{}':*", both=" & ", either=" | ")

# Forward-only migrations: MIGRATIONS[n] takes the schema from version n to n + 1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE my_agent_items (
        id bigserial PRIMARY KEY,
        project text NOT NULL,
        kind text NOT NULL,
        created double precision NOT NULL,
        session text,
        text_a text NOT NULL,
        text_b text,
        target text,
        action text,
        body text NOT NULL,
        tokens tsvector NOT NULL
    );
    CREATE INDEX my_agent_items_tokens ON my_agent_items USING GIN (tokens);
    CREATE INDEX my_agent_items_project_created ON my_agent_items (project, created DESC);
    CREATE TABLE my_agent_terms (
        project text NOT NULL,
        term text NOT NULL,
        df integer NOT NULL,
        PRIMARY KEY (project, term)
    );
    CREATE TABLE my_agent_counts (project text PRIMARY KEY, items bigint NOT NULL);
    """,
    # 2: the terms in code-point order, so "the terms starting with test" is a range of an index
    # whatever the database's collation (a search word matches its other forms by prefix).
    """
    CREATE INDEX my_agent_terms_prefix ON my_agent_terms (project, (term COLLATE "C"));
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)

_COLUMNS = "id, kind, created, session, text_a, text_b, target, action"


class PostgresArchive:
    """The PostgreSQL storage of a team archive, one `project` of it (implements `ArchiveBackend`)."""

    def __init__(self, dsn: str, project: str) -> None:
        if not dsn.strip():
            raise ArchiveError(
                f"The postgres memory provider needs a DSN: set {DSN_ENV} or "
                "myAgent.memory.postgresDsn (e.g. postgresql://user@host/dbname)."
            )
        if not project.strip():
            raise ArchiveError("The postgres memory provider needs a non-empty project key.")
        try:
            import psycopg  # noqa: F401  (here: an optional dependency, the `postgres` extra)
        except ImportError:
            raise ArchiveError(
                "The postgres memory provider needs psycopg 3: pip install 'my-agent-core[postgres]'."
            ) from None
        self.dsn = dsn
        self.project = project
        self._lock = threading.Lock()
        self._db: psycopg.Connection[tuple[object, ...]] | None = None

    # ---------------------------------------------------------------- connection and schema

    def _connect(self) -> psycopg.Connection[tuple[object, ...]]:
        import psycopg  # here: the optional dependency (see __init__)

        try:
            db = psycopg.connect(self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.OperationalError as exc:  # down, wrong host, port, role or database
            raise ArchiveUnavailable(
                f"Cannot connect to the PostgreSQL archive: {_first_line(exc)}"
            ) from None
        except psycopg.Error as exc:  # a malformed DSN: no retry will help
            raise ArchiveError(
                f"Cannot connect to the PostgreSQL archive: {_first_line(exc)} (check "
                f"{DSN_ENV} or myAgent.memory.postgresDsn)"
            ) from None
        try:
            db.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
            db.execute(f"SET lock_timeout = {STATEMENT_TIMEOUT_MS}")
            self._migrate(db)
        except BaseException:
            db.close()
            raise
        return db

    def _migrate(self, db: psycopg.Connection[tuple[object, ...]]) -> None:
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            db.execute(
                "CREATE TABLE IF NOT EXISTS my_agent_schema_version (version integer NOT NULL)"
            )
            row = db.execute("SELECT max(version) FROM my_agent_schema_version").fetchone()
            version = int(row[0]) if row and row[0] is not None else 0  # type: ignore[call-overload]
            if version > SCHEMA_VERSION:
                raise ArchiveError(
                    f"The PostgreSQL archive has schema {version}, made by a newer my-agent (this one "
                    f"knows {SCHEMA_VERSION}); it is left untouched. Upgrade my-agent to use it."
                )
            for step in range(version, SCHEMA_VERSION):
                db.execute(MIGRATIONS[step])
                db.execute("INSERT INTO my_agent_schema_version(version) VALUES (%s)", (step + 1,))

    @contextlib.contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        import psycopg  # here: the optional dependency (see __init__)

        with self._lock:
            if self._db is None or self._db.closed:
                self._db = self._connect()
            try:
                yield self._db
            except psycopg.errors.QueryCanceled:
                raise ArchiveBusy("The PostgreSQL archive did not answer in time.") from None
            except psycopg.errors.LockNotAvailable:
                raise ArchiveBusy("The PostgreSQL archive is locked by another writer.") from None
            except psycopg.OperationalError as exc:
                with contextlib.suppress(Exception):
                    self._db.close()
                self._db = None  # reconnect on the next call
                raise ArchiveUnavailable(
                    f"The connection to the PostgreSQL archive was lost: {_first_line(exc)}"
                ) from None

    # ---------------------------------------------------------------- ArchiveBackend

    def add(self, item: NewItem) -> str:
        terms = sorted(set(item.body.split()))  # one lock order for every writer: no deadlocks
        with self._conn() as db, db.transaction():
            row = db.execute(
                "INSERT INTO my_agent_items(project, kind, created, session, text_a, text_b, target, "
                "action, body, tokens) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "array_to_tsvector(%s::text[])) RETURNING id",
                (
                    self.project,
                    item.kind,
                    item.created,
                    item.session,
                    item.a,
                    item.b,
                    item.target,
                    item.action,
                    item.body,
                    terms,
                ),
            ).fetchone()
            db.execute(
                "INSERT INTO my_agent_terms(project, term, df) SELECT %s, t, 1 FROM unnest(%s::text[]) "
                "AS t ON CONFLICT (project, term) DO UPDATE SET df = my_agent_terms.df + 1",
                (self.project, terms),
            )
            db.execute(
                "INSERT INTO my_agent_counts(project, items) VALUES (%s, 1) ON CONFLICT (project) "
                "DO UPDATE SET items = my_agent_counts.items + 1",
                (self.project,),
            )
        assert row is not None
        return str(row[0])

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        if not terms:
            return {}, 0
        with self._conn() as db:
            rows = db.execute(
                "SELECT term, df FROM my_agent_terms WHERE project = %s AND term = ANY(%s::text[])",
                (self.project, list(terms)),
            ).fetchall()
            count = db.execute(
                "SELECT items FROM my_agent_counts WHERE project = %s", (self.project,)
            ).fetchone()
        return {str(t): _int(df) for t, df in rows}, _int(count[0]) if count else 0

    def prefix_freq(self, prefixes: Sequence[str]) -> dict[str, int]:
        if not prefixes:
            return {}
        with self._conn() as db:
            rows = db.execute(
                "SELECT p, coalesce(sum(t.df), 0) FROM unnest(%s::text[]) AS p "
                "LEFT JOIN my_agent_terms t ON t.project = %s "
                'AND t.term COLLATE "C" >= p AND t.term COLLATE "C" < p || chr(1114111) '
                "GROUP BY p",
                (list(prefixes), self.project),
            ).fetchall()
        return {str(prefix): _int(total) for prefix, total in rows}

    def candidates(self, terms: Sequence[str], limit: int) -> list[Candidate]:
        return self._match(_TSQUERY.any_term(terms), limit) if terms else []

    def search_candidates(
        self, words: Sequence[SearchWord], limit: int, *, every: bool
    ) -> list[Candidate]:
        return self._match(_TSQUERY.words(words, every=every), limit) if words else []

    def _match(self, query: str, limit: int) -> list[Candidate]:
        with self._conn() as db:
            rows = db.execute(
                "SELECT id, body FROM my_agent_items, CAST(%s AS tsquery) AS q "
                "WHERE project = %s AND tokens @@ q "
                "ORDER BY ts_rank(tokens, q) DESC, created DESC LIMIT %s",
                (query, self.project, limit),
            ).fetchall()
        return [Candidate(str(item_id), str(body)) for item_id, body in rows]

    def items(self, item_ids: Sequence[str]) -> list[RecallItem]:
        def fetch(ids: list[int]) -> Sequence[Sequence[object]]:
            with self._conn() as db:
                rows: Sequence[Sequence[object]] = db.execute(
                    f"SELECT {_COLUMNS} FROM my_agent_items WHERE project = %s AND id = ANY(%s)",
                    (self.project, ids),
                ).fetchall()
            return rows

        return items_by_id(item_ids, fetch)

    def containing(self, needle: str, limit: int) -> list[RecallItem]:
        with self._conn() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM my_agent_items WHERE project = %s AND "
                "(strpos(lower(text_a), lower(%s)) > 0 OR strpos(lower(coalesce(text_b, '')), "
                "lower(%s)) > 0) ORDER BY created DESC LIMIT %s",
                (self.project, needle, needle, limit),
            ).fetchall()
        return [item_from_row(row) for row in rows]

    def get(self, item_id: str) -> RecallItem | None:
        rowid = parse_item_id(item_id)
        if rowid is None:
            return None
        with self._conn() as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM my_agent_items WHERE project = %s AND id = %s",
                (self.project, rowid),
            ).fetchone()
        return item_from_row(row) if row else None

    def list_items(self, limit: int, offset: int, kind: ItemKind | None) -> list[RecallItem]:
        with self._conn() as db:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM my_agent_items WHERE project = %s "
                "AND (%s::text IS NULL OR kind = %s) ORDER BY created DESC, id DESC "
                "LIMIT %s OFFSET %s",
                (self.project, kind, kind, limit, offset),
            ).fetchall()
        return [item_from_row(row) for row in rows]

    def delete(self, item_id: str) -> bool:
        rowid = parse_item_id(item_id)
        if rowid is None:
            return False
        with self._conn() as db, db.transaction():
            row = db.execute(
                "DELETE FROM my_agent_items WHERE project = %s AND id = %s RETURNING body",
                (self.project, rowid),
            ).fetchone()
            if row is None:
                return False
            terms = sorted(set(str(row[0]).split()))
            db.execute(
                "UPDATE my_agent_terms SET df = df - 1 WHERE project = %s AND term = ANY(%s::text[])",
                (self.project, terms),
            )
            db.execute("DELETE FROM my_agent_terms WHERE project = %s AND df <= 0", (self.project,))
            db.execute(
                "UPDATE my_agent_counts SET items = greatest(0, items - 1) WHERE project = %s",
                (self.project,),
            )
        return True

    def check(self) -> None:
        """Connect (and create or migrate the schema) now: a wrong host, port, role or database or
        a malformed DSN is an `ArchiveError` here, not an empty answer later."""
        with self._conn():
            pass

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(Exception):
                    self._db.close()
                self._db = None


class PostgresProvider(IndexedArchiveProvider):
    """The `postgres` provider: a team archive in PostgreSQL, one project of it."""

    def __init__(self, dsn: str, project: str, *, session_id: str | None = None) -> None:
        super().__init__(PostgresArchive(dsn, project), name="postgres", session_id=session_id)

    @classmethod
    def from_context(cls, context: ProviderContext) -> PostgresProvider:
        """DSN: `postgresDsn` setting, else MY_AGENT_PG_DSN; project: `postgresProject` setting,
        else MY_AGENT_PG_PROJECT, else the folder's name."""
        settings: Mapping[str, object] = context.settings
        dsn = _text(settings.get("postgresDsn")) or os.environ.get(DSN_ENV, "")
        project = (
            _text(settings.get("postgresProject"))
            or os.environ.get(PROJECT_ENV, "")
            or Path(context.folder).absolute().name
        )
        return cls(dsn, project, session_id=context.session_id)


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line.removeprefix("connection is bad: ")
