"""`myAgent/recall/search|get|delete` over a real server, on archives seeded through the real store
(a replace or remove archives the entry) and real chat-turn hooks: the SQLite archive (default), a
provider set to none or broken, PostgreSQL through a throwaway cluster, untrusted folders (never
opened), the memory tool's removals archived, one provider per folder closed when the folder goes.
In process: a plug-in provider without get/delete, a provider that hangs, shutdown."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from tests.lsp.conftest import make_folder, request, start_server, stop_server, wait_until
from tests.support.postgres import PgCluster, throwaway_cluster, unavailable

from my_agent_core.lsp import recall_service
from my_agent_core.lsp.folders import FolderState
from my_agent_core.lsp.params import RequestError
from my_agent_core.lsp.recall_service import (
    GET_TEXT_CHARS,
    PROVIDER_FAILED,
    SEARCH_TEXT_CHARS,
    RecallService,
    item_json,
)
from my_agent_core.lsp.server import build_server
from my_agent_core.memory import open_store
from my_agent_core.memory.providers import MemoryProvider, ProviderContext, build_manager
from my_agent_core.memory.providers.archive import archive_path
from my_agent_core.memory.providers.items import RecallItem, SearchHit

ON_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
SEARCH, GET, DELETE, TOOL = (
    "myAgent/recall/search",
    "myAgent/recall/get",
    "myAgent/recall/delete",
    "myAgent/memory/tool",
)
OLD_PORT = "The staging database listens on port 6543 on db-stg-2."
NEW_PORT = "Staging moved to db-stg-3, port 6544, since the March migration."
RELEASE = ("How do we release the mobile app?", "Fastlane lanes beta and release trigger uploads.")
LONG_WORD = "zebrafishmarker"


def seed(folder: Path, settings: dict[str, object] | None = None) -> None:
    """Archive through the real hooks: the store's write listener and a finished turn."""
    manager = build_manager(ProviderContext(folder, session_id="earlier", settings=settings or {}))
    assert manager.active, manager.broken
    store = open_store(folder, on_write=manager.memory_write_listener())
    store.add("memory", OLD_PORT)
    store.replace("memory", "staging database", NEW_PORT)  # the old entry goes to the archive
    store.remove("memory", "db-stg-3")  # and so does the new one
    manager.sync_turn(*RELEASE)
    manager.sync_turn(f"Paste of a long log {LONG_WORD}", "line of output\n" * 800)
    manager.shutdown()
    store.close()


def open_fds(client: LanguageClient, path: Path) -> int:
    """How many descriptors of the server process point at `path` (or its WAL side files)."""
    pid = client._server.pid  # type: ignore[union-attr]
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        count += target.startswith(str(path))
    return count


