"""The agent end to end over real HTTP: the design doc's four phases and the prefix invariant."""

from __future__ import annotations

import json
from pathlib import Path

from my_agent_core.agent import Agent
from my_agent_core.tools import tool
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import (
    assert_prefix_chain,
    assert_valid_history,
    request_messages,
    tool_call,
)


def mem(action: str, target: str = "memory", **fields: str) -> dict:
    return tool_call("memory", {"target": target, "action": action, **fields})


def test_seed_timeline_cold_start_run_recall_reset(fake, client, tmp_path: Path) -> None:
    mem_dir = tmp_path / "project" / ".my_agent_core" / "memory"
    # Phase 1: cold start. The folder is created; the snapshot is empty; the memory tool is offered.
    agent = Agent(model="fake-model", client=client, memory_dir=mem_dir)
    assert mem_dir.is_dir()
    assert "<MEMORY_CONTEXT>" in agent.system_prompt
    cold_prompt = agent.system_prompt

    # Phase 2: a run with memory writes (two calls in one step, then a replace and a remove).
    fake.add(
        {
            "content": "Noting that.",
            "tool_calls": [
                mem("add", content="Project runs tests with pytest"),
                mem("add", target="user", content="Prefers tabs, 120-char lines"),
            ],
        },
        {
            "tool_calls": [
                mem("replace", old_text="pytest", new_content="Project runs tests with vitest")
            ]
        },
        {"tool_calls": [mem("add", content="Temporary note")]},
        {"tool_calls": [mem("remove", old_text="Temporary")]},
        {"content": "Saved: vitest for tests, and your formatting preferences."},
    )
    reply = agent.run(
        "Remember: tests use pytest. Actually vitest. I like tabs and 120-char lines."
    )
    assert reply == "Saved: vitest for tests, and your formatting preferences."
    memory_text = (mem_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert "Project runs tests with vitest" in memory_text
    assert "pytest" not in memory_text and "Temporary" not in memory_text
    assert "Prefers tabs" in (mem_dir / "USER.md").read_text(encoding="utf-8")
    # The snapshot stayed frozen during the session; every request sent it verbatim.
    assert agent.system_prompt == cold_prompt
    for number in range(len(fake.completion_requests)):
        assert request_messages(fake, number)[0] == {"role": "system", "content": cold_prompt}
    assert_prefix_chain([r.body for r in fake.completion_requests])
    assert_valid_history(agent.messages)

    # Phase 3: next day, a new Agent on the same folder recalls it in its system prompt.
    before = len(fake.completion_requests)
    fake.add({"content": "This project uses vitest."})
    tomorrow = Agent(model="fake-model", client=client, memory_dir=mem_dir)
    assert "Project runs tests with vitest" in tomorrow.system_prompt
    assert "Prefers tabs, 120-char lines" in tomorrow.system_prompt
    assert tomorrow.run("What runs the tests here?") == "This project uses vitest."
    sent = request_messages(fake)
    assert len(fake.completion_requests) == before + 1
    # The archive is on by default (issue 21): what the replace took out of memory yesterday is
    # recalled into the user message, labelled as removed; the system prompt stays the snapshot.
    assert sent[0] == {"role": "system", "content": tomorrow.system_prompt}
    question, recalled = sent[1]["content"].split("\n\n<recalled_memory>", 1)
    assert sent[1]["role"] == "user" and question == "What runs the tests here?"
    assert "removed from MEMORY.md (replace)" in recalled
    assert "Project runs tests with pytest" in recalled
    tomorrow.close()

    # Phase 4: reset() starts a new session with a fresh snapshot that contains what was written.
    agent.reset()
    assert agent.system_prompt != cold_prompt
    assert "Project runs tests with vitest" in agent.system_prompt
    assert agent.usage.requests == 0
    fake.add({"content": "ok"})
    agent.run("hello again")  # nothing in the archive matches: no recalled block
    assert request_messages(fake) == [
        {"role": "system", "content": agent.system_prompt},
        {"role": "user", "content": "hello again"},
    ]


def test_prefix_invariant_across_memory_writes_and_turns(fake, make_agent, tmp_path: Path) -> None:
    agent = make_agent(memory_dir=tmp_path / "mem", tools=[lookup])
    for turn in range(4):
        fake.add(
            {"tool_calls": [mem("add", content=f"Fact number {turn} — café ☕ 中文")]},
            {"tool_calls": [tool_call("lookup", f'{{"key": "k{turn}"}}')]},
            {"content": f"answer {turn}"},
        )
        assert agent.run(f"turn {turn}") == f"answer {turn}"
    bodies = [r.body for r in fake.completion_requests]
    assert len(bodies) == 12
    assert_prefix_chain(bodies)
    # The memory writes happened and are on disk, yet the system prompt never changed.
    assert "Fact number 3" in (tmp_path / "mem" / "MEMORY.md").read_text(encoding="utf-8")
    assert "Fact number" not in agent.system_prompt
    # Non-ASCII arguments travel verbatim (the SDK sends UTF-8, not \\u escapes).
    assert "café ☕ 中文".encode() in bodies[-1]
    assert agent.usage.cache_hit_rate > 0.5


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key to look up.
    """
    return f"value-of-{key}"


@tool
def explode(reason: str = "boom") -> str:
    """Always fails."""
    raise RuntimeError(f"tool exploded: {reason}")


def test_several_tool_calls_per_step_run_in_order(fake, make_agent, events) -> None:
    agent = make_agent(tools=[lookup, explode])
    fake.add(
        {
            "tool_calls": [
                tool_call("lookup", {"key": "a"}, "c1"),
                tool_call("explode", {"reason": "x"}, "c2"),
                tool_call("lookup", {"key": "b"}, "c3"),
            ]
        },
        {"content": "done"},
    )
    assert agent.run("go") == "done"
    tool_messages = [m for m in request_messages(fake) if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2", "c3"]
    assert tool_messages[0]["content"] == "value-of-a"
    assert tool_messages[1]["content"] == "Error: tool exploded: x"
    assert tool_messages[2]["content"] == "value-of-b"
    kinds = [e["kind"] for e in events]
    assert kinds.count("tool_call") == 3 and kinds.count("tool_result") == 3
    assert kinds[-1] == "done"
    # @tool schemas: name from the function, description from the docstring, required parameters.
    tools = json.loads(fake.completion_requests[0].body)["tools"]
    assert tools[0]["function"]["name"] == "lookup"
    assert tools[0]["function"]["description"] == "Look a key up."
    assert tools[0]["function"]["parameters"]["required"] == ["key"]
    assert (
        tools[0]["function"]["parameters"]["properties"]["key"]["description"]
        == "the key to look up."
    )
    assert "required" not in tools[1]["function"]["parameters"]


def test_unknown_tool_and_malformed_arguments_reach_the_model(fake, make_agent) -> None:
    agent = make_agent(tools=[lookup])
    fake.add(
        {"tool_calls": [tool_call("nope", {}, "c1"), tool_call("lookup", '{"key": "a"', "c2")]},
        {"tool_calls": [tool_call("lookup", {"key": 5}, "c3")]},
        {"content": "fixed"},
    )
    assert agent.run("go") == "fixed"
    messages = request_messages(fake)
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results["c1"].startswith("Error: Unknown tool `nope`") and "lookup" in results["c1"]
    assert results["c2"].startswith("Error:") and "not valid JSON" in results["c2"]
    assert results["c3"].startswith("Error:") and "`key` must be string" in results["c3"]
    # The malformed arguments are kept exactly as the model sent them.
    calls = [c for m in messages if m.get("tool_calls") for c in m["tool_calls"]]
    assert calls[1]["function"]["arguments"] == '{"key": "a"'
    assert_valid_history(agent.messages)


def test_events_and_a_failing_listener_do_not_break_the_loop(fake, client) -> None:
    seen: list[dict] = []

    def listener(event: dict) -> None:
        seen.append(event)
        raise ValueError("listener bug")

    agent = Agent(
        model="fake-model", client=client, memory_dir=False, tools=[lookup], on_event=listener
    )
    fake.add({"tool_calls": [tool_call("lookup", {"key": "z"}, "c1")]}, {"content": "hello world"})
    assert agent.run("hi") == "hello world"
    kinds = [e["kind"] for e in seen]
    assert kinds[0] == "usage"
    assert "tool_call" in kinds and "tool_result" in kinds and kinds[-1] == "done"
    text = "".join(e["text"] for e in seen if e["kind"] == "delta")
    assert text == "hello world"
    call = next(e for e in seen if e["kind"] == "tool_call")
    assert call == {
        "kind": "tool_call",
        "call_id": "c1",
        "name": "lookup",
        "arguments": '{"key": "z"}',
    }
    result = next(e for e in seen if e["kind"] == "tool_result")
    assert result == {
        "kind": "tool_result",
        "call_id": "c1",
        "name": "lookup",
        "ok": True,
        "content": "value-of-z",
    }
    assert seen[-1]["reply"] == "hello world"


def test_usage_accounting(fake, make_agent, events) -> None:
    agent = make_agent()
    fake.add(
        {
            "content": "one",
            "usage": {"prompt_tokens": 100, "completion_tokens": 5, "cached_tokens": 0},
        },
        {
            "content": "two",
            "usage": {"prompt_tokens": 120, "completion_tokens": 7, "cached_tokens": 96},
        },
        {"content": "three", "usage": None},
    )
    agent.run("a")
    agent.run("b")
    agent.run("c")
    usage = agent.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens) == (220, 12, 96)
    assert usage.requests == 3
    assert [t.prompt_tokens for t in usage.turns] == [100, 120, 0]
    assert usage.cache_hit_rate == 96 / 220
    assert usage["cache_hit_rate"] == usage.cache_hit_rate
    per_request = [e for e in events if e["kind"] == "usage"]
    assert per_request[1] == {
        "kind": "usage",
        "prompt_tokens": 120,
        "completion_tokens": 7,
        "cached_tokens": 96,
    }
    assert events[-1]["usage"]["requests"] == 3


def test_history_is_valid_after_a_long_tool_session(fake, make_agent) -> None:
    agent = make_agent(tools=[lookup])
    fake.add(*[{"tool_calls": [tool_call("lookup", {"key": str(i)})]} for i in range(5)])
    fake.add({"content": "end"})
    assert agent.run("loop") == "end"
    assert_valid_history(agent.messages)
    assert agent.messages[-1] == {"role": "assistant", "content": "end"}


def test_memory_changed_events_only_for_real_writes(
    fake, make_agent, events, tmp_path: Path
) -> None:
    agent = make_agent(memory_dir=tmp_path / "m")
    fake.add(
        {"tool_calls": [mem("add", target="user", content="Uses Emacs")]},
        {"tool_calls": [mem("add", target="user", content="Uses Emacs")]},  # already there
        {"content": "ok"},
    )
    agent.run("I use Emacs")
    changed = [e for e in events if e["kind"] == "memory_changed"]
    assert len(changed) == 1
    assert changed[0]["target"] == "user" and changed[0]["action"] == "add"
    assert changed[0]["journal_id"] == agent.memory_store.last_record.id
    results = [e for e in events if e["kind"] == "tool_result"]
    assert [r["ok"] for r in results] == [True, True]


def _chunk(delta: dict, finish: str | None = None) -> str:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def test_tool_call_deltas_from_quirky_providers(fake, make_agent) -> None:
    """No `index` (a new id starts a new call), the full name repeated on every delta, no id at all."""
    fn = "function"
    raw = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"tool_calls": [{"id": "a", "type": fn, fn: {"name": "lookup", "arguments": ""}}]}),
        _chunk({"tool_calls": [{fn: {"name": "lookup", "arguments": '{"key": '}}]}),
        _chunk({"tool_calls": [{fn: {"name": "lookup", "arguments": '"one"}'}}]}),
        _chunk(
            {"tool_calls": [{"id": "b", "type": fn, fn: {"name": "lookup", "arguments": "{}"}}]}
        ),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    no_id = [
        _chunk({"tool_calls": [{"index": 0, fn: {"name": "lookup", "arguments": '{"key": "z"}'}}]}),
        _chunk({}, "tool_calls"),
        "[DONE]",
    ]
    fake.add({"raw_sse": raw}, {"raw_sse": no_id}, {"content": "done"})
    agent = make_agent(tools=[lookup])
    assert agent.run("go") == "done"
    calls = [c for m in agent.messages if m.get("tool_calls") for c in m["tool_calls"]]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("a", "lookup", '{"key": "one"}'),
        ("b", "lookup", "{}"),
        ("call_5_0", "lookup", '{"key": "z"}'),
    ]
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results[0] == "value-of-one"
    assert results[1].startswith("Error: Missing required argument `key`")
    assert results[2] == "value-of-z"
    assert_valid_history(agent.messages)
