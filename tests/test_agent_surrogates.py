"""Lone surrogates from a model never break a session: the history stays valid UTF-8 and each request
still extends the previous one byte for byte (real SDK, real HTTP, exact SSE bytes from the server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from my_agent_core.tools import ToolResult, clean_text, tool
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import assert_prefix_chain, assert_valid_history


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    """One SSE payload; `ensure_ascii` writes a lone surrogate as the escape `\\udfff`, the way a
    provider's JSON carries half an emoji."""
    return json.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        },
        ensure_ascii=True,
    )


def text_stream(*pieces: str) -> dict[str, Any]:
    sse = [chunk({"role": "assistant", "content": ""})]
    sse += [chunk({"content": piece}) for piece in pieces]
    return {"raw_sse": [*sse, chunk({}, "stop"), "[DONE]"]}


def call_stream(*calls: tuple[str, str, str]) -> dict[str, Any]:
    sse = [chunk({"role": "assistant", "content": ""})]
    for index, (call_id, name, arguments) in enumerate(calls):
        head = {"index": index, "id": call_id, "type": "function"}
        sse.append(chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]}))
        sse.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}))
    return {"raw_sse": [*sse, chunk({}, "tool_calls"), "[DONE]"]}


def encodes(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def test_clean_text_joins_split_pairs_and_replaces_lone_halves() -> None:
    assert clean_text("plain ascii") == "plain ascii"
    assert clean_text("中文 😀") == "中文 😀"
    assert clean_text("a\ud83d\ude00b") == "a😀b"  # a pair split over two stream chunks
    assert clean_text("x\udfffy\ud83d") == "x\ufffdy\ufffd"
    assert clean_text("\ud83d\ud83d\ude00") == "\ufffd😀"


def test_a_tool_result_is_valid_text_whatever_the_tool_returned() -> None:
    @tool
    def echo(text: str) -> str:
        """Return the text."""
        return text + "\ud800"

    result = echo.execute({"text": "half \ud83d"})
    assert isinstance(result, ToolResult) and result.ok
    assert result.content == "half \ufffd\ufffd"
    failing = tool(lambda text: 1 / 0 if text else "", name="boom")
    assert encodes(failing.execute('{"text": "\\udfff"}').as_message_text())


def test_lone_surrogates_in_replies_and_tool_calls_do_not_break_later_turns(
    fake, make_agent, events: list[dict[str, Any]], tmp_path: Path
) -> None:
    mem_dir = tmp_path / ".my_agent_core" / "memory"
    agent = make_agent(memory_dir=mem_dir)
    agent.memory_store.add("memory", "Project uses uv")
    fake.add(
        # Turn 1: a reply whose emoji is split over two chunks, and a lone low surrogate.
        text_stream("half ", "\ud83d", "\ude00 joined, lone \udfff end"),
        # Turn 2: a tool call whose raw arguments carry a lone surrogate (decoded by the SDK), one
        # whose JSON escapes one (decoded by the tool: the store echoes it in its not-found error).
        call_stream(
            ("call_a", "memory", '{"target": "memory", "action": "add", "content": "fact \udfff"}'),
            (
                "call_b",
                "memory",
                '{"target": "memory", "action": "remove", "old_text": "gone \\udfff"}',
            ),
        ),
        text_stream("Noted \udfff."),
        # Turns 3 and 4: ordinary replies, which failed for good before the fix.
        text_stream("third turn"),
        text_stream("fourth turn"),
    )
    first = agent.run("hello \udfff")
    assert first == "half 😀 joined, lone \ufffd end"
    deltas = "".join(e["text"] for e in events if e["kind"] == "delta")
    assert deltas == first
    assert agent.run("save something") == "Noted \ufffd."
    assert agent.run("and again") == "third turn"
    assert agent.run("once more") == "fourth turn"

    requests = fake.completion_requests
    assert len(requests) == 5
    assert_prefix_chain(requests)
    assert_valid_history(agent.messages)
    assert encodes(agent.messages)
    sent = requests[-1].json["messages"]
    assert sent[1] == {"role": "user", "content": "hello \ufffd"}
    assert sent[2] == {"role": "assistant", "content": first}
    calls = sent[4]["tool_calls"]
    assert json.loads(calls[0]["function"]["arguments"])["content"] == "fact \ufffd"
    results = [m for m in sent if m["role"] == "tool"]
    assert results[0]["content"].startswith("Added")
    assert results[1]["content"].startswith("Error:") and "gone \ufffd" in results[1]["content"]
    # What was executed is what the history says the model sent.
    assert agent.memory_store.entries("memory") == ["Project uses uv", "fact \ufffd"]
    for event in events:
        assert encodes(event)