async def error_of(client: LanguageClient, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await request(client, method, params)
    return caught.value


# ------------------------------------------------------------------------- the default archive


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recall")


@pytest.fixture(scope="module")
def folders(base: Path) -> dict[str, Path]:
    made = {name: make_folder(base, name, memory="") for name in ("arch", "fresh", "closing")}
    made["untrusted"] = make_folder(base, "untrusted", memory="")
    made["linked"] = make_folder(base, "linked", memory="")
    (base / "elsewhere").mkdir()
    (made["linked"] / ".my_agent_core" / "archive").symlink_to(base / "elsewhere")
    seed(made["arch"])
    seed(made["closing"])
    seed(made["untrusted"])  # a cloned repository may ship one: it must not even be opened
    return made


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(folders: dict[str, Path]) -> AsyncIterator[LanguageClient]:
    c = await start_server(
        [folders[n] for n in ("arch", "fresh", "closing", "untrusted", "linked")],
        init_options={"untrustedFolders": [folders["untrusted"].as_uri()]},
    )
    yield c
    await stop_server(c)


async def search(client: LanguageClient, folder: Path, query: str, **extra: Any) -> Any:
    return await request(client, SEARCH, {"folder": folder.as_uri(), "query": query, **extra})


@ON_MODULE_LOOP
async def test_search_finds_entries_taken_out_of_memory_and_past_turns(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    found = await search(client, folders["arch"], "staging database port")
    assert found["provider"] == "archive"
    by_text = {item["text"]: item for item in found["items"]}
    replaced, removed = by_text[OLD_PORT], by_text[NEW_PORT]
    assert (
        replaced["kind"] == "replaced" and replaced["source"] == "removed from MEMORY.md (replace)"
    )
    assert removed["kind"] == "removed" and removed["source"] == "removed from MEMORY.md (remove)"
    for item in (replaced, removed):
        assert isinstance(item["id"], str) and item["id"]
        assert isinstance(item["time"], float) and item["time"] > 1_600_000_000
        assert item["score"] > 0
    turns = await search(client, folders["arch"], "fastlane mobile release")
    turn = turns["items"][0]
    assert turn["kind"] == "turn" and turn["source"] == "turn"
    assert turn["text"] == f"user: {RELEASE[0]}\nassistant: {RELEASE[1]}"
    limited = await search(client, folders["arch"], "staging port", limit=1)
    assert len(limited["items"]) == 1
    assert (await search(client, folders["arch"], "kubernetes helm"))["items"] == []


@ON_MODULE_LOOP
async def test_long_items_are_cut_in_a_search_and_whole_in_get(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    item = (await search(client, folders["arch"], LONG_WORD))["items"][0]
    assert len(item["text"]) < SEARCH_TEXT_CHARS + 100
    assert item["text"].endswith("more characters; open the item to read it all]")
    whole = (await request(client, GET, {"folder": folders["arch"].as_uri(), "id": item["id"]}))[
        "item"
    ]
    assert len(whole["text"]) > SEARCH_TEXT_CHARS and "[cut:" not in whole["text"]
    assert whole["text"].count("line of output") == 800
    assert len(whole["text"]) <= GET_TEXT_CHARS
    same = ("id", "kind", "time", "source")
    assert {k: whole[k] for k in same} == {k: item[k] for k in same}
    assert whole["score"] == 0.0  # fetched, not ranked


@ON_MODULE_LOOP
async def test_get_and_delete_and_unknown_ids(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    uri = folders["arch"].as_uri()
    item = (await search(client, folders["arch"], "db-stg-2"))["items"][0]
    assert item["text"] == OLD_PORT
    got = (await request(client, GET, {"folder": uri, "id": int(item["id"])}))["item"]  # a number
    assert got["text"] == OLD_PORT and got["kind"] == "replaced"
    assert await request(client, DELETE, {"folder": uri, "id": item["id"]}) == {}
    after = await search(client, folders["arch"], "staging database port")
    assert OLD_PORT not in [i["text"] for i in after["items"]]
    assert NEW_PORT in [i["text"] for i in after["items"]]  # only that one item went
    for method in (GET, DELETE):
        gone = await error_of(client, method, {"folder": uri, "id": item["id"]})
        assert gone.code == -32602 and "no archived item" in str(gone)
    for junk in ("999999999", "abc", "../../etc/passwd", "1; DROP TABLE items", "-1", "1.5"):
        unknown = await error_of(client, GET, {"folder": uri, "id": junk})
        assert unknown.code == -32602 and "no archived item" in str(unknown), junk


@ON_MODULE_LOOP
@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        (SEARCH, {}, "`query` is required"),
        (SEARCH, {"query": "   "}, "`query` must not be empty"),
        (SEARCH, {"query": 5}, "`query` must be a string"),
        (SEARCH, {"query": "x" * 2001}, "`query` is too long"),
        (SEARCH, {"query": "db", "limit": 0}, "`limit` must be between 1 and 100"),
        (SEARCH, {"query": "db", "limit": 101}, "`limit` must be between 1 and 100"),
        (SEARCH, {"query": "db", "limit": 2.5}, "`limit` must be an integer"),
        (SEARCH, {"query": "db", "limit": True}, "`limit` must be an integer"),
        (SEARCH, {"query": "db", "folder": "file:///not/open"}, "unknown workspace folder"),
        (GET, {}, "`id` is required"),
        (GET, {"id": ""}, "`id` must not be empty"),
        (GET, {"id": "9" * 201}, "`id` is too long"),
        (GET, {"id": ["1"]}, "`id` must be a string"),
        (DELETE, {"id": None}, "`id` is required"),
        (DELETE, {"id": {"$gt": 0}}, "`id` must be a string"),
    ],
)
async def test_malformed_params_are_invalid_params(
    client: LanguageClient, method: str, params: dict[str, Any], message: str
) -> None:
    error = await error_of(client, method, params)
    assert error.code == -32602 and message in str(error)


@ON_MODULE_LOOP
async def test_looking_never_creates_an_archive(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    fresh = folders["fresh"]
    assert await search(client, fresh, "staging port") == {"provider": "archive", "items": []}
    error = await error_of(client, GET, {"folder": fresh.as_uri(), "id": "1"})
    assert error.code == -32602 and "no archived item" in str(error)
    assert not (fresh / ".my_agent_core" / "archive").exists()


@ON_MODULE_LOOP
async def test_an_untrusted_folders_archive_is_never_opened(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    untrusted = folders["untrusted"]
    assert await search(client, untrusted, "staging port") == {"provider": None, "items": []}
    for method in (GET, DELETE):
        error = await error_of(client, method, {"folder": untrusted.as_uri(), "id": "1"})
        assert error.code == -32602 and "not trusted" in str(error)
    assert open_fds(client, archive_path(untrusted, create=False).parent) == 0


@ON_MODULE_LOOP
async def test_what_the_memory_tool_takes_out_of_memory_is_archived(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    fresh = folders["fresh"]
    entry = "Deploys go through the blue-green switch in ops/switch.sh on Fridays."
    for arguments in (
        {"target": "memory", "action": "add", "content": entry},
        {"target": "memory", "action": "remove", "old_text": "blue-green"},
    ):
        result = await request(client, TOOL, {"folder": fresh.as_uri(), "arguments": arguments})
        assert result["ok"] is True, result
    found = await search(client, fresh, "blue-green switch deploys")
    assert [(i["text"], i["kind"]) for i in found["items"]] == [(entry, "removed")]


@ON_MODULE_LOOP
async def test_an_archive_folder_that_is_a_link_is_refused(
    client: LanguageClient, folders: dict[str, Path], base: Path
) -> None:
    linked = folders["linked"]
    error = await error_of(client, SEARCH, {"folder": linked.as_uri(), "query": "staging"})
    assert error.code == PROVIDER_FAILED and "is a link or not a folder" in str(error)
    for arguments in (
        {"target": "memory", "action": "add", "content": "A fact to be removed again."},
        {"target": "memory", "action": "remove", "old_text": "removed again"},
    ):
        result = await request(client, TOOL, {"folder": linked.as_uri(), "arguments": arguments})
        assert result["ok"] is True, result  # the edit stands; only its archiving is refused
    assert list((base / "elsewhere").iterdir()) == []


@ON_MODULE_LOOP
async def test_a_removed_folder_closes_its_provider(
    client: LanguageClient, folders: dict[str, Path]
) -> None:
    closing = folders["closing"]
    assert (await search(client, closing, "staging port"))["items"]
    archive_dir = archive_path(closing, create=False).parent
    assert open_fds(client, archive_dir) > 0  # one provider, open
    await search(client, closing, "fastlane")
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[], removed=[types.WorkspaceFolder(uri=closing.as_uri(), name=closing.name)]
            )
        )
    )
    await wait_until(lambda: open_fds(client, archive_dir) == 0)
    error = await error_of(client, SEARCH, {"folder": closing.as_uri(), "query": "staging"})
    assert error.code == -32602 and "unknown workspace folder" in str(error)


# --------------------------------------------------------------------- settings: none, broken


async def test_provider_none_and_broken_providers(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "ws", memory="")
    seed(folder)
    c = await start_server([folder], init_options={"memory": {"provider": "none"}})
    try:
        assert await search(c, folder, "staging port") == {"provider": None, "items": []}
        error = await error_of(c, GET, {"folder": folder.as_uri(), "id": "1"})
        assert error.code == -32602 and "recall is off" in str(error)
        assert open_fds(c, archive_path(folder, create=False).parent) == 0

        async def switch(memory: dict[str, Any], expect: Any) -> Any:
            c.set_configuration({"memory": memory}, section="myAgent")
            c.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
            outcome: list[Any] = []

            async def attempt() -> bool:
                try:
                    outcome[:] = [await search(c, folder, "staging port")]
                except JsonRpcException as exc:
                    outcome[:] = [exc]
                return expect(outcome[0])

            for _ in range(200):
                if await attempt():
                    return outcome[0]
                await asyncio.sleep(0.05)
            raise AssertionError(f"the setting did not apply: {outcome}")

        on = await switch({"provider": "archive"}, lambda r: isinstance(r, dict) and r["items"])
        assert on["provider"] == "archive"
        unknown = await switch({"provider": "nosuch"}, lambda r: isinstance(r, JsonRpcException))
        assert unknown.code == PROVIDER_FAILED and "Unknown memory provider 'nosuch'" in str(
            unknown
        )
        down = await switch(
            {"provider": "postgres", "postgresDsn": f"host={tmp_path}/no-socket dbname=x"},
            lambda r: isinstance(r, JsonRpcException) and "'postgres' failed" in str(r),
        )
        assert down.code == PROVIDER_FAILED and "The memory provider 'postgres' failed" in str(down)
        await wait_until(lambda: open_fds(c, archive_path(folder, create=False).parent) == 0)
    finally:
        await stop_server(c)


# --------------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with throwaway_cluster() as running:
        yield running


async def test_postgres_search_get_delete_and_the_tools_removals(
    cluster: PgCluster, tmp_path: Path
) -> None:
    dsn = cluster.create_database("recall_lsp")
    settings = {"provider": "postgres", "postgresDsn": dsn, "postgresProject": "team"}
    folder = make_folder(tmp_path, "ws", memory="")
    seed(folder, settings)
    c = await start_server([folder], init_options={"memory": settings})
    try:
        found = await search(c, folder, "staging database port")
        assert found["provider"] == "postgres"
        assert {i["text"]: i["kind"] for i in found["items"]} == {
            OLD_PORT: "replaced",
            NEW_PORT: "removed",
        }
        first = found["items"][0]
        got = await request(c, GET, {"folder": folder.as_uri(), "id": first["id"]})
        assert got["item"]["text"] == first["text"]
        assert await request(c, DELETE, {"folder": folder.as_uri(), "id": first["id"]}) == {}
        gone = await error_of(c, GET, {"folder": folder.as_uri(), "id": first["id"]})
        assert gone.code == -32602
        entry = "The nightly ETL job writes to the warehouse schema raw_events."
        for arguments in (
            {"target": "memory", "action": "add", "content": entry},
            {"target": "memory", "action": "replace", "old_text": "nightly ETL", "content": "x."},
        ):
            result = await request(c, TOOL, {"folder": folder.as_uri(), "arguments": arguments})
            assert result["ok"] is True, result
        etl = await search(c, folder, "nightly ETL warehouse")
        assert [(i["text"], i["kind"]) for i in etl["items"]] == [(entry, "replaced")]
    finally:
        await stop_server(c)
    assert not (folder / ".my_agent_core" / "archive").exists()  # the team's archive, not SQLite


# ------------------------------------------------------------------------------- in process


class PluginProvider(MemoryProvider):
    """A third-party provider: `search` only (SearchHit dicts), no get or delete."""

    name = "plugin"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.release.set()
        self.shut = False

    def search(self, query: str, limit: int) -> list[SearchHit]:
        self.release.wait()
        return [
            SearchHit(
                id="n1",
                kind="note",
                text=f"about {query}",
                created="2026-01-02T03:04:05Z",
                score=0.5,
                source="plugin",
            )
        ]

    def shutdown(self) -> None:
        self.shut = True


@pytest.fixture
def plugin_service(tmp_path: Path) -> Iterator[tuple[RecallService, PluginProvider, FolderState]]:
    ls = build_server()
    folder = FolderState(uri=tmp_path.as_uri(), path=tmp_path)
    ls.memory.folders[tmp_path] = folder
    ls.init_options = {"memory": {"provider": "plugin"}}
    ls.update_settings(notify=False)
    provider = PluginProvider()
    made: list[str] = []

    def factory(name: str, context: ProviderContext) -> MemoryProvider:
        made.append(name)
        assert context.folder == tmp_path and context.session_id is None
        return provider

    service = RecallService(ls, factory)
    yield service, provider, folder
    service.close()
    assert made == ["plugin"]  # one provider object for the folder, however many requests


async def test_a_plugin_without_get_or_delete_is_refused_clearly(
    plugin_service: tuple[RecallService, PluginProvider, FolderState],
) -> None:
    service, provider, folder = plugin_service
    found = await service.search(folder, "cats", 5)
    assert found == {
        "provider": "plugin",
        "items": [
            {
                "id": "n1",
                "kind": "note",
                "text": "about cats",
                "time": "2026-01-02T03:04:05Z",
                "score": 0.5,
                "source": "plugin",
            }
        ],
    }
    for call in (service.get, service.delete):
        with pytest.raises(RequestError) as caught:
            await call(folder, "n1")
        assert caught.value.code == -32602 and "'plugin' cannot" in str(caught.value)
    service.close()
    assert provider.shut


async def test_a_provider_that_hangs_is_answered_after_the_time_limit(
    plugin_service: tuple[RecallService, PluginProvider, FolderState],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service, provider, folder = plugin_service
    monkeypatch.setattr(recall_service, "REQUEST_TIMEOUT_S", 0.2)
    provider.release.clear()
    with pytest.raises(RequestError) as caught:
        await service.search(folder, "cats", 5)
    assert caught.value.code == PROVIDER_FAILED and "did not answer" in str(caught.value)
    provider.release.set()
    assert (await service.search(folder, "dogs", 5))["items"][0]["text"] == "about dogs"


@pytest.mark.parametrize(
    "junk",
    [
        {"text": "no id"},
        {"id": True, "text": "a boolean id"},
        {"id": "x" * 201, "text": "an id too long to send back"},
        {"id": "1", "text": 42},
        "not an item",
        None,
    ],
)
def test_a_plugins_junk_items_are_dropped(junk: object) -> None:
    assert item_json(junk, max_chars=100) is None


def test_a_plugins_odd_fields_are_normalised() -> None:
    item = item_json(
        {"id": 7, "text": "half \udfff", "score": float("nan"), "created": True, "kind": "memory"},
        max_chars=100,
    )
    assert item == {"id": "7", "kind": "removed", "text": "half \ufffd", "time": 0.0, "score": 0.0}
    memory = RecallItem(
        id="3", kind="memory", text="t", created=5.0, source="removed from USER.md (replace)"
    )
    assert item_json(memory, max_chars=100) == {
        "id": "3",
        "kind": "replaced",
        "text": "t",
        "time": 5.0,
        "score": 0.0,
        "source": "removed from USER.md (replace)",
    }


async def test_shutdown_closes_every_provider(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "ws", memory="")
    seed(folder)
    c = await start_server([folder])
    archive_dir = archive_path(folder, create=False).parent
    try:
        assert (await search(c, folder, "staging port"))["items"]
        assert open_fds(c, archive_dir) > 0
        await asyncio.wait_for(c.shutdown_async(None), timeout=10)
        closed = open_fds(c, archive_dir) == 0  # closed at `shutdown`, before `exit`
    finally:
        c.exit(None)
        await c.stop()
    assert closed
