"""The agent under failure: endpoint errors, timeouts, empty answers, step limits, memory retry storms,
cancellation. After each failure the session must stay valid and keep the prefix invariant."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import openai
import pytest

from my_agent_core.agent import Agent, AgentCancelled, AgentError
from my_agent_core.tools import tool
from tests.support.fake_openai import prefix_extension_problem
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import (
    assert_prefix_chain,
    assert_valid_history,
    request_messages,
    tool_call,
)


@pytest.fixture(autouse=True)
def _every_request_extends_the_last_successful_one(request):
    """Checked after every test here: failures never break the byte-for-byte prefix invariant."""
    fake = request.getfixturevalue("fake") if "fake" in request.fixturenames else None
    yield
    if fake is not None:
        assert_prefix_chain(fake.completion_requests)


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def last_successful_then_next(fake, failed: int) -> tuple[bytes, bytes]:
    """The last body before the `failed` one and the first after it."""
    bodies = [r.body for r in fake.completion_requests]
    return bodies[failed - 1], bodies[failed + 1]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "messages: invalid role"),
        (401, "Incorrect API key"),
        (429, "Rate limit"),
        (500, "overload"),
    ],
)
def test_http_errors_name_status_and_provider_message(fake, make_agent, events, status, message):
    agent = make_agent()
    fake.add({"content": "first"}, {"status": status, "error": {"message": message, "type": "x"}})
    fake.add({"content": "recovered"})
    agent.run("one")
    with pytest.raises(AgentError) as info:
        agent.run("two")
    assert isinstance(info.value, RuntimeError)
    assert str(status) in str(info.value) and message in str(info.value)
    assert info.value.status == status and info.value.kind == "http"
    assert events[-1]["kind"] == "error" and message in events[-1]["message"]
    # The failed turn left nothing behind; the next turn extends the last successful request.
    assert [m["content"] for m in agent.messages[1:]] == ["one", "first"]
    assert agent.run("three") == "recovered"
    assert prefix_extension_problem(*last_successful_then_next(fake, 1)) is None
    assert [m["content"] for m in request_messages(fake)[1:]] == ["one", "first", "three"]


def test_non_json_error_body(fake, make_agent):
    agent = make_agent()
    fake.add({"status": 502, "body": "<html>Bad gateway</html>"})
    with pytest.raises(AgentError, match="502") as info:
        agent.run("hi")
    assert "Bad gateway" in str(info.value)


def test_timeout(fake):
    fake.add({"hang": True}, {"content": "back"})
    client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0, timeout=0.5)
    agent = Agent(model="m", client=client, memory_dir=False)
    with pytest.raises(AgentError, match="timed out") as info:
        agent.run("hi")
    assert info.value.kind == "timeout"
    assert agent.run("again") == "back"
    assert request_messages(fake)[1:] == [{"role": "user", "content": "again"}]


def test_refused_connection():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    agent = Agent(model="m", client=client, memory_dir=False)
    with pytest.raises(AgentError, match="Cannot reach the model endpoint") as info:
        agent.run("hi")
    assert info.value.kind == "connection"
    assert agent.messages == [{"role": "system", "content": agent.system_prompt}]


def test_connection_dropped_mid_stream(fake, make_agent):
    agent = make_agent()
    fake.add({"content": "a long reply that is cut", "chunk_size": 2, "drop_after_chunks": 3})
    fake.add({"content": "ok"})
    with pytest.raises(AgentError):
        agent.run("hi")
    assert agent.run("again") == "ok"
    assert_valid_history(agent.messages)


def test_provider_error_mid_stream(fake, make_agent):
    agent = make_agent()
    fake.add(
        {"content": "partial", "stream_error": {"message": "model overloaded", "type": "server"}}
    )
    with pytest.raises(AgentError, match="model overloaded") as info:
        agent.run("hi")
    assert info.value.kind == "stream"


def test_failure_after_a_tool_step_keeps_completed_steps(fake, make_agent):
    agent = make_agent(tools=[echo])
    fake.add(
        {"tool_calls": [tool_call("echo", {"text": "x"}, "c1")]},
        {"status": 503, "error": {"message": "try later"}},
        {"content": "fine"},
    )
    with pytest.raises(AgentError, match="503"):
        agent.run("step")
    # The completed step (call + result) stays: it was part of a successful exchange.
    assert_valid_history(agent.messages)
    assert agent.messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "x"}
    assert agent.run("next") == "fine"
    bodies = [r.body for r in fake.completion_requests]
    assert prefix_extension_problem(bodies[0], bodies[2]) is None
    assert prefix_extension_problem(bodies[1], bodies[2]) is None


def test_empty_answer_is_retried_once_then_fails(fake, make_agent):
    agent = make_agent()
    fake.add({"content": ""}, {"content": "second try"})
    assert agent.run("hi") == "second try"
    bodies = [r.body for r in fake.completion_requests]
    assert bodies[0] == bodies[1]  # the very same request again
    fake.add({"content": ""}, {"content": "  "}, {"content": "ok"})
    with pytest.raises(AgentError, match="empty reply") as info:
        agent.run("again")
    assert info.value.kind == "empty_reply"
    assert agent.run("third") == "ok"
    # "again" was part of successful (empty) exchanges, so it stays: the next request extends them.
    contents = [m["content"] for m in request_messages(fake)[1:]]
    assert contents == ["hi", "second try", "again", "third"]
    assert_valid_history(agent.messages)


def test_step_limit(fake, make_agent):
    agent = make_agent(tools=[echo], max_steps=2)
    fake.add(*[{"tool_calls": [tool_call("echo", {"text": str(i)}, f"c{i}")]} for i in range(3)])
    fake.add({"content": "after"})
    with pytest.raises(AgentError, match="Step limit") as info:
        agent.run("loop")
    assert info.value.kind == "step_limit"
    assert len(fake.completion_requests) == 3
    tool_results = [m for m in request_messages(fake) if m["role"] == "tool"]
    assert "last tool step" in tool_results[-1]["content"]
    assert "last tool step" not in tool_results[0]["content"]
    assert_valid_history(agent.messages)
    assert agent.run("stop now") == "after"
    assert_valid_history(agent.messages)


def test_three_failed_memory_calls_stop_memory_for_the_run(fake, make_agent, tmp_path: Path):
    agent = make_agent(memory_dir=tmp_path / "mem")
    bad = tool_call(
        "memory", {"target": "memory", "action": "replace", "old_text": "missing", "content": "x"}
    )
    good = tool_call(
        "memory", {"target": "memory", "action": "add", "content": "Should not be saved"}
    )
    fake.add({"tool_calls": [bad, bad]}, {"tool_calls": [bad, good]}, {"tool_calls": [good]})
    fake.add({"content": "giving up on memory"})
    assert agent.run("remember") == "giving up on memory"
    results = [m["content"] for m in request_messages(fake) if m["role"] == "tool"]
    assert len(results) == 5
    assert all(r.startswith("Error:") for r in results)
    assert "not available for the rest of this turn" in results[3]
    assert "not available for the rest of this turn" in results[4]
    assert "not available" not in results[2]
    memory_file = tmp_path / "mem" / "MEMORY.md"
    assert not memory_file.exists() or "Should not be saved" not in memory_file.read_text()
    # The count resets at the next run.
    fake.add({"tool_calls": [good]}, {"content": "saved"})
    assert agent.run("try again") == "saved"
    assert "Should not be saved" in memory_file.read_text(encoding="utf-8")


def test_cancel_from_another_thread_mid_stream(fake, make_agent, events):
    agent = make_agent()
    fake.add({"content": "streaming forever", "chunk_size": 4, "hang_after_chunks": 3})
    fake.add({"content": "after cancel"})
    first_delta = threading.Event()

    def listen(event):
        events.append(event)
        if event["kind"] == "delta":
            first_delta.set()

    agent.on_event = listen
    canceller = threading.Thread(target=lambda: (first_delta.wait(10), agent.cancel()))
    canceller.start()
    with pytest.raises(AgentCancelled) as info:
        agent.run("talk")
    canceller.join()
    assert isinstance(info.value, AgentError) and info.value.kind == "cancelled"
    assert events[-1]["kind"] == "error"
    assert agent.messages == [{"role": "system", "content": agent.system_prompt}]
    assert agent.run("again") == "after cancel"
    assert request_messages(fake)[1:] == [
        {"role": "user", "content": "again"},
    ]


def test_cancel_while_waiting_for_headers(fake, make_agent):
    agent = make_agent()
    fake.add({"hang": True}, {"content": "ok"})

    def cancel_once_the_server_holds_the_request():
        while not fake.completion_requests:
            time.sleep(0.01)
        agent.cancel()

    canceller = threading.Thread(target=cancel_once_the_server_holds_the_request)
    canceller.start()
    with pytest.raises(AgentCancelled):
        agent.run("hi")
    canceller.join()
    assert agent.run("hi") == "ok"


def test_cancel_during_tool_execution_answers_every_call(fake, make_agent):
    holder: dict = {}

    @tool
    def stopper() -> str:
        """Cancels the turn it runs in."""
        holder["agent"].cancel()
        return "stopping"

    agent = make_agent(tools=[stopper, echo])
    holder["agent"] = agent
    fake.add(
        {"tool_calls": [tool_call("stopper", {}, "c1"), tool_call("echo", {"text": "y"}, "c2")]},
        {"content": "resumed"},
    )
    with pytest.raises(AgentCancelled):
        agent.run("go")
    assert_valid_history(agent.messages)
    tool_messages = [m for m in agent.messages if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "stopping"
    assert "cancelled" in tool_messages[1]["content"]
    assert agent.run("continue") == "resumed"
    bodies = [r.body for r in fake.completion_requests]
    assert prefix_extension_problem(bodies[0], bodies[1]) is None


def test_cancel_when_idle_is_a_no_op(fake, make_agent):
    agent = make_agent()
    agent.cancel()
    fake.add({"content": "fine"})
    assert agent.run("hi") == "fine"


async def test_arun_cancelled_by_asyncio(fake, make_agent):
    agent = make_agent()
    fake.add({"content": "never ends", "hang_after_chunks": 2}, {"content": "async ok"})
    got_delta = asyncio.Event()
    loop = asyncio.get_running_loop()
    agent.on_event = lambda e: e["kind"] == "delta" and loop.call_soon_threadsafe(got_delta.set)
    task = asyncio.create_task(agent.arun("hi"))
    await asyncio.wait_for(got_delta.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not agent.running
    assert agent.messages == [{"role": "system", "content": agent.system_prompt}]
    assert await agent.arun("again") == "async ok"


def test_a_second_concurrent_run_is_refused(fake, make_agent):
    agent = make_agent()
    fake.add({"content": "slow", "hang_after_chunks": 1}, {"content": "ok"})
    outcome: list[BaseException] = []

    def first_run():
        try:
            agent.run("a")
        except AgentCancelled as exc:
            outcome.append(exc)

    worker = threading.Thread(target=first_run)
    worker.start()
    while not fake.completion_requests:
        time.sleep(0.01)
    with pytest.raises(AgentError, match="already running"):
        agent.run("b")
    agent.cancel()
    worker.join(10)
    assert outcome and isinstance(outcome[0], AgentCancelled)
    assert agent.run("c") == "ok"


def test_empty_message_is_refused(make_agent):
    with pytest.raises(AgentError, match="empty"):
        make_agent().run("   ")
