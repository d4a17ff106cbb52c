"""In-process checks of the chat's small pieces: the round-2 settings (junk ignored), the secrets kept
out of a command's environment, approval params and events, context validation and the history shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from my_agent_core.coding_tools import ApprovalRequest, Decision
from my_agent_core.coding_tools.commands import is_secret_name, scrubbed_environment
from my_agent_core.lsp.approvals import approval_event, approve_params
from my_agent_core.lsp.attachments import parse_context
from my_agent_core.lsp.chat_sessions import history_json, meta_memory
from my_agent_core.lsp.settings import Settings


def test_round_two_settings_merge_by_layer_and_ignore_junk() -> None:
    init = {
        "chat": {"contextWindow": 9000, "compactAt": 0.5, "sessions": {"maxCount": 3}},
        "tools": {
            "approveEdits": True,
            "allowedCommands": ["pytest*", " pytest* ", 7, "", "x" * 600],
            "ripgrepPath": "/usr/bin/rg",
            "commandTimeout": 30,
        },
        "context": {"maxChars": 500},
        "memory": {"approval": "ask", "provider": "postgres", "semantic": True},
        "appRoot": "/opt/code-server/lib/vscode",
    }
    pulled = {
        "chat": {"compactAt": 2, "sessions": {"maxAgeDays": 0}},  # junk: the layer below wins
        "tools": {"approveEdits": "yes", "allowedCommands": [], "ripgrepPath": "relative/rg"},
        "memory": {"approval": "sometimes", "userProfile": "global", "postgresDsn": "  "},
    }
    s = Settings.resolve([init, pulled], env={})
    assert (s.chat.context_window, s.chat.compact_at) == (9000, 0.5)
    assert (s.chat.max_sessions, s.chat.max_age_days) == (3, 30)
    assert s.tools.approve_edits is True and s.tools.allowed_commands == ()  # a later [] clears
    assert s.tools.ripgrep_path == "/usr/bin/rg" and s.tools.command_timeout == 30
    assert s.context_max_chars == 500 and s.app_root == "/opt/code-server/lib/vscode"
    assert s.layer.approval == "ask" and s.layer.user_profile == "global"
    assert s.layer.provider_settings() == {"semantic": True, "provider": "postgres"}
    only_init = Settings.resolve([init], env={})
    assert only_init.tools.allowed_commands == ("pytest*",)
    defaults = Settings.resolve([{"chat": [], "tools": None, "memory": {"semantic": 1}}], env={})
    assert defaults.chat == Settings().chat and defaults.tools == Settings().tools
    assert defaults.layer == Settings().layer


def test_commands_never_see_the_servers_secrets() -> None:
    env = {
        "OPENAI_API_KEY": "sk-live-0123456789",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "MY_AGENT_PG_DSN": "postgresql://u:pw-0123456789@db/x",
        "MY_AGENT_MODEL": "gpt-x",
        "MY_AGENT_SERVICE_TOKEN": "tok-0123456789",
        "ANTHROPIC_API_KEY": "anthropic-0123456789",
        "COPY_OF_KEY": "prefix sk-live-0123456789 suffix",
        "SHORT": "1",
        "PATH": "/usr/bin",
        "HOME": "/home/me",
    }
    clean = scrubbed_environment(env)
    assert clean == {
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "MY_AGENT_MODEL": "gpt-x",
        "SHORT": "1",
        "PATH": "/usr/bin",
        "HOME": "/home/me",
    }
    assert is_secret_name("openai_api_key") and not is_secret_name("MY_AGENT_PG_PROJECT")


def test_approve_params_and_events(tmp_path: Path) -> None:
    edit = ApprovalRequest(
        kind="edit",
        title="Edit a.py",
        detail="--- a\n+++ b\n",
        path=tmp_path / "a.py",
        new_text="x\n",
    )
    params = approve_params("s1", "call_1", edit)
    assert params == {
        "sessionId": "s1",
        "callId": "call_1",
        "kind": "edit",
        "title": "Edit a.py",
        "detail": "--- a\n+++ b\n",
        "uri": (tmp_path / "a.py").as_uri(),
        "newText": "x\n",
    }
    command = ApprovalRequest(
        kind="command", title="Run `ls`", detail="ls", command="ls", cwd=tmp_path
    )
    assert approve_params("s1", "c", command)["cwd"] == str(tmp_path)
    assert "uri" not in approve_params("s1", "c", command)
    event = approval_event("c", command, Decision.deny("timeout", "slow"))
    assert event == {
        "kind": "approval",
        "call_id": "c",
        "approval_kind": "command",
        "approved": False,
        "reason": "error",  # the protocol has no "timeout"
    }
    assert approval_event("c", edit, Decision.allow("setting"))["reason"] == "setting"


def test_context_is_validated() -> None:
    refs = parse_context(
        [
            {"uri": "file:///a.py"},
            {
                "uri": "file:///b.py",
                "range": {"start": {"line": 4, "character": 2}, "end": {"line": 1, "character": 0}},
            },
        ]
    )
    assert refs[0].range is None
    rng = refs[1].range
    assert rng is not None and (rng.start.line, rng.end.line) == (1, 4)  # reversed selection
    assert parse_context(None) == []
    for bad in ({"uri": "x"}, [{"uri": "\udcff"}], [{"uri": "x", "range": {"start": 1}}]):
        with pytest.raises(JsonRpcException) as info:
            parse_context(bad)
        assert info.value.code == -32602


def test_history_in_protocol_shape() -> None:
    messages = [
        {"role": "system", "content": "never listed"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "text"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        },
    ]
    assert history_json(messages) == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "c1", "name": "read_file", "arguments": "{}"}],
        },
        {"role": "tool", "content": "text", "toolCallId": "c1"},
        {"role": "assistant", "content": "ab"},
    ]
    assert meta_memory({}) is True and meta_memory({"memory": False}) is False


def test_memory_approval_defaults_to_untrusted_and_takes_each_mode() -> None:
    assert Settings().layer.approval == "untrusted"
    assert Settings.resolve([], env={}).layer.approval == "untrusted"
    for mode in ("untrusted", "ask", "auto"):
        layer = {"memory": {"approval": mode}}
        assert Settings.resolve([layer], env={}).layer.approval == mode
        pulled = Settings.resolve([{"memory": {"approval": "auto"}}, layer], env={})
        assert pulled.layer.approval == mode, "the pulled configuration wins"
    assert (
        Settings.resolve([{"memory": {"approval": "never"}}], env={}).layer.approval == "untrusted"
    )
