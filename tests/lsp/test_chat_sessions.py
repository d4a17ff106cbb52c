"""Sessions that last, through the real server: persisted as they go, listed and resumed after a REAL
server restart (same system prompt, the next request a byte-prefix extension), one holder at a time,
torn and damaged files, pruning, deletion, compaction (threshold, manual, a context-length error),
every usage flavour, and the notices that reach the chat (a session that cannot be saved, a memory
provider that cannot start, recalled memory)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.lsp.chat_harness import (
    assert_prefix_chain,
    calls,
    events,
    send,
    session_requests,
    start_assistant,
    start_chat,
)
from tests.lsp.conftest import make_folder, memory_path, request, stop_server
from tests.support.fake_openai import FakeOpenAI, json_spans, prefix_extension_problem

pytestmark = pytest.mark.asyncio(loop_scope="module")

SESSIONS = Path(".my_agent_core") / "sessions"
SAVE_PREFIX = "[Note from the agent framework: this conversation has grown long"
SUMMARY_PREFIX = "[Note from the agent framework: write the summary"
PAD = "lorem ipsum dolor sit amet consectetur " * 25


@pytest.fixture
def fresh(fake: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The module's fake endpoint with its script, responder and window reset after the test."""
    yield fake
    fake.responder = None
    fake.context_window = None
    fake.load_script([], replace=True)


async def sessions_of(client: Any, folder: Path) -> list[dict[str, Any]]:
    listed = await request(client, "myAgent/chat/sessions", {"folder": folder.as_uri()})
    rows: list[dict[str, Any]] = listed["sessions"]
    return rows


async def system_prompt(client: Any, session: str) -> str:
    text: str = (await request(client, "myAgent/chat/systemPrompt", {"sessionId": session}))["text"]
    return text


def session_file(folder: Path, session: str) -> Path:
    return folder / SESSIONS / f"{session}.jsonl"


def of_folder(fake: FakeOpenAI, folder: Path) -> list[Any]:
    """The completion requests of sessions on `folder` (its path is in their system prompt)."""
    marker = str(folder)
    return [
        r
        for r in fake.completion_requests
        if marker in json.loads(r.body)["messages"][0]["content"]
    ]


def last_user_text(record: Any) -> str:
    last = json.loads(record.body)["messages"][-1]
    return str(last.get("content") or "") if last["role"] == "user" else ""


# ---- persisted, listed, resumed ------------------------------------------------------------------


