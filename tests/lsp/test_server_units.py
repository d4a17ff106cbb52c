"""In-process tests of the server's pure parts: settings, buffer merging, positions, raw-param checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from my_agent_core.lsp import params as P
from my_agent_core.lsp.buffer_merge import buffer_with_changes
from my_agent_core.lsp.chat_events import chat_event
from my_agent_core.lsp.convert import PositionConverter, line_index, minimal_edit
from my_agent_core.lsp.folders import memory_file_of
from my_agent_core.lsp.settings import Settings


def change(before: str | None, after: str | None) -> SimpleNamespace:
    return SimpleNamespace(index=0, before=before, after=after)


# ----- settings --------------------------------------------------------------------------------------
def test_settings_fall_back_to_the_environment() -> None:
    s = Settings.resolve([], env={"MY_AGENT_MODEL": "m-env", "OPENAI_BASE_URL": "http://x/v1"})
    assert (s.model, s.base_url) == ("m-env", "http://x/v1")
    assert (s.memory_char_limit, s.user_char_limit, s.near_budget_share) == (2200, 1375, 0.9)
    assert s.limit("memory") == 2200 and s.limit("user") == 1375


def test_settings_later_layers_win_and_junk_is_ignored() -> None:
    init = {"model": "m-init", "memory": {"memoryCharLimit": 500, "userCharLimit": 300}}
    pulled = {
        "model": "m-pulled",
        "baseUrl": "  ",
        "memory": {"memoryCharLimit": True, "userCharLimit": -4, "nearBudgetShare": 0.5},
    }
    s = Settings.resolve([init, pulled], env={"OPENAI_BASE_URL": "http://env/v1"})
    assert s.model == "m-pulled"
    assert s.base_url == "http://env/v1"
    assert (s.memory_char_limit, s.user_char_limit, s.near_budget_share) == (500, 300, 0.5)
    assert Settings.resolve([None, [], "x", {"memory": []}], env={}).model is None


def test_untrusted_folders_are_matched_by_path(tmp_path: Path) -> None:
    folder = tmp_path / "a b"
    s = Settings.resolve([], env={}, untrusted=[folder.as_uri(), 7, None, "relative/x"])
    assert not s.is_trusted(folder)
    assert s.is_trusted(tmp_path)


# ----- memory files and positions --------------------------------------------------------------------
def test_memory_file_of(tmp_path: Path) -> None:
    uri = (tmp_path / "ws" / ".my_agent_core" / "memory" / "USER.md").as_uri()
    mf = memory_file_of(uri)
    assert mf is not None and mf.target == "user" and mf.folder == tmp_path / "ws"
    assert memory_file_of((tmp_path / "MEMORY.md").as_uri()) is None
    assert memory_file_of("untitled:Untitled-1") is None
    assert memory_file_of(42) is None  # type: ignore[arg-type]


def offset_to_position(text: str, offset: int, encoding: str = "utf-16"):
    return PositionConverter(line_index(text), encoding).position(offset)


def test_offset_to_position_counts_utf16_units_and_all_line_breaks() -> None:
    text = "a😀b\r\nx\ry\nz"
    assert offset_to_position(text, 3).character == 4  # 😀 is two UTF-16 units
    assert offset_to_position(text, 3, "utf-32").character == 3
    assert offset_to_position(text, 3, "utf-8").character == 6
    pos = offset_to_position(text, text.index("y"))
    assert (pos.line, pos.character) == (2, 0)
    pos = offset_to_position(text, len(text))
    assert (pos.line, pos.character) == (3, 1)


# ----- merging a server-side write into a dirty buffer -------------------------------------------------
def test_added_entry_is_appended_after_the_users_unsaved_text() -> None:
    buffer = "uses uv\n§\nUNSAVED user note\n"
    merged = buffer_with_changes(buffer, [change(None, "agent fact")])
    assert merged == "uses uv\n§\nUNSAVED user note\n§\nagent fact\n"


def test_replace_and_remove_touch_only_their_entry() -> None:
    buffer = "one\n§\ntwo\n§\nthree UNSAVED\n"
    assert buffer_with_changes(buffer, [change("two", "TWO")]) == "one\n§\nTWO\n§\nthree UNSAVED\n"
    assert buffer_with_changes(buffer, [change("two", None)]) == "one\n§\nthree UNSAVED\n"
    assert buffer_with_changes(buffer, [change("one", None)]) == "two\n§\nthree UNSAVED\n"


def test_entry_the_user_already_edited_is_not_clobbered() -> None:
    buffer = "one EDITED\n§\ntwo\n"
    # the agent replaced "one", which the user is rewriting: keep their text, add the new entry
    assert buffer_with_changes(buffer, [change("one", "uno")]) == "one EDITED\n§\ntwo\n§\nuno\n"
    assert buffer_with_changes(buffer, [change("gone", None)]) == buffer
    assert buffer_with_changes(buffer, [change(None, "two")]) == buffer  # already there


def test_merge_keeps_crlf_and_fills_an_empty_buffer() -> None:
    assert buffer_with_changes("a\r\n§\r\nb\r\n", [change(None, "c\nd")]) == (
        "a\r\n§\r\nb\r\n§\r\nc\r\nd\r\n"
    )
    assert buffer_with_changes("  \n", [change(None, "first")]) == "first\n"


def test_minimal_edit() -> None:
    assert minimal_edit("abc", "abc") is None
    assert minimal_edit("a\nb\n", "a\nX\nb\n") == (2, 2, "X\n")
    start, end, text = minimal_edit("a\r\nb", "a\r\nc\r\nb")  # type: ignore[misc]
    assert "a\r\nb"[:start] + text + "a\r\nb"[end:] == "a\r\nc\r\nb"
    assert "a\r\nb"[start - 1 : start] != "\r"


# ----- raw params ------------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [[], "x", 3, True, [{"a": 1}]])
def test_params_must_be_an_object(raw: object) -> None:
    with pytest.raises(P.RequestError) as info:
        P.to_params(raw)
    assert info.value.code == -32602


def test_param_checks() -> None:
    assert P.to_params(None) == {}
    with pytest.raises(P.RequestError, match="must not be empty"):
        P.req_str({"m": "  "}, "m", non_empty=True)
    with pytest.raises(P.RequestError, match="is required"):
        P.req_str({"m": None}, "m")
    with pytest.raises(P.RequestError, match="must be a string"):
        P.opt_str({"m": 1}, "m")
    with pytest.raises(P.RequestError, match="must be one of"):
        P.req_choice({"t": "MEMORY"}, "t", ("memory", "user"))
    with pytest.raises(P.RequestError, match="must be an integer"):
        P.opt_int({"n": True}, "n", minimum=1, maximum=5)
    with pytest.raises(P.RequestError, match="between"):
        P.opt_int({"n": 0}, "n", minimum=1, maximum=5)


def test_chat_event_gives_each_kind_its_wire_form() -> None:
    usage = {
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "cached_tokens": None,
        "requests": 1,
        "cache_hit_rate": 0.5,
    }
    event = chat_event("s1", {"kind": "done", "reply": "r", "usage": usage})
    assert event == {
        "sessionId": "s1",
        "kind": "done",
        "reply": "r",
        "usage": {
            "promptTokens": 3,
            "completionTokens": 1,
            "cachedTokens": None,
            "requests": 1,
            "cacheHitRate": 0.5,
        },
    }
    call = chat_event(
        "s", {"kind": "tool_call", "call_id": "c", "name": "read_file", "arguments": '{"a": 1}'}
    )
    assert call == {
        "sessionId": "s",
        "kind": "tool_call",
        "callId": "c",
        "name": "read_file",
        "arguments": '{"a": 1}',
    }
    error = chat_event("s", {"kind": "error", "message": "m", "errorKind": "http"})
    assert error == {"sessionId": "s", "kind": "error", "message": "m", "errorKind": "http"}
    plain = chat_event(
        "s", {"kind": "usage", "prompt_tokens": 5, "completion_tokens": 2, "cached_tokens": 4}
    )
    assert "cacheDrop" not in plain
    drop = {"reason": "expired", "expected": 9, "got": 0}
    dropped = chat_event(
        "s",
        {
            "kind": "usage",
            "prompt_tokens": 5,
            "completion_tokens": 2,
            "cached_tokens": None,
            "cache_drop": drop,
        },
    )
    assert dropped["cacheDrop"] == drop


def test_startup_does_not_import_the_agent_or_openai() -> None:
    """Nor the chat, nor the workspace rules: the first answers wait for none of them."""
    deferred = (
        "openai",
        "my_agent_core.agent",
        "httpx",
        "my_agent_core.lsp.chat",
        "my_agent_core.context",
        "my_agent_core.memory.render",
    )
    code = (
        "import sys; from my_agent_core.lsp.server import build_server; ls = build_server(); "
        f"bad = [m for m in {deferred!r} if m in sys.modules]; "
        "bad += ['chat built'] if ls.chat_started else []; "
        "bad += ['snapshots'] if ls.snapshot_sessions(__import__('pathlib').Path('/'), 'memory') else []; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_serve_from_the_module_does_not_build_the_command_line() -> None:
    """`python -m my_agent_core serve` (what the editor runs) goes straight to the server."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "my_agent_core", "serve"],
        input=b"",
        capture_output=True,
        timeout=60,
    )
    imported = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines()}
    assert "my_agent_core.lsp.server" in imported
    assert not imported & {"my_agent_core.cli", "my_agent_core.chat_cli", "argparse"}
    assert result.returncode == 0


