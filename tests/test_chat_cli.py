"""`my-agent chat` (chat_cli.run) against the fake server: streaming, /memory, /new, /exit, config errors."""

from __future__ import annotations

import argparse
import io

from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import request_messages, tool_call

from my_agent_core import chat_cli


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="my-agent chat")
    chat_cli.add_arguments(parser)
    return parser.parse_args(list(argv))


def chat(args: argparse.Namespace, lines: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = chat_cli.run(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)), stdout=out)
    return code, out.getvalue()


def test_chat_session_with_memory_commands(fake, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake.add(
        {
            "content": "Noted. ",
            "tool_calls": [
                tool_call("memory", {"target": "user", "action": "add", "content": "Likes Go"})
            ],
        },
        {"content": "I will remember that you like Go."},
        {"content": "Hello again."},
    )
    args = parse("--model", "fake-model", "--base-url", fake.base_url, "--api-key", "k")
    code, out = chat(args, ["I like Go", "/memory", "/new", "hi", "/usage", "/exit", "never sent"])
    assert code == 0
    assert "I will remember that you like Go." in out
    assert "USER.md: 8/1375 chars, 1 entries" in out and "- Likes Go" in out
    assert "new session" in out
    assert "Hello again." in out
    assert "requests 1" in out  # usage of the new session only
    # /new started a session whose snapshot holds the entry written before.
    system = request_messages(fake)[0]["content"]
    assert "Likes Go" in system
    assert (tmp_path / ".my_agent_core" / "memory" / "USER.md").exists()
    assert "-> memory" in capsys.readouterr().err
    assert len(fake.completion_requests) == 3


def test_chat_without_memory_and_end_of_input(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake.add({"content": "plain"})
    args = parse("--model", "m", "--base-url", fake.base_url, "--no-memory")
    code, out = chat(args, ["hello", "/memory"])
    assert code == 0 and "plain" in out and "Memory is off." in out
    assert list(tmp_path.iterdir()) == []


def test_chat_reports_endpoint_errors_and_continues(fake, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    fake.add({"status": 400, "error": {"message": "kaput"}}, {"content": "better"})
    args = parse("--model", "m", "--base-url", fake.base_url, "--no-memory")
    code, out = chat(args, ["one", "two"])
    assert code == 0 and "better" in out
    err = capsys.readouterr().err
    assert "400" in err and "kaput" in err
    assert [m["content"] for m in request_messages(fake)[1:]] == ["two"]


def test_no_model_configured_exits_2(monkeypatch, capsys):
    monkeypatch.delenv("MY_AGENT_MODEL", raising=False)
    code, _ = chat(parse("--base-url", "http://127.0.0.1:9/v1"), ["hi"])
    assert code == 2
    assert "no model configured" in capsys.readouterr().err


def test_no_endpoint_configured_exits_2(monkeypatch, capsys):
    monkeypatch.setenv("MY_AGENT_MODEL", "m")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, _ = chat(parse(), ["hi"])
    assert code == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err


def test_environment_fallbacks(fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_AGENT_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    fake.add({"content": "env ok"})
    code, out = chat(parse("--no-memory"), ["hi"])
    assert code == 0 and "env ok" in out
    assert fake.completion_requests[0].headers["authorization"] == "Bearer env-key"
