"""End-to-end: settings, workspace folders, file-watcher registration and answering malformed requests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import (
    DELIM,
    MEMORY_GLOB,
    make_folder,
    new_id,
    request,
    send_raw,
    start_server,
    stop_server,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("server")
    return {
        "a": make_folder(base, "a", memory="alpha one" + DELIM + "alpha two\n"),
        "b": make_folder(base, "b", memory="beta\n", user="likes tabs\n"),
        "c": make_folder(base, "c", memory="gamma\n"),
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(roots: dict[str, Path]) -> AsyncIterator[Any]:
    c = await start_server(
        [roots["a"], roots["b"]],
        init_options={"memory": {"memoryCharLimit": 1000, "userCharLimit": 600}},
        configuration={"myAgent": {"memory": {"userCharLimit": 700}}},
    )
    yield c
    await stop_server(c)


async def limits(client: Any, folder: Path | None = None) -> dict[str, int]:
    params = {"folder": folder.as_uri()} if folder else {}
    state = await request(client, "myAgent/memory/state", params)
    return {s["target"]: s["limit"] for s in state["stores"]}


async def test_watcher_is_registered_dynamically(client: Any) -> None:
    await wait_until(lambda: client.registrations)
    (reg,) = client.registrations
    assert reg.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    watchers = reg.register_options["watchers"]
    assert [w["globPattern"] for w in watchers] == [MEMORY_GLOB]


async def test_settings_come_from_init_options_then_pulled_configuration(client: Any) -> None:
    async def pulled() -> bool:
        return (await limits(client)) == {"memory": 1000, "user": 700}

    for _ in range(200):
        if await pulled():
            break
    assert await limits(client) == {"memory": 1000, "user": 700}


async def test_did_change_configuration_pulls_again(client: Any) -> None:
    client.set_configuration(
        {"myAgent": {"memory": {"userCharLimit": 800, "memoryCharLimit": 900}}}
    )
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(200):
        if await limits(client) == {"memory": 900, "user": 800}:
            break
    assert await limits(client) == {"memory": 900, "user": 800}
    # a store built with the new limits refuses what no longer fits
    with pytest.raises(JsonRpcException) as info:
        await request(
            client,
            "myAgent/memory/edit",
            {"target": "user", "action": "add", "content": "x" * 801},
        )
    assert info.value.code == -32003
    assert "/800" in info.value.message


async def test_every_folder_has_its_own_stores(client: Any, roots: dict[str, Path]) -> None:
    first = await request(client, "myAgent/memory/state", {})
    assert first["folder"] == roots["a"].as_uri()
    assert first["stores"][0]["entries"] == ["alpha one", "alpha two"]
    b = await request(client, "myAgent/memory/state", {"folder": roots["b"].as_uri()})
    assert b["folder"] == roots["b"].as_uri()
    assert [s["entries"] for s in b["stores"]] == [["beta"], ["likes tabs"]]
    assert b["stores"][0]["path"] == str(roots["b"] / ".my_agent_core" / "memory" / "MEMORY.md")
    await request(
        client,
        "myAgent/memory/edit",
        {"folder": roots["b"].as_uri(), "target": "memory", "action": "add", "content": "b only"},
    )
    a = await request(client, "myAgent/memory/state", {"folder": roots["a"].as_uri()})
    assert "b only" not in a["stores"][0]["entries"]


async def test_workspace_folders_can_come_and_go(client: Any, roots: dict[str, Path]) -> None:
    c_uri = roots["c"].as_uri()
    with pytest.raises(JsonRpcException) as info:
        await request(client, "myAgent/memory/state", {"folder": c_uri})
    assert info.value.code == -32602 and "unknown workspace folder" in info.value.message
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[types.WorkspaceFolder(uri=c_uri, name="c")],
                removed=[types.WorkspaceFolder(uri=roots["b"].as_uri(), name="b")],
            )
        )
    )
    state = await request(client, "myAgent/memory/state", {"folder": c_uri})
    assert state["stores"][0]["entries"] == ["gamma"]
    with pytest.raises(JsonRpcException) as info:
        await request(client, "myAgent/memory/state", {"folder": roots["b"].as_uri()})
    assert info.value.code == -32602


@pytest.mark.parametrize(
    "message",
    [
        {"method": "textDocument/hover", "params": {"bogus": 1}},
        {"method": "textDocument/hover", "params": [1, 2]},
        {"method": "textDocument/documentSymbol", "params": None},
        {"method": "textDocument/codeAction", "params": "x"},
        {"method": "workspace/executeCommand", "params": {"command": 5}},
    ],
)
async def test_standard_requests_with_bad_params_are_answered(client: Any, message: dict) -> None:
    with pytest.raises(JsonRpcException) as info:
        await send_raw(client, {"jsonrpc": "2.0", "id": new_id(), **message})
    assert info.value.code == -32602


async def test_malformed_messages_never_stop_the_server(client: Any) -> None:
    with pytest.raises(JsonRpcException) as info:
        await send_raw(client, {"jsonrpc": "1.0", "id": new_id(), "method": "myAgent/memory/state"})
    assert info.value.code == -32600
    with pytest.raises(JsonRpcException) as info:
        await send_raw(client, {"jsonrpc": "2.0", "id": new_id(), "method": "myAgent/nope"})
    assert info.value.code == -32601
    await send_raw(client, b"{not json")
    await send_raw(client, b"[1, 2, 3]")
    await send_raw(client, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"x": 1}})
    await send_raw(client, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": []}})
    # params that look like a JSON-RPC message stay data (unknown keys are ignored)
    nested = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    result = await send_raw(
        client,
        {"jsonrpc": "2.0", "id": new_id(), "method": "myAgent/memory/state", "params": nested},
    )
    assert len(result["stores"]) == 2
    state = await request(client, "myAgent/memory/state", {})
    assert state["stores"]


async def test_without_dynamic_registration_and_with_env_settings(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "env", memory="x\n")
    c = await start_server(
        [folder],
        dynamic_watch=False,
        env={"MY_AGENT_MODEL": "env-model", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    try:
        session = await request(c, "myAgent/chat/start", {})
        assert session["memory"] is True and session["folder"] == folder.as_uri()
        assert not c.registrations
    finally:
        await stop_server(c)
