"""Building an Agent: memory_dir tri-state, memory_store, sub-agents, client/model configuration."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from my_agent_core.agent import Agent, AgentConfigError, AgentError
from my_agent_core.memory import MemoryStore
from my_agent_core.tools import tool
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import request_messages, tool_call


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def sent_tool_names(fake, number: int = -1) -> list[str]:
    body = json.loads(fake.completion_requests[number].body)
    return [t["function"]["name"] for t in body.get("tools", [])]


def test_memory_dir_none_uses_the_cwd_folder_when_it_exists(
    fake, make_agent, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".my_agent_core" / "memory"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("Existing fact from yesterday\n", encoding="utf-8")
    agent = make_agent(memory_dir=None)
    assert agent.memory_enabled
    assert "Existing fact from yesterday" in agent.system_prompt
    fake.add({"content": "ok"})
    agent.run("hi")
    assert sent_tool_names(fake) == ["memory", "memory_search"]  # the archive is on by default


def test_memory_dir_none_without_the_folder_is_memory_off(fake, make_agent, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    agent = make_agent(memory_dir=None)
    assert not agent.memory_enabled and agent.memory_tool is None
    assert "<MEMORY_CONTEXT>" not in agent.system_prompt
    fake.add(
        {"tool_calls": [tool_call("memory", {"target": "user", "action": "add", "content": "x"})]}
    )
    fake.add({"content": "ok"})
    agent.run("hi")
    assert "tools" not in json.loads(fake.completion_requests[0].body)
    tool_result = next(m for m in request_messages(fake) if m["role"] == "tool")
    assert tool_result["content"].startswith("Error: Unknown tool `memory`")
    assert list(tmp_path.iterdir()) == []  # nothing created


def test_memory_dir_false_ignores_an_existing_folder(make_agent, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / ".my_agent_core" / "memory"
    folder.mkdir(parents=True)
    agent = make_agent(memory_dir=False)
    assert not agent.memory_enabled
    assert list(folder.iterdir()) == []


def test_memory_dir_path_is_created(make_agent, tmp_path):
    target = tmp_path / "deep" / "memory"
    agent = make_agent(memory_dir=str(target))
    assert target.is_dir() and agent.memory_enabled
    assert Path(agent.memory_store.mem_dir) == target


def test_memory_store_wins_over_memory_dir(fake, make_agent, tmp_path):
    store = MemoryStore(
        tmp_path / "store", memory_char_limit=300, user_char_limit=200, author="session-1"
    )
    (tmp_path / "store").mkdir()
    agent = make_agent(memory_dir=False, memory_store=store, tools=[ping])
    assert agent.memory_store is store
    assert "/300 chars" in agent.system_prompt
    fake.add({"content": "ok"})
    agent.run("hi")
    assert sent_tool_names(fake) == ["memory", "ping"]


def test_subagents_never_have_memory(fake, make_agent, tmp_path):
    parent = make_agent(memory_dir=tmp_path / "mem", tools=[ping])
    child = parent.spawn_subagent(instructions="You are a focused helper.")
    assert child.memory_store is None and child.memory_tool is None
    assert child.system_prompt == "You are a focused helper."
    assert child.client is parent.client and child.model == parent.model
    fake.add(
        {"tool_calls": [tool_call("memory", {"target": "memory", "action": "add", "content": "x"})]}
    )
    fake.add({"content": "child done"})
    assert child.run("work") == "child done"
    assert sent_tool_names(fake) == ["ping"]
    assert not (tmp_path / "mem" / "MEMORY.md").exists()
    # A memory tool handed to a sub-agent explicitly is dropped too.
    grandchild = parent.spawn_subagent(tools=[parent.memory_tool, ping])
    assert [t.name for t in grandchild.tools] == ["ping"]


def test_duplicate_tool_names_are_refused(make_agent, tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        make_agent(tools=[ping, ping])
    renamed = tool(name="memory")(lambda: "x")
    with pytest.raises(ValueError, match="memory"):
        make_agent(memory_dir=tmp_path / "m", tools=[renamed])


def test_plain_functions_become_tools(make_agent):
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    agent = make_agent(tools=[shout])
    assert agent.tools[0].name == "shout"
    assert agent.tools[0].execute({"text": "a"}).content == "A"


def test_custom_instructions_and_memory_guidance(make_agent, tmp_path):
    agent = make_agent(instructions="Be terse.", memory_dir=tmp_path / "m")
    assert agent.system_prompt.startswith("Be terse.\n\n")
    for word in ("WHEN", "TARGETS", "SKIP", "<MEMORY_CONTEXT>"):
        assert word in agent.system_prompt
    assert "Long-term memory" not in make_agent(instructions="Be terse.").system_prompt


def test_missing_model_is_a_config_error(client, monkeypatch):
    monkeypatch.delenv("MY_AGENT_MODEL", raising=False)
    with pytest.raises(AgentConfigError, match="MY_AGENT_MODEL") as info:
        Agent(client=client, memory_dir=False)
    assert isinstance(info.value, AgentError) and info.value.kind == "config"


def test_missing_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AgentConfigError, match="OPENAI_API_KEY"):
        Agent(model="m", memory_dir=False)


def test_client_and_model_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("MY_AGENT_MODEL", "env-model")
    agent = Agent(memory_dir=False)
    fake.add({"content": "from env"})
    assert agent.run("hi") == "from env"
    request = fake.completion_requests[-1]
    assert json.loads(request.body)["model"] == "env-model"
    assert request.headers.get("authorization") == "Bearer env-key"


def test_base_url_without_key_works_for_local_endpoints(fake, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    agent = Agent(model="local", memory_dir=False)
    fake.add({"content": "local ok"})
    assert agent.run("hi") == "local ok"


def test_importing_the_agent_does_not_import_openai():
    code = "import sys, my_agent_core.agent; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_reset_reloads_memory_written_by_someone_else(fake, make_agent, tmp_path):
    agent = make_agent(memory_dir=tmp_path / "m")
    MemoryStore(tmp_path / "m", author="user").add("user", "Name is Ada")
    assert "Name is Ada" not in agent.system_prompt
    fake.add({"content": "hi"})
    agent.run("hello")
    agent.reset()
    assert "Name is Ada" in agent.system_prompt
    assert agent.messages == [{"role": "system", "content": agent.system_prompt}]


def test_request_options_are_sent_on_every_request(fake, make_agent):
    agent = make_agent(request_options={"temperature": 0, "stream_options": None})
    fake.add({"content": "a"}, {"content": "b"})
    agent.run("one")
    agent.run("two")
    bodies = [json.loads(r.body) for r in fake.completion_requests]
    assert all(b["temperature"] == 0 and "stream_options" not in b for b in bodies)
    assert agent.usage.requests == 2 and agent.usage.prompt_tokens == 0  # no usage without it
