"""The archive is on by default where users are, not only in the editor: `Agent(memory_dir=...)`,
`my-agent chat` and `my-agent memory` archive turns and what a replace or remove took out of
memory, so `my-agent recall` and the next session find them; `provider="none"`, `--provider none`
and MY_AGENT_MEMORY_PROVIDER=none turn it off; sub-agents and the eval never get one."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import pytest

from my_agent_core import chat_cli
from my_agent_core.agent import Agent, AgentConfigError
from my_agent_core.cli import main
from my_agent_core.memory.providers import MemoryManager
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import request_messages, tool_call


@pytest.fixture(autouse=True)
def no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MY_AGENT_MEMORY_PROVIDER", "MY_AGENT_SEMANTIC", "MY_AGENT_PG_DSN"):
        monkeypatch.delenv(name, raising=False)


def layout(tmp_path: Path) -> Path:
    return tmp_path / "project" / ".my_agent_core" / "memory"


def recall(
    folder: Path, query: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["recall", query, "--dir", str(folder), *extra])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_api_archives_by_default_and_the_next_session_recalls(
    fake: Any, client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mem_dir = layout(tmp_path)
    agent = Agent(model="m", client=client, memory_dir=mem_dir)
    assert agent.provider is not None and agent.provider.active
    assert "memory_search" in [t.name for t in agent.tools]
    fake.add(
        {
            "tool_calls": [
                tool_call(
                    "memory",
                    {
                        "target": "memory",
                        "action": "add",
                        "content": "Deploys run from the blue pipeline.",
                    },
                )
            ]
        },
        {
            "tool_calls": [
                tool_call(
                    "memory", {"target": "memory", "action": "remove", "old_text": "blue pipeline"}
                )
            ]
        },
        {"content": "Noted: the staging password rotates every Tuesday."},
    )
    agent.run("The staging password rotates every Tuesday; deploys used the blue pipeline.")
    manager = agent.provider.manager
    agent.close()
    assert manager._closed  # the agent shut down the archive it made for itself

    code, out = recall(tmp_path / "project", "rotates Tuesday", capsys)
    assert code == 0 and "rotates every Tuesday" in out  # the turn
    code, out = recall(tmp_path / "project", "blue pipeline", capsys)
    assert code == 0 and "blue pipeline" in out  # what the remove took out

    fake.add({"content": "Tuesdays."})
    tomorrow = Agent(model="m", client=client, memory_dir=mem_dir)
    tomorrow.run("When does the staging password rotate?")
    user = request_messages(fake)[1]["content"]
    assert "<recalled_memory>" in user and "rotates every Tuesday" in user
    tomorrow.close()


def test_off_by_keyword_and_by_environment(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem_dir = layout(tmp_path)
    off = Agent(model="m", client=client, memory_dir=mem_dir, provider="none")
    assert off.provider is None and "memory_search" not in [t.name for t in off.tools]
    off.close()
    monkeypatch.setenv("MY_AGENT_MEMORY_PROVIDER", "none")
    env_off = Agent(model="m", client=client, memory_dir=mem_dir)
    assert env_off.provider is None
    env_off.close()
    assert not (tmp_path / "project" / ".my_agent_core" / "archive").exists()


def test_no_memory_no_provider_and_sub_agents_never_get_one(client: Any, tmp_path: Path) -> None:
    assert Agent(model="m", client=client, memory_dir=False).provider is None
    parent = Agent(model="m", client=client, memory_dir=layout(tmp_path))
    assert parent.provider is not None
    child = parent.spawn_subagent()
    assert child.provider is None and child.memory_store is None
    parent.close()
    with pytest.raises(ValueError, match="needs memory"):
        Agent(model="m", client=client, memory_dir=False, provider="archive")


def test_a_folder_outside_a_workspace_gets_none_unless_asked(client: Any, tmp_path: Path) -> None:
    plain = Agent(model="m", client=client, memory_dir=tmp_path / "mem")
    assert plain.provider is None  # the archive lives beside a workspace's .my_agent_core
    with pytest.raises(AgentConfigError, match="per workspace folder"):
        Agent(model="m", client=client, memory_dir=tmp_path / "mem", provider="archive")


def test_a_provider_asked_for_must_work_and_a_given_manager_is_the_callers(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(AgentConfigError, match="Unknown memory provider"):
        Agent(model="m", client=client, memory_dir=layout(tmp_path), provider="no-such")
    monkeypatch.setenv("MY_AGENT_MEMORY_PROVIDER", "no-such")
    with pytest.raises(AgentConfigError, match="Unknown memory provider"):
        Agent(model="m", client=client, memory_dir=layout(tmp_path))
    monkeypatch.delenv("MY_AGENT_MEMORY_PROVIDER")
    given = MemoryManager()
    agent = Agent(model="m", client=client, memory_dir=layout(tmp_path), provider=given)
    assert agent.provider is not None and agent.provider.manager is given
    agent.close()
    assert not given._closed


# ------------------------------------------------------------------------------------ the terminal


def chat(fake: Any, *argv: str, lines: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="my-agent chat")
    chat_cli.add_arguments(parser)
    args = parser.parse_args(["--model", "m", "--base-url", fake.base_url, "--no-tools", *argv])
    stdin = io.StringIO("".join(f"{line}\n" for line in lines))
    return chat_cli.run(args, stdin=stdin, stdout=io.StringIO())


def test_two_terminal_chats_and_cli_removals_are_recalled(
    fake: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    fake.add({"content": "Got it: the release train leaves on Wednesdays."})
    assert chat(fake, lines=["The release train leaves on Wednesdays."]) == 0
    assert "recall archive" in capsys.readouterr().err
    fake.add({"content": "Wednesdays."})
    assert chat(fake, lines=["When does the release train leave?"]) == 0
    second = request_messages(fake)[1]["content"]
    assert "<recalled_memory>" in second and "leaves on Wednesdays" in second

    assert main(["memory", "add", "The build cache lives on the orange volume."]) == 0
    assert main(["memory", "remove", "orange volume"]) == 0
    code, out = recall(tmp_path, "orange volume", capsys)
    assert code == 0 and "orange volume" in out and "removed from MEMORY.md" in out


def test_provider_none_in_the_terminal_keeps_no_archive(
    fake: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    fake.add({"content": "ok"})
    assert chat(fake, "--provider", "none", lines=["hello"]) == 0
    body = fake.completion_requests[0].body.decode()
    assert "memory_search" not in body
    monkeypatch.setenv("MY_AGENT_MEMORY_PROVIDER", "none")
    assert main(["memory", "add", "A fact."]) == 0
    assert main(["memory", "remove", "A fact"]) == 0
    assert not (tmp_path / ".my_agent_core" / "archive").exists()
    monkeypatch.delenv("MY_AGENT_MEMORY_PROVIDER")
    code, out = recall(tmp_path, "fact", capsys)
    assert code == 1 and "no archive yet" in out


def test_an_unusable_provider_asked_for_in_the_chat_is_exit_2(
    fake: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert chat(fake, "--provider", "no-such", lines=["hello"]) == 2
    assert "Unknown memory provider" in capsys.readouterr().err
    assert chat(fake, "--no-memory", "--provider", "archive", lines=["hello"]) == 2
    assert fake.completion_requests == []
