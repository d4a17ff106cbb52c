"""Robustness: random params and random bytes never leave a request unanswered or stop the server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import (
    DELIM,
    make_folder,
    new_id,
    request,
    send_raw,
    start_server,
    stop_server,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

METHODS = [
    "myAgent/memory/state",
    "myAgent/memory/edit",
    "myAgent/memory/undo",
    "myAgent/memory/log",
    "myAgent/chat/start",
    "myAgent/chat/send",
    "myAgent/chat/systemPrompt",
    "myAgent/chat/end",
    "myAgent/chat/sessions",
]
KEYS = [
    "folder",
    "target",
    "action",
    "content",
    "oldText",
    "newContent",
    "limit",
    "sessionId",
    "message",
]
ALLOWED_CODES = {-32602, -32001, -32002, -32003, -32800}

nasty_text = st.text(
    alphabet=st.characters(codec=None, exclude_categories=()), max_size=40
) | st.sampled_from(
    ["", " ", "§", "\n§\n", "memory", "user", "add", "remove", "file:///", "\x00", "\ud800"]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | nasty_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=12,
)
params_strategy = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6),
    st.fixed_dictionaries(
        {
            "target": st.sampled_from(["memory", "user"]),
            "action": st.sampled_from(["add", "replace", "remove"]),
        },
        optional={"content": nasty_text, "oldText": nasty_text, "newContent": nasty_text},
    ),
)


def draw(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """n examples from a strategy (generated up front: the client lives in an event loop)."""
    out: list[Any] = []

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_folder(
        tmp_path_factory.mktemp("robust"), "ws", memory="keep me" + DELIM + "and me\n"
    )


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(folder: Path) -> AsyncIterator[Any]:
    # a model is configured, but its endpoint is unreachable: a stray valid send fails fast (-32002)
    c = await start_server(
        [folder], init_options={"model": "m", "baseUrl": "http://127.0.0.1:9/v1"}
    )
    yield c
    await stop_server(c)


async def answered(client: Any, method: str, params: Any) -> None:
    """The request gets a result or one of the documented errors."""
    try:
        result = await send_raw(
            client, {"jsonrpc": "2.0", "id": new_id(), "method": method, "params": params}
        )
    except JsonRpcException as exc:
        assert exc.code in ALLOWED_CODES, (method, params, exc.code, exc.message)
        assert exc.message
        return
    assert isinstance(result, dict), (method, params, result)


@pytest.mark.parametrize("method", METHODS)
async def test_random_params_are_always_answered(client: Any, method: str) -> None:
    # chat/start builds a real session for every valid example: fewer of those
    for params in draw(params_strategy, 15 if method == "myAgent/chat/start" else 40):
        await answered(client, method, params)
    state = await request(client, "myAgent/memory/state", {})
    assert state["stores"][0]["target"] == "memory"


async def test_random_edits_keep_the_file_parseable(client: Any, folder: Path) -> None:
    edits = draw(
        st.fixed_dictionaries(
            {
                "target": st.sampled_from(["memory", "user"]),
                "action": st.sampled_from(["add", "replace", "remove"]),
                "content": nasty_text,
                "oldText": nasty_text | st.sampled_from(["keep", "me"]),
                "newContent": nasty_text,
            }
        ),
        60,
    )
    for params in edits:
        await answered(client, "myAgent/memory/edit", params)
    state = await request(client, "myAgent/memory/state", {})
    for store in state["stores"]:
        assert store["available"] is True
        assert store["used"] <= store["limit"]


async def test_random_bytes_do_not_stop_the_server(client: Any) -> None:
    blobs = draw(st.binary(max_size=64), 40)
    for blob in blobs:
        await send_raw(client, blob)
    for message in draw(json_values, 30):
        await send_raw(client, json.dumps(message).encode())
    # requests with odd ids / methods / shapes still get an answer when they can be answered
    with pytest.raises(JsonRpcException):
        await send_raw(
            client, {"jsonrpc": "2.0", "id": new_id(), "method": "myAgent/", "params": {}}
        )
    state = await request(client, "myAgent/memory/state", {})
    assert state["stores"]


async def test_chat_requests_on_real_sessions_with_random_messages(client: Any) -> None:
    session = (await request(client, "myAgent/chat/start", {}))["sessionId"]
    for message in draw(json_values, 25):
        await answered(client, "myAgent/chat/send", {"sessionId": session, "message": message})
        await answered(client, "myAgent/chat/systemPrompt", {"sessionId": session, "x": message})
    assert await request(client, "myAgent/chat/end", {"sessionId": session}) == {}