def test_a_folder_index_starts_after_the_request_that_asked(tmp_path: Path) -> None:
    """didOpen publishes first; the walk of the folder starts from a callback posted after it."""
    from lsprotocol import types

    ls, _sent, posted, folder = in_process_server(tmp_path)
    ls.protocol.client_capabilities = types.ClientCapabilities()  # as `initialize` leaves it
    checks = ls.workspace_checks.checks_for(folder)
    assert not checks.ready.is_set() and checks.index is None
    starts = [fn for fn, _args in posted if fn == checks.start]
    assert starts, posted
    starts[0]()
    assert checks.ready.wait(30) and checks.index is not None


# ----- change sources, in process ----------------------------------------------------------------------
def in_process_server(tmp_path: Path) -> tuple[Any, list[tuple[str, Any]], list[Any], Path]:
    """A server object without I/O: notifications and posted callbacks are recorded."""
    from my_agent_core.lsp.folders import FolderState
    from my_agent_core.lsp.server import MyAgentServer
    from my_agent_core.lsp.uris import norm_path

    ls = MyAgentServer()
    sent: list[tuple[str, Any]] = []
    posted: list[Any] = []
    ls.protocol.notify = lambda method, params=None: sent.append((method, params))  # type: ignore[method-assign]
    ls.post = lambda fn, *args: posted.append((fn, args))  # type: ignore[method-assign]
    folder = tmp_path / "ws"
    (folder / ".my_agent_core" / "memory").mkdir(parents=True)
    (folder / ".my_agent_core" / "memory" / "MEMORY.md").write_text("one\n", encoding="utf-8")
    state = FolderState(uri=folder.as_uri(), path=norm_path(folder))
    ls.memory.folders[state.path] = state
    ls.memory.baseline(state)
    return ls, sent, posted, folder


