"""The postgres provider against a REAL PostgreSQL server (a throwaway cluster on a unix socket):
the same recall and search ranking as the SQLite archive, CJK, projects kept apart, a versioned
schema migrated forward only, concurrent writers from two processes, and failures that say so: a
wrong host, port, role or database or a malformed DSN is one `my-agent:` line and exit 2 for
`my-agent recall` and `my-agent mcp`; a server stopped mid-session is a tool error, never an empty
result; what a remove took out meanwhile is archived from the journal once the server is back."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, Implementation, TextContent

from my_agent_core.memory.providers import ProviderContext, build_manager
from my_agent_core.memory.providers.indexed import ArchiveError
from my_agent_core.memory.providers.postgres import SCHEMA_VERSION, PostgresProvider
from tests.support.postgres import PgCluster, throwaway_cluster, unavailable
from tests.support.ranking import ARCHIVED as RANKED
from tests.support.ranking import NOT_FOUND, SEARCHES, ranked_as_expected
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


# ------------------------------------------------------------------ a person's searches


@pytest.fixture(scope="module")
def ranked(cluster: PgCluster) -> Iterator[PostgresProvider]:
    dsn = cluster.create_database("ranked")
    writer = PostgresProvider(dsn, "proj", session_id="earlier")
    for user, reply in RANKED:
        writer.sync_turn(user, reply)
    writer.shutdown()
    reader = PostgresProvider(dsn, "proj", session_id="now")
    yield reader
    reader.shutdown()


@pytest.mark.parametrize(("query", "groups"), SEARCHES)
def test_items_holding_every_word_come_first_and_words_match_their_forms(
    ranked: PostgresProvider, query: str, groups: list[list[str]]
) -> None:
    texts = [item.text for item in ranked.search_items(query, 10)]
    assert ranked_as_expected(texts, groups) is None, ranked_as_expected(texts, groups)


@pytest.mark.parametrize(("query", "marker"), NOT_FOUND)
def test_a_word_never_matches_a_shorter_word(
    ranked: PostgresProvider, query: str, marker: str
) -> None:
    assert not any(marker in item.text for item in ranked.search_items(query, 10))


# ------------------------------------------------------------------ failures that say so


def bad_dsns(cluster: PgCluster) -> dict[str, str]:
    socket = cluster.socket_dir
    return {
        "wrong host": "host=/nonexistent/socket/dir dbname=postgres user=test",
        "wrong port": f"host={socket} port=1 dbname=postgres user=test",
        "wrong role": f"host={socket} dbname=postgres user=nobody_here",
        "wrong database": f"host={socket} dbname=no_such_database user=test",
        "malformed": "host=/tmp dbname=x sslmode=sometimes unknown_option=1",
    }


def _env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MY_AGENT_")}
    return clean | extra


def _run(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def _one_line(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.mark.parametrize(
    "case", ["wrong host", "wrong port", "wrong role", "wrong database", "malformed"]
)
def test_recall_against_a_server_it_cannot_use_is_one_line_and_exit_2(
    cluster: PgCluster, tmp_path: Path, case: str
) -> None:
    done = _run(
        "recall", "--provider", "postgres", "staging", "port",
        cwd=tmp_path, env=_env(MY_AGENT_PG_DSN=bad_dsns(cluster)[case]),
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert "PostgreSQL archive" in _one_line(done, "my-agent: ")


def test_recall_against_the_right_server_answers(filled: str, tmp_path: Path) -> None:
    env = _env(MY_AGENT_PG_DSN=filled, MY_AGENT_PG_PROJECT="proj")
    found = _run("recall", "--provider", "postgres", "staging", "port", cwd=tmp_path, env=env)
    assert found.returncode == 0 and "6543" in found.stdout, found.stderr
    nothing = _run("recall", "--provider", "postgres", "zebra", "xylophone", cwd=tmp_path, env=env)
    assert nothing.returncode == 1 and nothing.stderr == ""


@pytest.mark.parametrize("case", ["wrong port", "wrong role", "malformed"])
@pytest.mark.parametrize("how", ["flag", "environment"])
def test_mcp_with_a_server_it_cannot_use_exits_2_at_start(
    cluster: PgCluster, tmp_path: Path, case: str, how: str
) -> None:
    (tmp_path / "ws").mkdir()
    chosen = {"MY_AGENT_MEMORY_PROVIDER": "postgres"} if how == "environment" else {}
    flag = ["--provider", "postgres"] if how == "flag" else []
    done = _run(
        "mcp", *flag, cwd=tmp_path / "ws",
        env=_env(MY_AGENT_PG_DSN=bad_dsns(cluster)[case], **chosen),
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert "cannot be used" in _one_line(done, "my-agent mcp: ")
    assert list((tmp_path / "ws").iterdir()) == []


def _params(workspace: Path, dsn: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "my_agent_core", "mcp"],
        cwd=str(workspace),
        env={  # what an MCP client's `env` block passes
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
            "MY_AGENT_MEMORY_PROVIDER": "postgres",
            "MY_AGENT_PG_DSN": dsn,
            "MY_AGENT_PG_PROJECT": "team",
        },
    )


@asynccontextmanager
async def mcp_session(workspace: Path, dsn: str) -> AsyncIterator[Client]:
    async with Client(
        _params(workspace, dsn),
        client_info=Implementation(name="pg-test", version="1"),
        mode="legacy",
        read_timeout_seconds=60,
    ) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


async def memory(client: Client, action: str, **fields: str) -> CallToolResult:
    return await client.call_tool("memory", {"target": "memory", "action": action, **fields})


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    """A cluster this test may stop and start."""
    with throwaway_cluster() as running:
        yield running


LOST = "The billing worker parks failed invoices in dead_letters after three retries."
ALSO = "Staging deploys go through the staging-eu Helm release."
LATER = "The nightly export writes parquet files to s3://exports-nightly."


async def test_a_server_lost_mid_session_is_a_tool_error_and_removals_catch_up(
    own_cluster: PgCluster, tmp_path: Path
) -> None:
    dsn = own_cluster.dsn()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    backlog = workspace / ".my_agent_core" / "archive" / "unarchived.json"
    async with mcp_session(workspace, dsn) as client:
        for entry in (LOST, ALSO, LATER):
            assert not (await memory(client, "add", content=entry)).is_error
        none = await client.call_tool("memory_search", {"query": "dead_letters invoices"})
        assert not none.is_error and "No archived item matches" in text_of(none)

        own_cluster.stop()
        failed = await client.call_tool("memory_search", {"query": "dead_letters invoices"})
        assert failed.is_error, "a lost server is an error, never an empty result"
        assert "could not be searched" in text_of(failed) and "PostgreSQL" in text_of(failed)
        removed = await memory(client, "remove", old_text="dead_letters")
        assert not removed.is_error, "memory itself is changed while the archive is down"
        assert "Removed" in text_of(removed) or "removed" in text_of(removed)
        assert "could not take what this change removed" in text_of(removed)
        assert json.loads(backlog.read_text())["records"], "the journal record waits"

        own_cluster.start()
        assert not (await memory(client, "remove", old_text="staging-eu")).is_error
        found = await client.call_tool("memory_search", {"query": "dead_letters invoices"})
        assert not found.is_error and LOST in text_of(found), text_of(found)
        assert "removed from MEMORY.md (remove)" in text_of(found)
        assert not backlog.exists(), "caught up: nothing waits any more"

        # a remove made by a process that ends while the server is down ...
        own_cluster.stop()
        assert not (await memory(client, "remove", old_text="parquet")).is_error
    assert backlog.exists()
    own_cluster.start()
    async with mcp_session(workspace, dsn) as client:  # ... is archived by the next one to start
        for _ in range(50):
            found = await client.call_tool("memory_search", {"query": "parquet exports nightly"})
            if LATER in text_of(found):
                break
        assert LATER in text_of(found) and not found.is_error
    assert not backlog.exists()
    import psycopg

    with psycopg.connect(dsn) as db:  # each removed entry archived exactly once
        rows = db.execute("SELECT text_a FROM my_agent_items WHERE kind = 'memory'").fetchall()
    assert sorted(text for (text,) in rows) == sorted([LOST, ALSO, LATER])