async def test_a_session_resumes_after_a_real_restart_byte_for_byte(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fresh
    folder = make_folder(tmp_path, "resume", memory="uses uv\n", user="likes tea\n")
    (folder / "app.py").write_text("print('hi')\n", encoding="utf-8")
    client, _ = await start_assistant(fake, [folder])
    try:
        session = await start_chat(client, folder)
        fake.add(calls(("read_file", {"path": "app.py"})), {"content": "It prints hi."})
        await send(client, session, "marker-restart: what does app.py do?")
        fake.add(
            calls(("memory", {"target": "memory", "action": "add", "content": "app prints hi"})),
            {"content": "Saved."},
        )
        await send(client, session, "remember that")
        prompt = await system_prompt(client, session)
        (row,) = await sessions_of(client, folder)
        assert row["sessionId"] == session and row["active"] is True and row["memory"] is True
        assert row["title"] == "marker-restart: what does app.py do?"
        assert row["messages"] == 8 and row["folder"] == folder.as_uri()
        assert isinstance(row["created"], int) and row["updated"] >= row["created"]
        assert session_file(folder, session).is_file()
    finally:
        await stop_server(client)
    before = session_requests(fake, "marker-restart")
    memory_path(folder).write_text("uses uv\n§\nwritten while the server was down\n", "utf-8")

    client, _ = await start_assistant(fake, [folder])
    other = None
    try:
        (row,) = await sessions_of(client, folder)
        assert row["sessionId"] == session and row["active"] is False and row["messages"] == 8
        resumed = await request(client, "myAgent/chat/resume", {"sessionId": session})
        assert resumed["sessionId"] == session and resumed["folder"] == folder.as_uri()
        assert resumed["memory"] is True
        messages = resumed["messages"]
        assert [m["role"] for m in messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert messages[0]["content"] == "marker-restart: what does app.py do?"
        (tool_call,) = messages[1]["toolCalls"]
        assert tool_call["name"] == "read_file" and json.loads(tool_call["arguments"]) == {
            "path": "app.py"
        }
        assert (
            messages[2]["toolCallId"] == tool_call["id"] and "print('hi')" in messages[2]["content"]
        )
        assert messages[1]["content"] == ""  # a tool step without text
        assert await system_prompt(client, session) == prompt  # the ORIGINAL prompt
        snapshot = await request(client, "myAgent/chat/snapshot", {"sessionId": session})
        assert snapshot["stores"][0]["entries"] == ["uses uv"]  # frozen then, not the file now
        again = await request(client, "myAgent/chat/resume", {"sessionId": session})
        assert again == resumed  # already open here: the same session
        fake.add({"content": "Still here."})
        await send(client, session, "after the restart")
        after = session_requests(fake, "marker-restart")[len(before) :]
        assert prefix_extension_problem(before[-1].body, after[0].body) is None
        assert_prefix_chain([*before, *after])
        assert (
            "written while the server was down"
            not in json.loads(after[0].body)["messages"][0]["content"]
        )

        # one holder at a time: a second server on the same folder cannot take it
        other, _ = await start_assistant(fake, [folder])
        with pytest.raises(JsonRpcException) as info:
            await request(other, "myAgent/chat/resume", {"sessionId": session})
        assert info.value.code == -32004 and "open" in info.value.message
        with pytest.raises(JsonRpcException) as info:
            await request(other, "myAgent/chat/delete", {"sessionId": session})
        assert info.value.code == -32004
        (row,) = await sessions_of(other, folder)
        assert row["active"] is False  # open, but not in THIS server
        for bad in ("no-such-session", "../../etc/passwd", "x" * 100):
            with pytest.raises(JsonRpcException) as info:
                await request(other, "myAgent/chat/resume", {"sessionId": bad})
            assert info.value.code == -32602
        # ended here, it can be deleted there; its file goes
        await request(client, "myAgent/chat/end", {"sessionId": session})
        assert await request(other, "myAgent/chat/delete", {"sessionId": session}) == {}
        assert not session_file(folder, session).exists()
        assert await sessions_of(other, folder) == []
        with pytest.raises(JsonRpcException) as info:
            await request(other, "myAgent/chat/delete", {"sessionId": session})
        assert info.value.code == -32602
    finally:
        await stop_server(client)
        if other is not None:
            await stop_server(other)


async def test_torn_and_damaged_files(fresh: FakeOpenAI, tmp_path: Path) -> None:
    fake = fresh
    folder = make_folder(tmp_path, "torn", memory="x\n")
    client, _ = await start_assistant(fake, [folder])
    try:
        torn = await start_chat(client, folder)
        fake.add({"content": "one"}, {"content": "two"})
        await send(client, torn, "marker-torn first")
        damaged = await start_chat(client, folder)
        await send(client, damaged, "marker-damaged first")
    finally:
        await stop_server(client)
    with session_file(folder, torn).open("ab") as handle:
        handle.write(b'{"t":"msg","m":{"role":"user","content":"half a rec')  # a crash mid-write
    path = session_file(folder, damaged)
    lines = path.read_bytes().split(b"\n")
    lines.insert(1, b"this is not json")
    path.write_bytes(b"\n".join(lines))
    later = path.stat().st_mtime + 10  # edited by hand a while after its last turn
    os.utime(path, (later, later))
    damaged_bytes = path.read_bytes()

    client, _ = await start_assistant(fake, [folder])
    try:
        rows = {row["sessionId"]: row for row in await sessions_of(client, folder)}
        assert rows[torn]["title"] == "marker-torn first" and rows[torn]["messages"] == 2
        assert rows[damaged]["title"].startswith("(this chat cannot be reopened:")
        resumed = await request(client, "myAgent/chat/resume", {"sessionId": torn})
        assert [m["content"] for m in resumed["messages"]] == ["marker-torn first", "one"]
        with pytest.raises(JsonRpcException) as info:
            await request(client, "myAgent/chat/resume", {"sessionId": damaged})
        assert info.value.code == -32602 and "line 2" in info.value.message
        assert path.read_bytes() == damaged_bytes  # left exactly as it was
        fake.add({"content": "continued"})
        assert (await send(client, torn, "go on"))["reply"] == "continued"
    finally:
        await stop_server(client)


async def test_old_sessions_are_pruned_beyond_the_count(fresh: FakeOpenAI, tmp_path: Path) -> None:
    fake = fresh
    folder = make_folder(tmp_path, "prune", memory="x\n")
    client, _ = await start_assistant(
        fake, [folder], settings={"chat": {"sessions": {"maxCount": 2}}}
    )
    try:
        made = []
        for number in range(3):
            session = await start_chat(client, folder)
            fake.add({"content": f"reply {number}"})
            await send(client, session, f"marker-prune {number}")
            made.append(session)
            if number < 2:
                await request(client, "myAgent/chat/end", {"sessionId": session})
        listed = [row["sessionId"] for row in await sessions_of(client, folder)]
        assert listed == [made[2], made[1]]  # newest first; the oldest was pruned
        assert not session_file(folder, made[0]).exists()
    finally:
        await stop_server(client)


async def test_untrusted_and_unknown_folders_list_nothing_from_disk(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fresh
    trusted = make_folder(tmp_path, "trusted", memory="x\n")
    planted = make_folder(tmp_path, "planted", memory="x\n")
    # a session file shipped inside a repository is never read for an untrusted folder
    source = make_folder(tmp_path, "source", memory="x\n")
    client, _ = await start_assistant(fake, [source])
    try:
        session = await start_chat(client, source)
        fake.add({"content": "r"})
        await send(client, session, "marker-planted secret plan")
    finally:
        await stop_server(client)
    (planted / SESSIONS).mkdir(parents=True)
    shutil.copy(session_file(source, session), session_file(planted, session))
    client, _ = await start_assistant(fake, [trusted, planted], untrusted=[planted])
    try:
        assert await sessions_of(client, planted) == []
        with pytest.raises(JsonRpcException) as info:
            await request(client, "myAgent/chat/resume", {"sessionId": session})
        assert info.value.code == -32602
        with pytest.raises(JsonRpcException) as info:
            await request(client, "myAgent/chat/sessions", {"folder": "file:///not/open"})
        assert info.value.code == -32602
    finally:
        await stop_server(client)


async def test_a_session_from_another_machine_is_listed_but_never_resumed(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    """A trusted clone ships a session (0600, yours, as a checkout under umask 077 makes it) that
    my-agent wrote elsewhere, with another key: listed as not reopenable, resume refused (-32602),
    while this machine's own session beside it resumes."""
    fake = fresh
    folder = make_folder(tmp_path, "clone", memory="x\n")
    elsewhere = make_folder(tmp_path, "elsewhere", memory="x\n")
    other_state = {"XDG_STATE_HOME": str(tmp_path / "other-machine")}
    client, _ = await start_assistant(fake, [elsewhere], env=other_state)
    try:
        foreign = await start_chat(client, elsewhere)
        fake.add({"content": "r"})
        await send(client, foreign, "marker-foreign shipped in the clone")
    finally:
        await stop_server(client)
    client, _ = await start_assistant(fake, [folder])
    try:
        mine = await start_chat(client, folder)
        fake.add({"content": "mine"})
        await send(client, mine, "marker-mine my own chat")
    finally:
        await stop_server(client)
    shipped = session_file(folder, foreign)
    old = os.umask(0o077)
    try:
        shutil.copyfile(session_file(elsewhere, foreign), shipped)
    finally:
        os.umask(old)
    assert shipped.stat().st_mode & 0o777 == 0o600

    client, _ = await start_assistant(fake, [folder])
    try:
        rows = {row["sessionId"]: row for row in await sessions_of(client, folder)}
        assert rows[foreign]["title"].startswith("(this chat cannot be reopened:")
        assert "not written by my-agent for you on this machine" in rows[foreign]["title"]
        assert "marker-foreign" not in json.dumps(rows[foreign])
        with pytest.raises(JsonRpcException) as info:
            await request(client, "myAgent/chat/resume", {"sessionId": foreign})
        assert info.value.code == -32602 and "not written by my-agent" in info.value.message
        assert rows[mine]["title"] == "marker-mine my own chat"
        resumed = await request(client, "myAgent/chat/resume", {"sessionId": mine})
        assert [m["content"] for m in resumed["messages"]] == ["marker-mine my own chat", "mine"]
    finally:
        await stop_server(client)
    assert shipped.exists()  # listed, refused, never deleted


# ---- compaction ----------------------------------------------------------------------------------


class Model:
    """Answers what it is asked: the save step (one memory write), the summary, or the user."""

    def __init__(self) -> None:
        self.turns = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        last = body["messages"][-1]
        text = str(last.get("content") or "") if last["role"] == "user" else ""
        if text.startswith(SAVE_PREFIX):
            args = {"target": "memory", "action": "add", "content": "the user pads messages"}
            return {"tool_calls": [{"name": "memory", "arguments": args}]}
        if text.startswith(SUMMARY_PREFIX):
            return {"content": "SUMMARY: the user sent padded questions."}
        if last["role"] == "tool":
            return {"content": "saved."}
        self.turns += 1
        return {"content": f"answer {self.turns}: {PAD}"}


def system_bytes(body: bytes) -> str:
    text = body.decode("utf-8")
    top = json_spans(text)
    assert isinstance(top, dict)
    first = json_spans(text, top["messages"][0])
    assert isinstance(first, list)
    start, end = first[0]
    return text[start:end]


def breaks(records: list[Any]) -> list[int]:
    out, previous = [], None
    for number, record in enumerate(records):
        if not record.succeeded:
            continue
        if previous is not None and prefix_extension_problem(previous, record.body) is not None:
            out.append(number)
        previous = record.body
    return out


async def test_a_small_context_window_compacts_with_the_save_step_first(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fresh
    fake.responder = Model()
    folder = make_folder(tmp_path, "compact", memory="x\n")
    client, _ = await start_assistant(
        fake, [folder], settings={"chat": {"contextWindow": 12000, "compactAt": 0.6}}
    )
    try:
        session = await start_chat(client, folder)
        for number in range(12):
            await send(client, session, f"marker-compact {number}: {PAD}")
            if events(client, session, "compacted"):
                break
        (compacted,) = events(client, session, "compacted")
        assert compacted["reason"] == "threshold" and compacted["after"] < compacted["before"]
        for number in range(2):
            await send(client, session, f"after {number}")
        records = of_folder(fake, folder)
        texts = [last_user_text(r) for r in records]
        save_at = next(i for i, t in enumerate(texts) if t.startswith(SAVE_PREFIX))
        assert texts[save_at + 1].startswith(SUMMARY_PREFIX)  # the save step, then the summary
        assert "Added" in json.loads(records[save_at + 1].body)["messages"][-2]["content"]
        assert prefix_extension_problem(records[save_at - 1].body, records[save_at].body) is None
        assert len({system_bytes(r.body) for r in records}) == 1  # the system message, unchanged
        assert "the user pads messages" in memory_path(folder).read_text(encoding="utf-8")
        assert any(e["kind"] == "memory_changed" for e in events(client, session))
        first_after = save_at + 2
        assert breaks(records) == [first_after]  # exactly one break, then extensions again
        history_before = json.loads(records[save_at - 1].body)["messages"]
        history_after = json.loads(records[first_after].body)["messages"]
        assert len(history_after) < len(history_before)
        assert "<conversation_summary>" in history_after[1]["content"]
        resumed = await request(client, "myAgent/chat/resume", {"sessionId": session})
        last = json.loads(records[-1].body)["messages"]
        assert len(resumed["messages"]) == len(last)  # the history as sent, and the last reply
        assert "<conversation_summary>" in resumed["messages"][0]["content"]
    finally:
        await stop_server(client)


async def test_compact_by_hand_and_a_context_length_error(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fresh
    fake.responder = Model()
    folder = make_folder(tmp_path, "manual", memory="x\n")
    client, _ = await start_assistant(fake, [folder])
    try:
        session = await start_chat(client, folder)
        result = await request(client, "myAgent/chat/compact", {"sessionId": session})
        assert result == {"compacted": False, "before": 0, "after": 0}
        for number in range(3):
            await send(client, session, f"marker-manual {number}")
        result = await request(client, "myAgent/chat/compact", {"sessionId": session})
        assert result["compacted"] is True and result["after"] < result["before"]
        manual = events(client, session, "compacted")
        assert [e["reason"] for e in manual] == ["manual"]

        other = await start_chat(client, folder)
        for number in range(4):
            await send(client, other, f"marker-ctx {number}: {PAD}")
        records = session_requests(fake, "marker-ctx 0")
        fake.context_window = fake.prompt_tokens(records[-1].body) + 200
        fake.context_error_format = "openai"
        reply = await send(client, other, f"one more: {PAD}")
        assert reply["reply"].startswith("answer")
        (event,) = events(client, other, "compacted")
        assert event["reason"] == "context_error"
    finally:
        await stop_server(client)


# ---- usage -----------------------------------------------------------------------------------------


async def test_every_usage_flavour_reaches_the_chat(fresh: FakeOpenAI, tmp_path: Path) -> None:
    fake = fresh
    folder = make_folder(tmp_path, "usage", memory="x\n")
    client, _ = await start_assistant(fake, [folder])
    try:
        session = await start_chat(client, folder)
        for flavour in ("openai", "deepseek", "llamacpp"):
            fake.add({"content": f"{flavour} reply", "usage_format": flavour})
            await send(client, session, f"marker-usage {flavour}")
        usage = events(client, session, "usage")
        assert len(usage) == 3
        assert all(isinstance(u["cachedTokens"], int) for u in usage)
        assert all(u["promptTokens"] > 0 and u["completionTokens"] > 0 for u in usage)
        assert usage[1]["cachedTokens"] > 0  # the second request read the first one's prefix
        done = events(client, session, "done")[-1]["usage"]
        assert done["requests"] == 3 and isinstance(done["cacheHitRate"], float)

        blind = await start_chat(client, folder)
        fake.add({"content": "no cache figure", "usage_format": "none"})
        result = await send(client, blind, "marker-usage none")
        (event,) = events(client, blind, "usage")
        assert event["cachedTokens"] is None and event["promptTokens"] > 0
        assert result["usage"]["cachedTokens"] is None
        assert result["usage"]["cacheHitRate"] is None
        fake.add({"content": "no usage at all", "usage": None})
        result = await send(client, blind, "again")
        assert len(events(client, blind, "usage")) == 1  # nothing reported: no usage event
        assert result["usage"]["requests"] == 2 and result["usage"]["cachedTokens"] is None
    finally:
        await stop_server(client)


# ---- notices -----------------------------------------------------------------------------------------


async def test_a_session_that_cannot_be_saved_and_a_provider_that_cannot_start_say_so(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fresh
    folder = make_folder(tmp_path, "notices", memory="x\n")
    (folder / SESSIONS).write_text("a file where the sessions folder belongs\n", "utf-8")
    client, _ = await start_assistant(
        fake, [folder], settings={"memory": {"provider": "no-such-provider"}}
    )
    try:
        session = await start_chat(client, folder)
        fake.add({"content": "fine"}, {"content": "still fine"})
        assert (await send(client, session, "marker-notices hi"))["reply"] == "fine"
        (provider,) = events(client, session, "provider_error")
        assert provider["provider"] == "no-such-provider" and "Unknown" in provider["message"]
        (saved,) = events(client, session, "session_error")
        assert saved["message"]
        assert (await send(client, session, "again"))["reply"] == "still fine"
        assert len(events(client, session, "session_error")) == 1  # once per episode
        kinds = [e["kind"] for e in events(client, session)]
        assert kinds.index("provider_error") < kinds.index("done")  # within the first request
    finally:
        await stop_server(client)


async def test_recalled_memory_goes_into_the_user_message(
    fresh: FakeOpenAI, tmp_path: Path
) -> None:
    fake = fresh
    folder = make_folder(tmp_path, "recall", memory="x\n")
    client, _ = await start_assistant(fake, [folder], settings={"memory": {"provider": "archive"}})
    try:
        first = await start_chat(client, folder)
        fake.add({"content": "We deploy the zebra-quartz service with the helm chart in deploy/."})
        await send(client, first, "marker-recall how is zebra-quartz deployed with helm?")
        await request(client, "myAgent/chat/end", {"sessionId": first})
        second = await start_chat(client, folder)
        fake.add({"content": "As before."})
        await send(client, second, "remind me: the zebra-quartz helm deploy?")
        (recall,) = events(client, second, "recall")
        assert recall["items"] >= 1 and recall["chars"] > 0
        user = fake.completion_requests[-1].json["messages"][-1]["content"]
        assert "<recalled_memory>" in user and "zebra-quartz" in user
        system = await system_prompt(client, second)
        assert "<recalled_memory>" not in system and "zebra" not in system
        assert (folder / ".my_agent_core" / "archive").is_dir()
    finally:
        await stop_server(client)