def test_sources_of_changes_seen_by_the_watcher(tmp_path: Path) -> None:
    from my_agent_core.memory import MemoryStore

    ls, sent, posted, folder = in_process_server(tmp_path)
    mf = memory_file_of((folder / ".my_agent_core" / "memory" / "MEMORY.md").as_uri())
    assert mf is not None

    # our own panel write whose watcher echo arrives before the posted announcement
    ls.memory.store(ls.memory.folders[mf.folder]).add("memory", "two")
    ls.memory.file_changed(mf)
    assert sent == []
    for fn, args in posted:
        fn(*args)
    assert [(m, p["source"]) for m, p in sent] == [("myAgent/memory/changed", "user")]
    ls.memory.file_changed(mf)  # the echo once more: nothing new
    assert len(sent) == 1

    MemoryStore(folder / ".my_agent_core" / "memory", author="cli").add("memory", "three")
    ls.memory.file_changed(mf)
    assert sent[-1][1]["source"] == "cli" and sent[-1][1]["entries"] == ["one", "two", "three"]

    mf.path.write_text("one\n§\ntwo\n§\nthree\n§\nfour\n", encoding="utf-8")
    ls.memory.file_changed(mf)
    assert sent[-1][1]["source"] == "disk"
    ls.memory.file_changed(mf, saved_in_editor=True)  # a save of the same text: no change
    assert len(sent) == 3
    mf.path.write_text("one\n", encoding="utf-8")
    ls.memory.file_changed(mf, saved_in_editor=True)
    assert sent[-1][1]["source"] == "user"


# ----- exit: no request goes unanswered ------------------------------------------------------------
def test_a_finished_request_counts_as_running_until_its_answer_is_sent() -> None:
    """`exit` between a handler's end and pygls' answer callback must still wait for the answer."""
    import asyncio

    from my_agent_core.lsp.server import MyAgentProtocol, build_server

    protocol = build_server().protocol
    assert isinstance(protocol, MyAgentProtocol)
    seen: dict[str, bool] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()

        def between_end_and_answer() -> None:  # queued before the task's own done callbacks
            seen["done"] = task.done()
            seen["counted"] = task in protocol.running_requests()

        async def handler() -> str:
            loop.call_soon(between_end_and_answer)
            return "answer"

        task = asyncio.ensure_future(handler())
        protocol._request_futures[7] = task
        task.add_done_callback(lambda _: protocol._request_futures.pop(7))
        await protocol.settle(timeout=1)
        assert protocol.running_requests() == []

    asyncio.run(scenario())
    assert seen == {"done": True, "counted": True}


def test_every_error_kind_has_its_json_rpc_code() -> None:
    from my_agent_core.agent import ERROR_KINDS, AgentCancelled, AgentError
    from my_agent_core.lsp.chat import _request_error, error_code

    special = {"config": -32001, "invalid": -32602, "cancelled": -32800}
    for kind in ERROR_KINDS:
        assert error_code(kind) == special.get(kind, -32002), kind
    assert _request_error(AgentError("bad gateway", kind="http", status=502)).code == -32002
    assert _request_error(AgentCancelled()).code == -32800
    assert _request_error(RuntimeError("what")).code == -32002  # not an agent error: the endpoint's
