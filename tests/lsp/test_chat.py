"""End-to-end: chat sessions against a real chat-completions server (tests/support/fake_openai.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import (
    DELIM,
    make_folder,
    memory_path,
    new_id,
    notifications,
    request,
    send_raw,
    start_chat_server,
    start_server,
    stop_server,
    wait_until,
)
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.asyncio(loop_scope="module")
EVENT = "myAgent/chat/event"
CHANGED = "myAgent/memory/changed"


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("chat")
    return {
        "main": make_folder(
            base,
            "main",
            memory="uses uv" + DELIM + "tests run with pytest\n",
            user="likes short answers\n",
        ),
        "other": make_folder(base, "other", memory="other project\n"),
        "untrusted": make_folder(base, "untrusted", memory="SECRET untrusted note\n"),
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(fake: FakeOpenAI, roots: dict[str, Path]) -> AsyncIterator[Any]:
    c = await start_chat_server(
        fake, [roots["main"], roots["other"], roots["untrusted"]], [roots["untrusted"]]
    )
    yield c
    await stop_server(c)


def memory_call(
    content: str, action: str = "add", target: str = "memory", **extra: str
) -> dict[str, Any]:
    args = {"target": target, "action": action, "content": content, **extra}
    return {"tool_calls": [{"name": "memory", "arguments": args}]}


async def start(client: Any, folder: Path | None = None) -> str:
    params = {"folder": folder.as_uri()} if folder else {}
    return (await request(client, "myAgent/chat/start", params))["sessionId"]


async def prompt(client: Any, session: str) -> str:
    return (await request(client, "myAgent/chat/systemPrompt", {"sessionId": session}))["text"]


async def send(
    client: Any, session: str, message: str, msg_id: str | None = None
) -> dict[str, Any]:
    return await request(
        client, "myAgent/chat/send", {"sessionId": session, "message": message}, msg_id=msg_id
    )


def events(client: Any, session: str) -> list[dict[str, Any]]:
    return [e for e in notifications(client, EVENT) if e["sessionId"] == session]


async def test_start_lists_and_ends_sessions(client: Any, roots: dict[str, Path]) -> None:
    result = await request(client, "myAgent/chat/start", {})
    assert result["folder"] == roots["main"].as_uri() and result["memory"] is True
    session = result["sessionId"]
    assert isinstance(session, str) and session
    listed = (await request(client, "myAgent/chat/sessions", {}))["sessions"]
    (row,) = [r for r in listed if r["sessionId"] == session]
    assert {k: row[k] for k in result} == result and row["active"] is True
    text = await prompt(client, session)
    assert (
        "<MEMORY_CONTEXT>" in text
        and "tests run with pytest" in text
        and "likes short answers" in text
    )
    assert await request(client, "myAgent/chat/end", {"sessionId": session}) == {}
    after = (await request(client, "myAgent/chat/sessions", None))["sessions"]
    assert session not in [r["sessionId"] for r in after]  # ended before its first message
    with pytest.raises(JsonRpcException) as info:
        await prompt(client, session)
    assert info.value.code == -32602 and "unknown chat session" in info.value.message


async def test_events_stream_before_the_answer(client: Any, fake: FakeOpenAI) -> None:
    session = await start(client)
    usage = {"prompt_tokens": 1234, "completion_tokens": 56, "cached_tokens": 1000}
    fake.add({"content": "Hello there, how can I help?", "usage": usage})
    msg_id = new_id()
    result = await send(client, session, "hi", msg_id=msg_id)
    assert result["reply"] == "Hello there, how can I help?"
    got = events(client, session)
    kinds = [e["kind"] for e in got]
    assert kinds.count("delta") > 1 and kinds[-1] == "done" and "usage" in kinds
    assert "".join(e["text"] for e in got if e["kind"] == "delta") == result["reply"]
    done = got[-1]
    assert done["reply"] == result["reply"] and done["usage"] == result["usage"]
    assert set(result["usage"]) == {
        "promptTokens",
        "completionTokens",
        "cachedTokens",
        "requests",
        "cacheHitRate",
    }
    assert result["usage"]["requests"] == 1
    assert (result["usage"]["promptTokens"], result["usage"]["completionTokens"]) == (1234, 56)
    assert result["usage"]["cachedTokens"] == 1000
    assert result["usage"]["cacheHitRate"] == pytest.approx(1000 / 1234)
    # every event of this send was received before its response
    log = [
        (m, p)
        for m, p in client.my_log
        if (m == "$response" and p == msg_id) or (m == EVENT and p["sessionId"] == session)
    ]
    assert log[-1] == ("$response", msg_id)


async def test_agent_write_keeps_the_session_snapshot_frozen(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    session = await start(client)
    before = await prompt(client, session)
    fake.add(memory_call("project lints with ruff"), {"content": "Noted."})
    await send(client, session, "we use ruff")
    assert "project lints with ruff" in memory_path(roots["main"]).read_text(encoding="utf-8")
    assert await prompt(client, session) == before  # byte-identical
    (written,) = [e for e in events(client, session) if e["kind"] == "memory_changed"]
    assert written["target"] == "memory" and written["action"] == "add" and written["journalId"]
    note = [n for n in notifications(client, CHANGED) if n.get("sessionId") == session]
    assert len(note) == 1
    assert note[0]["source"] == "agent" and note[0]["journalId"] == written["journalId"]
    assert (
        note[0]["folder"] == roots["main"].as_uri()
        and "project lints with ruff" in note[0]["entries"]
    )
    tool_events = [e for e in events(client, session) if e["kind"] in ("tool_call", "tool_result")]
    assert [e["kind"] for e in tool_events] == ["tool_call", "tool_result"]
    assert tool_events[0]["name"] == "memory" and isinstance(tool_events[0]["arguments"], str)
    assert tool_events[1]["ok"] is True and tool_events[0]["callId"] == tool_events[1]["callId"]

    fresh = await start(client)
    assert "project lints with ruff" in await prompt(client, fresh)
    log = (await request(client, "myAgent/memory/log", {"limit": 1}))["entries"]
    assert log[0]["author"] == f"agent:{session}" and log[0]["id"] == written["journalId"]

    # the chat's Undo button
    undone = await request(client, "myAgent/memory/undo", {})
    assert "project lints with ruff" not in undone["state"]["stores"][0]["entries"]
    assert await prompt(client, session) == before
    # a hand edit of the file does not reach the frozen snapshot either
    path = memory_path(roots["main"])
    original = path.read_text(encoding="utf-8")
    path.write_text(original + "§\nhand edit\n", encoding="utf-8")
    assert await prompt(client, session) == before
    path.write_text(original, encoding="utf-8")


async def test_a_call_that_writes_nothing_is_not_announced(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    session = await start(client)
    fake.add(memory_call("uses uv"), {"content": "Already known."})  # an existing entry
    await send(client, session, "we use uv")
    kinds = [e["kind"] for e in events(client, session)]
    assert "tool_result" in kinds and "memory_changed" not in kinds
    assert not [n for n in notifications(client, CHANGED) if n.get("sessionId") == session]


async def test_cancel_stops_a_send_and_the_session_stays_usable(
    client: Any, fake: FakeOpenAI
) -> None:
    session = await start(client)
    fake.add({"hang": True})
    served = len(fake.completion_requests)
    msg_id = new_id()
    task = asyncio.ensure_future(send(client, session, "take your time", msg_id=msg_id))
    await wait_until(lambda: len(fake.completion_requests) > served)
    client.cancel_request(types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(task, timeout=20)
    assert info.value.code == -32800
    fake.add({"content": "I am back."})
    assert (await send(client, session, "still there?"))["reply"] == "I am back."
    last = fake.completion_requests[-1].json["messages"]
    assert last[0]["role"] == "system" and last[-1] == {"role": "user", "content": "still there?"}


async def test_endpoint_failure_is_32002_and_the_session_survives(
    client: Any, fake: FakeOpenAI
) -> None:
    session = await start(client)
    fake.add({"status": 401, "error": {"message": "bad key", "type": "invalid_request_error"}})
    with pytest.raises(JsonRpcException) as info:
        await send(client, session, "hello")
    assert (
        info.value.code == -32002
        and "401" in info.value.message
        and "bad key" in info.value.message
    )
    assert events(client, session)[-1]["kind"] == "error"
    fake.add({"content": "fine now"})
    assert (await send(client, session, "hello again"))["reply"] == "fine now"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("myAgent/chat/send", {"message": "hi"}),
        ("myAgent/chat/send", {"sessionId": "nope", "message": "hi"}),
        ("myAgent/chat/send", {"sessionId": 5, "message": "hi"}),
        ("myAgent/chat/send", ["session", "hi"]),
        ("myAgent/chat/send", None),
        ("myAgent/chat/systemPrompt", {}),
        ("myAgent/chat/systemPrompt", {"sessionId": None}),
        ("myAgent/chat/systemPrompt", {"sessionId": {"id": 1}}),
        ("myAgent/chat/end", {"sessionId": "nope"}),
        ("myAgent/chat/end", "x"),
        ("myAgent/chat/start", {"folder": 3}),
        ("myAgent/chat/start", {"folder": "file:///not/a/workspace/folder"}),
        ("myAgent/chat/start", [1]),
        ("myAgent/chat/sessions", [1]),
    ],
)
async def test_bad_params_are_32602(client: Any, method: str, params: Any) -> None:
    with pytest.raises(JsonRpcException) as info:
        await request(client, method, params)
    assert info.value.code == -32602


@pytest.mark.parametrize("message", ["", "   \n", None, 7, ["hi"]])
async def test_empty_or_mistyped_message_is_32602(
    client: Any, fake: FakeOpenAI, message: Any
) -> None:
    session = await start(client)
    served = len(fake.completion_requests)
    with pytest.raises(JsonRpcException) as info:
        await request(client, "myAgent/chat/send", {"sessionId": session, "message": message})
    assert info.value.code == -32602 and "message" in info.value.message
    assert len(fake.completion_requests) == served  # nothing reached the model


async def test_untrusted_folder_runs_without_memory(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    result = await request(client, "myAgent/chat/start", {"folder": roots["untrusted"].as_uri()})
    assert result["memory"] is False
    state = await request(client, "myAgent/memory/state", {"folder": roots["untrusted"].as_uri()})
    assert state["trusted"] is False and state["stores"][0]["entries"] == ["SECRET untrusted note"]
    session = result["sessionId"]
    text = await prompt(client, session)
    assert "MEMORY_CONTEXT" not in text and "SECRET" not in text
    fake.add(memory_call("should not land"), {"content": "ok"})
    await send(client, session, "remember this")
    (tool_result,) = [e for e in events(client, session) if e["kind"] == "tool_result"]
    assert tool_result["ok"] is False
    assert memory_path(roots["untrusted"]).read_text(encoding="utf-8") == "SECRET untrusted note\n"
    body = fake.completion_requests[-1].json
    assert "tools" not in body or all(t["function"]["name"] != "memory" for t in body["tools"])


async def test_sessions_write_to_their_own_folder(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    main_before = memory_path(roots["main"]).read_text(encoding="utf-8")
    session = await start(client, roots["other"])
    assert "other project" in await prompt(client, session)
    fake.add(memory_call("other fact"), {"content": "saved"})
    await send(client, session, "remember other fact")
    assert (
        memory_path(roots["other"]).read_text(encoding="utf-8") == "other project\n§\nother fact\n"
    )
    assert memory_path(roots["main"]).read_text(encoding="utf-8") == main_before
    (note,) = [n for n in notifications(client, CHANGED) if n.get("sessionId") == session]
    assert note["folder"] == roots["other"].as_uri()


def apply_text(text: str, edit: types.TextEdit) -> str:
    lines = [*text.splitlines(keepends=True), ""]

    def offset(pos: types.Position) -> int:
        return sum(len(line) for line in lines[: pos.line]) + pos.character

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]


async def test_agent_write_reaches_a_dirty_buffer_without_losing_unsaved_edits(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    path = memory_path(roots["main"], "user")
    disk = path.read_text(encoding="utf-8")
    dirty = disk + "§\nUNSAVED: prefers British spelling 😀\n"
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=3, text=dirty
            )
        )
    )
    client.applied_edits.clear()
    session = await start(client)
    fake.add(memory_call("works in UTC+1", target="user"), {"content": "noted"})
    await send(client, session, "I am in UTC+1")
    assert path.read_text(encoding="utf-8") == disk.rstrip("\n") + "\n§\nworks in UTC+1\n"
    await wait_until(lambda: client.applied_edits)
    (params,) = client.applied_edits
    (doc_edit,) = params.edit.document_changes
    assert doc_edit.text_document.uri == uri and doc_edit.text_document.version == 3
    merged = apply_text(dirty, doc_edit.edits[0])
    assert merged == dirty + "§\nworks in UTC+1\n"
    # the edit was sent before the send's answer
    kinds = [m for m, _ in client.my_log]
    assert kinds.index("workspace/applyEdit") < len(kinds) - 1
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


async def test_missing_model_is_32001(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "nomodel", memory="x\n")
    c = await start_server([folder])
    try:
        with pytest.raises(JsonRpcException) as info:
            await request(c, "myAgent/chat/start", {})
        assert info.value.code == -32001 and "model" in info.value.message
        # a model but neither OPENAI_API_KEY nor a base URL: also a configuration problem
        c.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"myAgent": {"model": "m"}})
        )
        with pytest.raises(JsonRpcException) as info:
            await request(c, "myAgent/chat/start", {})
        assert info.value.code == -32001 and "OPENAI_API_KEY" in info.value.message
        # after `shutdown`, requests are refused (InvalidRequest) instead of left unanswered
        await c.shutdown_async(None)
        with pytest.raises(JsonRpcException) as info:
            await send_raw(c, {"jsonrpc": "2.0", "id": new_id(), "method": "myAgent/chat/sessions"})
        assert info.value.code == -32600
        c.exit(None)
    finally:
        await c.stop()


async def test_shutdown_stops_a_running_turn(tmp_path: Path, fake: FakeOpenAI) -> None:
    folder = make_folder(tmp_path, "busy", memory="x\n")
    c = await start_server([folder], init_options={"model": "m", "baseUrl": fake.base_url})
    try:
        session = await start(c)
        fake.add({"hang": True})
        served = len(fake.completion_requests)
        pending = asyncio.ensure_future(send(c, session, "never answered by the model"))
        await wait_until(lambda: len(fake.completion_requests) > served)
        await asyncio.wait_for(c.shutdown_session(), timeout=15)  # the process exits
        with pytest.raises(JsonRpcException) as info:
            await asyncio.wait_for(pending, timeout=5)
        assert info.value.code == -32800
    finally:
        await c.stop()
