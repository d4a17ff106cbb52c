"""`myAgent/chat/snapshot`: a session's frozen memory entries, against the live ones of `memory/state`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import DELIM, make_folder, request, start_chat_server, stop_server
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("snapshot")
    return {
        "main": make_folder(
            base, "main", memory="uses uv" + DELIM + "tests run with pytest\n", user="likes tea\n"
        ),
        "untrusted": make_folder(base, "untrusted", memory="SECRET untrusted note\n"),
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(fake: FakeOpenAI, roots: dict[str, Path]) -> AsyncIterator[Any]:
    c = await start_chat_server(fake, [roots["main"], roots["untrusted"]], [roots["untrusted"]])
    yield c
    await stop_server(c)


async def snapshot(client: Any, session: str) -> dict[str, Any]:
    return await request(client, "myAgent/chat/snapshot", {"sessionId": session})


def entries(result: dict[str, Any], target: str = "memory") -> list[str]:
    return next(s["entries"] for s in result["stores"] if s["target"] == target)


async def edit(client: Any, **params: str) -> dict[str, Any]:
    return await request(client, "myAgent/memory/edit", {"target": "memory", **params})


async def test_snapshot_stays_frozen_while_memory_changes(
    client: Any, roots: dict[str, Path]
) -> None:
    started = await request(client, "myAgent/chat/start", {"folder": roots["main"].as_uri()})
    session = started["sessionId"]
    frozen = await snapshot(client, session)
    assert frozen == {
        "sessionId": session,
        "folder": roots["main"].as_uri(),
        "memory": True,
        "stores": [
            {"target": "memory", "entries": ["uses uv", "tests run with pytest"]},
            {"target": "user", "entries": ["likes tea"]},
        ],
        "contextFiles": [],  # none in this folder
    }
    await edit(client, action="add", content="lint with ruff")
    await edit(client, action="remove", oldText="uses uv")
    state = await request(client, "myAgent/memory/state", {"folder": roots["main"].as_uri()})
    assert entries(state) == ["tests run with pytest", "lint with ruff"]  # live
    assert await snapshot(client, session) == frozen  # frozen
    # a new session freezes the live entries
    fresh = (await request(client, "myAgent/chat/start", {}))["sessionId"]
    assert entries(await snapshot(client, fresh)) == ["tests run with pytest", "lint with ruff"]
    # restore for the other tests
    await edit(client, action="remove", oldText="lint with ruff")
    await edit(client, action="add", content="uses uv")


async def test_untrusted_session_has_no_memory_snapshot(
    client: Any, roots: dict[str, Path]
) -> None:
    started = await request(client, "myAgent/chat/start", {"folder": roots["untrusted"].as_uri()})
    assert started["memory"] is False
    result = await snapshot(client, started["sessionId"])
    assert result == {
        "sessionId": started["sessionId"],
        "folder": roots["untrusted"].as_uri(),
        "memory": False,
        "stores": [],
        "contextFiles": [],
    }


async def test_ended_session_is_unknown(client: Any) -> None:
    session = (await request(client, "myAgent/chat/start", {}))["sessionId"]
    await request(client, "myAgent/chat/end", {"sessionId": session})
    with pytest.raises(JsonRpcException) as info:
        await snapshot(client, session)
    assert info.value.code == -32602 and "unknown chat session" in info.value.message


@pytest.mark.parametrize(
    "params",
    [{}, None, {"sessionId": "nope"}, {"sessionId": None}, {"sessionId": 5}, ["x"], "x"],
)
async def test_bad_params_are_32602(client: Any, params: Any) -> None:
    with pytest.raises(JsonRpcException) as info:
        await request(client, "myAgent/chat/snapshot", params)
    assert info.value.code == -32602
