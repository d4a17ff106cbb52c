"""One way to build an agent (`AgentConfig` + `build_agent`), and the model client as a Protocol.

`Agent(...)` with the documented keywords is `build_agent(AgentConfig(...))`; the factory resolves
(model, client, memory folder, store, memory tool) and the constructor only assembles. The client
the agent talks to is anything shaped like `ModelClient`: `openai.OpenAI` everywhere else in the
tests, an in-process stand-in here (checked by mypy, with a broken twin that mypy rejects).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from my_agent_core.agent import (
    Agent,
    AgentConfig,
    AgentConfigError,
    AgentEvent,
    SessionStore,
    build_agent,
)
from my_agent_core.agent.config import resolve
from my_agent_core.tools import tool
from tests.support.fixtures import *  # noqa: F403
from tests.support.scripted_client import ScriptedClient

ROOT = Path(__file__).resolve().parents[1]


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def test_the_keywords_and_the_config_build_the_same_agent(client, tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "MEMORY.md").write_text("A fact\n", encoding="utf-8")
    by_keywords = Agent(model="m", client=client, memory_dir=tmp_path / "m", tools=[ping])
    config = AgentConfig(model="m", client=client, memory_dir=tmp_path / "m", tools=[ping])
    by_config = build_agent(config)
    assert by_config.system_prompt == by_keywords.system_prompt
    assert by_config.tool_schemas == by_keywords.tool_schemas
    assert "A fact" in by_config.system_prompt
    assert [t.name for t in by_config.tools] == ["memory", "ping"]


def test_resolving_does_the_io_and_assembling_does_none(client, tmp_path: Path) -> None:
    folder = tmp_path / "new" / "memory"
    parts = resolve(AgentConfig(model="m", client=client, memory_dir=folder))
    assert folder.is_dir()  # a path: created when the agent is built
    assert parts.memory_store is not None and parts.memory_tool is not None
    assert parts.memory_tool.name == "memory"
    agent = Agent.__new__(Agent)
    agent._assemble(parts)
    assert not (folder / "MEMORY.md").exists() and not hasattr(agent, "system_prompt")
    agent._open(None, None)  # the session starts here: the snapshot is read now
    assert "<MEMORY_CONTEXT>" in agent.system_prompt


@pytest.mark.parametrize(
    ("config", "error", "match"),
    [
        (AgentConfig(client=None, model=None), AgentConfigError, "MY_AGENT_MODEL"),
        (AgentConfig(model="m", max_steps=0), ValueError, "max_steps"),
        (AgentConfig(model="m", memory_dir=True), TypeError, "memory_dir"),
        (AgentConfig(model="m", session_meta={"x": object()}), ValueError, "JSON"),
    ],
)
def test_a_config_that_cannot_work_is_refused_before_anything_runs(
    client, monkeypatch: pytest.MonkeyPatch, config: AgentConfig, error: type, match: str
) -> None:
    monkeypatch.delenv("MY_AGENT_MODEL", raising=False)
    with pytest.raises(error, match=match):
        build_agent(dataclasses.replace(config, client=client))


def test_a_resumed_session_gets_its_store_from_memory_dir(fake, client, tmp_path: Path) -> None:
    """What the terminal does: one config for a new and a resumed session alike."""
    sessions = SessionStore(tmp_path)
    memory = tmp_path / ".my_agent_core" / "memory"
    first = build_agent(AgentConfig(model="m", client=client, memory_dir=memory, sessions=sessions))
    fake.add({"content": "hello"})
    first.run("hi")
    first.close()
    record = sessions.load(first.session_id)
    again = build_agent(
        AgentConfig(client=client, memory_dir=memory, sessions=sessions, resume=record)
    )
    assert again.model == "m" and again.session_id == first.session_id
    assert again.memory_store is not None and again.memory_store.mem_dir == memory
    assert again.messages == first.messages


def test_an_in_process_client_drives_a_turn() -> None:
    client = ScriptedClient("hello there")
    events: list[AgentEvent] = []
    agent = build_agent(
        AgentConfig(model="m", client=client, memory_dir=False, on_event=events.append)
    )
    assert agent.run("hi") == "hello there"
    request = client.chat.completions.requests[0]
    assert request["model"] == "m" and request["stream"] is True
    assert request["messages"][-1] == {"role": "user", "content": "hi"}
    assert all(stream.closed for stream in client.chat.completions.streams)
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "delta" and kinds[-2:] == ["usage", "done"]


@pytest.mark.timeout(300)
def test_mypy_accepts_the_stand_in_and_rejects_a_broken_one(tmp_path: Path) -> None:
    broken = tmp_path / "broken_client.py"
    broken.write_text(
        textwrap.dedent(
            """
            from my_agent_core.agent import ModelClient

            class Completions:
                def make(self) -> None: ...

            class Chat:
                completions = Completions()

            class NoCreate:
                chat = Chat()

            def client() -> ModelClient:
                return NoCreate()
            """
        )
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version",
            "3.10",
            "--follow-imports",
            "silent",
            "--no-error-summary",
            "--cache-dir",
            str(ROOT / ".cache" / "mypy-tests"),
            str(ROOT / "tests" / "support" / "scripted_client.py"),
            str(broken),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"MYPYPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert errors, out.stdout + out.stderr
    # by file name: mypy replays a cached module's errors with the path it had then
    assert all(line.split(":")[0].endswith("broken_client.py") for line in errors), errors
    assert any("ModelClient" in line for line in errors), json.dumps(errors)
