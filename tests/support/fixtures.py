"""Pytest fixtures for agent tests: a running FakeOpenAI, an SDK client on it, an agent factory.

Import them into a test module with `from tests.support.fixtures import *  # noqa: F403`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAI, prefix_extension_problem

__all__ = [
    "assert_prefix_chain",
    "assert_valid_history",
    "client",
    "events",
    "fake",
    "make_agent",
    "request_messages",
    "tool_call",
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def client(fake: FakeOpenAI) -> Any:
    import openai

    sdk = openai.OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0, timeout=30)
    yield sdk
    sdk.close()


@pytest.fixture
def events() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def make_agent(client: Any, events: list[dict[str, Any]]) -> Callable[..., Any]:
    """Build an Agent on the fake server; keyword arguments override the defaults."""
    from my_agent_core.agent import Agent

    def build(**kwargs: Any) -> Any:
        kwargs.setdefault("model", "fake-model")
        kwargs.setdefault("client", client)
        kwargs.setdefault("memory_dir", False)
        kwargs.setdefault("on_event", events.append)
        return Agent(**kwargs)

    return build


def tool_call(name: str, arguments: Any = None, call_id: str | None = None) -> dict[str, Any]:
    """A scripted tool call; dict arguments are JSON-encoded by the server, strings sent verbatim."""
    call: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if call_id:
        call["id"] = call_id
    return call


def assert_prefix_chain(requests: list[Any]) -> None:
    """Each request (raw bodies or RecordedRequests) extends the last successful one before it byte
    for byte (an identical body, as in a retry, counts as an extension)."""
    last_ok: bytes | None = None
    for number, request in enumerate(requests, start=1):
        body = request if isinstance(request, bytes) else request.body
        if last_ok is not None and body != last_ok:
            problem = prefix_extension_problem(last_ok, body)
            assert problem is None, (
                f"request {number} does not extend the last successful one: {problem}"
            )
        if isinstance(request, bytes) or request.succeeded:
            last_ok = body


def assert_valid_history(messages: list[dict[str, Any]]) -> None:
    """System first; every assistant tool call is answered by tool messages right after it."""
    assert messages[0]["role"] == "system"
    pending: list[str] = []
    for message in messages[1:]:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, f"tool result without a call: {message}"
            pending.remove(message["tool_call_id"])
            continue
        assert not pending, f"tool calls left without results: {pending}"
        if message["role"] == "assistant" and message.get("tool_calls"):
            pending = [call["id"] for call in message["tool_calls"]]
            for call in message["tool_calls"]:
                assert isinstance(call["function"]["arguments"], str)
    assert not pending, f"history ends with unanswered tool calls: {pending}"


def request_messages(fake: FakeOpenAI, number: int = -1) -> list[dict[str, Any]]:
    """The `messages` of a recorded completion request."""
    return json.loads(fake.completion_requests[number].body)["messages"]
