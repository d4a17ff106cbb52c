"""The postgres provider against a REAL PostgreSQL server (a throwaway cluster on a unix socket):
the same recall as the SQLite archive, CJK, projects kept apart, a versioned schema migrated forward
only, concurrent writers from two processes, and a server that is down reported once."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from my_agent_core.memory.providers import ProviderContext, build_manager
from my_agent_core.memory.providers.indexed import ArchiveError
from my_agent_core.memory.providers.postgres import SCHEMA_VERSION, PostgresProvider
from tests.support.postgres import PgCluster, throwaway_cluster, unavailable
from tests.support.recall_corpus import RELATED, REMOVED, TURNS, UNRELATED

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))

_names = itertools.count()


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    with throwaway_cluster() as running:
        yield running


@pytest.fixture
def dsn(cluster: PgCluster) -> str:
    return cluster.create_database(f"t{next(_names)}")


@pytest.fixture(scope="module")
def filled(cluster: PgCluster) -> str:
    dsn = cluster.create_database("filled")
    writer = PostgresProvider(dsn, "proj", session_id="earlier")
    for user, reply in TURNS:
        writer.sync_turn(user, reply)
    for target, action, before, after in REMOVED:
        writer.on_memory_write(target, action, before, after)
    writer.shutdown()
    return dsn


@pytest.fixture
def team(filled: str) -> Iterator[PostgresProvider]:
    provider = PostgresProvider(filled, "proj", session_id="now")
    yield provider
    provider.shutdown()


@pytest.mark.parametrize("message", UNRELATED)
def test_ordinary_messages_recall_nothing(team: PostgresProvider, message: str) -> None:
    assert team.prefetch_items(message) == []


@pytest.mark.parametrize(("message", "expected"), RELATED)
def test_a_message_about_an_archived_fact_recalls_it(
    team: PostgresProvider, message: str, expected: str
) -> None:
    items = team.prefetch_items(message)
    assert items and expected in items[0].text


@pytest.mark.parametrize(
    ("query", "expected"),
    [("数据库", "DB_PASS"), ("解析", "解析器"), ("库", "Zustand"), ("db", "6543"), ("CI", "Kafka")],
)
def test_chinese_and_short_queries(team: PostgresProvider, query: str, expected: str) -> None:
    assert any(expected in hit["text"] for hit in team.search(query, 5))


def test_projects_are_kept_apart(filled: str) -> None:
    other = PostgresProvider(filled, "another-project")
    try:
        assert other.search("staging port 6543", 5) == []
        assert other.prefetch_items("what port does the staging database use again?") == []
        other.sync_turn("Where do builds go?", "Artifacts go to the s3 bucket builds-prod.")
        assert other.search("artifacts bucket", 5)
    finally:
        other.shutdown()
    mine = PostgresProvider(filled, "proj")
    try:
        assert mine.search("artifacts bucket", 5) == []
    finally:
        mine.shutdown()


def test_delete_keeps_term_counts_exact(dsn: str) -> None:
    import psycopg

    provider = PostgresProvider(dsn, "p")
    try:
        for user, reply in TURNS[:8]:
            provider.sync_turn(user, reply)
        for item in provider.list_items(limit=3):
            assert provider.delete(item.id)
        assert provider.delete("999999") is False and provider.get("x'; DROP TABLE x") is None
    finally:
        provider.shutdown()
    with psycopg.connect(dsn) as db:
        recount: dict[str, int] = {}
        for (body,) in db.execute("SELECT body FROM my_agent_items WHERE project = 'p'"):
            for term in set(body.split()):
                recount[term] = recount.get(term, 0) + 1
        stored: dict[str, int] = dict(
            db.execute("SELECT term, df FROM my_agent_terms WHERE project = 'p'")
        )
        count = db.execute("SELECT items FROM my_agent_counts WHERE project = 'p'").fetchone()
    assert stored == recount and count == (5,)


def test_the_schema_is_versioned_and_forward_only(dsn: str) -> None:
    import psycopg

    provider = PostgresProvider(dsn, "p")
    provider.sync_turn("first use", "creates the schema")
    provider.shutdown()
    with psycopg.connect(dsn, autocommit=True) as db:
        versions = [v for (v,) in db.execute("SELECT version FROM my_agent_schema_version")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        indexes = {n for (n,) in db.execute("SELECT indexname FROM pg_indexes")}
        assert "my_agent_items_tokens" in indexes
        db.execute("INSERT INTO my_agent_schema_version VALUES (%s)", (SCHEMA_VERSION + 1,))
    newer = PostgresProvider(dsn, "p")
    with pytest.raises(ArchiveError, match="newer my-agent"):
        newer.sync_turn("refused", "left untouched")
    newer.shutdown()
    with psycopg.connect(dsn) as db:
        assert db.execute("SELECT count(*) FROM my_agent_items").fetchone() == (1,)


WRITER = textwrap.dedent(
    """
    import sys
    from my_agent_core.memory.providers.postgres import PostgresProvider
    provider = PostgresProvider(sys.argv[1], "team", session_id=sys.argv[2])
    for n in range(30):
        provider.sync_turn(f"{sys.argv[2]} asks about shared widgets {n}", "widgets 数据库 answer")
    provider.shutdown()
    sys.exit(3 if provider.pending else 0)
    """
)


def test_two_machines_write_the_same_project(dsn: str) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, dsn, name]) for name in ("alice", "bob")
    ]
    assert [w.wait(timeout=240) for w in writers] == [0, 0]
    reader = PostgresProvider(dsn, "team")
    try:
        items = reader.list_items(limit=1000)
        assert len(items) == 60
        assert reader.backend.doc_freq(["widgets", "数据"]) == ({"widgets": 60, "数据": 60}, 60)
    finally:
        reader.shutdown()


def test_a_server_that_is_down_is_reported_once_per_outage(tmp_path: Path) -> None:
    """Unreachable is not broken: each call tries again (a restarted server is used at once), and
    the chat hears about the outage once."""
    errors: list[str] = []
    settings = {"provider": "postgres", "postgresDsn": f"host={tmp_path} dbname=nothing"}
    manager = build_manager(
        ProviderContext(tmp_path, settings=settings),
        on_error=lambda _name, message: errors.append(message),
    )
    assert manager.active, "the connection is made on first use, not at session start"
    assert manager.recall("what port does the staging database use?") == ""
    manager.sync_turn("a", "b")
    assert manager.active and manager.broken is None and len(errors) == 1
    assert "Cannot connect to the PostgreSQL archive" in errors[0] and "unavailable" in errors[0]
    manager.shutdown()


def test_a_missing_dsn_says_how_to_set_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_AGENT_PG_DSN", raising=False)
    errors: list[str] = []
    manager = build_manager(
        ProviderContext(tmp_path, settings={"provider": "postgres"}),
        on_error=lambda _name, message: errors.append(message),
    )
    assert not manager.active and "MY_AGENT_PG_DSN" in errors[0]
