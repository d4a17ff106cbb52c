"""The coding tools in an editor chat, through the real server: the fake model calls them, the test
client plays VS Code (open buffers, Approve / Deny, `workspace/applyEdit`, our save of clean documents).

Covers every tool's success and error paths, unsaved buffers, path escapes, approvals approved /
denied / unanswered (Stop while a card waits), edits through applyEdit and on disk, conflicts, a
command timeout and a cancel killing their process groups, settings pre-approvals, the secrets kept
out of a command's environment, editor context in the user message, untrusted folders, and the byte
prefix of every request across all of it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.lsp.chat_harness import (
    AGENT_EDIT_LABEL,
    PG_SECRET,
    SECRET,
    Editor,
    alive,
    assert_prefix_chain,
    calls,
    events,
    kill_quietly,
    results,
    send,
    session_requests,
    start_assistant,
    start_chat,
)
from tests.lsp.conftest import make_folder, new_id, request, stop_server, wait_until
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.asyncio(loop_scope="module")

APP = "def greet(name):\n    return 'hi ' + name\n"


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("tools")
    proj = make_folder(base, "proj", memory="uses pytest\n")
    (proj / "src").mkdir()
    (proj / "src" / "app.py").write_text(APP, encoding="utf-8")
    (proj / "README.md").write_text("# demo\nRun the tests with `pytest`.\n", encoding="utf-8")
    (proj / "notes.txt").write_text("line one\nline two\nline three\n", encoding="utf-8")
    (proj / ".gitignore").write_text("build/\n", encoding="utf-8")
    (proj / "build").mkdir()
    (proj / "build" / "out.txt").write_text("generated\n", encoding="utf-8")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET outside\n", encoding="utf-8")
    (proj / "link_out").symlink_to(outside / "secret.txt")
    untrusted = make_folder(base, "untrusted", memory="untrusted note\n")
    (untrusted / "file.txt").write_text("hello\n", encoding="utf-8")
    return {"proj": proj, "outside": outside, "untrusted": untrusted, "base": base}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(fake: FakeOpenAI, roots: dict[str, Path]) -> AsyncIterator[tuple[Any, Editor]]:
    client, editor = await start_assistant(
        fake, [roots["proj"], roots["untrusted"]], untrusted=[roots["untrusted"]]
    )
    yield client, editor
    await stop_server(client)


@pytest.fixture
def client(server: tuple[Any, Editor]) -> Any:
    return server[0]


@pytest.fixture
def editor(server: tuple[Any, Editor]) -> Editor:
    ed = server[1]
    ed.answer = "approve"
    ed.before_answer = None
    ed.approvals.clear()
    ed.edits.clear()
    ed.saved.clear()
    return ed


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def last_request(fake: FakeOpenAI) -> dict[str, Any]:
    body: dict[str, Any] = fake.completion_requests[-1].json
    return body


# ---- what a session gets ---------------------------------------------------------------------------


async def test_trusted_session_has_the_tools_and_an_untrusted_one_none(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    session = await start_chat(client, roots["proj"])
    fake.add({"content": "ok"})
    await send(client, session, "marker-offered hello")
    body = last_request(fake)
    assert tool_names(body) == [
        "memory",
        "read_file",
        "list_files",
        "search_text",
        "edit_file",
        "write_file",
        "run_command",
    ]
    system = body["messages"][0]["content"]
    assert "You work in the user's project folder" in system and "<MEMORY_CONTEXT>" in system

    other = await start_chat(client, roots["untrusted"])
    fake.add(calls(("read_file", {"path": "file.txt"})), {"content": "cannot"})
    await send(client, other, "marker-untrusted read it")
    body = fake.completion_requests[-2].json
    assert "tools" not in body
    system = body["messages"][0]["content"]
    assert "MEMORY_CONTEXT" not in system and "project folder" not in system
    (result,) = results(client, other)
    assert result["ok"] is False and "Unknown tool `read_file`" in result["content"]
    assert not (roots["untrusted"] / ".my_agent_core" / "sessions").exists()  # not persisted
    listed = await request(client, "myAgent/chat/sessions", {"folder": roots["untrusted"].as_uri()})
    assert [s["sessionId"] for s in listed["sessions"]] == [other]  # open here, never on disk


async def test_read_file_sees_the_unsaved_buffer_and_paths_cannot_escape(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    app = proj / "src" / "app.py"
    editor.open(app, "def greet(name):\n    return 'UNSAVED ' + name\n")
    session = await start_chat(client, proj)
    secret = roots["outside"] / "secret.txt"
    fake.add(
        calls(
            ("read_file", {"path": "src/app.py"}),
            ("read_file", {"path": "../outside/secret.txt"}),
            ("read_file", {"path": str(secret)}),
            ("read_file", {"path": "link_out"}),
            ("read_file", {"path": "src/app.py", "start_line": 2, "end_line": 2}),
        ),
        {"content": "read"},
    )
    await send(client, session, "marker-read show me")
    got = results(client, session)
    assert [r["ok"] for r in got] == [True, False, False, False, True]
    assert "UNSAVED" in got[0]["content"] and "unsaved text from the editor" in got[0]["content"]
    assert "climbs out of the folder" in got[1]["content"]
    assert "absolute path outside the folder" in got[2]["content"]
    assert "symbolic link" in got[3]["content"]
    assert got[4]["content"].splitlines()[1].lstrip() == "2\t    return 'UNSAVED ' + name"
    assert all("TOP SECRET" not in r["content"] for r in got)
    assert app.read_text(encoding="utf-8") == APP  # reading never writes
    editor.close(app)


async def test_search_text_sees_the_unsaved_buffer(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    app = proj / "src" / "app.py"
    editor.open(app, "def greet(name):\n    return 'UNSAVED-SEARCH ' + name\n")
    session = await start_chat(client, proj)
    fake.add(
        calls(
            ("search_text", {"query": "UNSAVED-SEARCH"}), ("search_text", {"query": "return 'hi '"})
        ),
        {"content": "found"},
    )
    await send(client, session, "marker-search-unsaved find it")
    found, stale = results(client, session)
    assert found["ok"] and "src/app.py:2:     return 'UNSAVED-SEARCH ' + name" in found["content"]
    assert found["content"].endswith("[searched the unsaved editor text of src/app.py]")
    assert "src/app.py:" not in stale["content"]  # the saved text no longer answers for it
    editor.close(app)


async def test_list_and_search_succeed_and_fail_with_clear_errors(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path]
) -> None:
    session = await start_chat(client, roots["proj"])
    fake.add(
        calls(
            ("list_files", {}),
            ("list_files", {"path": "nope"}),
            ("search_text", {"query": "greet"}),
            ("search_text", {"query": "(", "regex": True}),
            ("search_text", {"query": ""}),
            ("list_files", {"glob": "*.md"}),
        ),
        {"content": "found"},
    )
    await send(client, session, "marker-find where")
    got = results(client, session)
    assert [r["ok"] for r in got] == [True, False, True, False, False, True]
    listing = got[0]["content"]
    assert "src/app.py" in listing and "README.md" in listing and "build/out.txt" not in listing
    assert "nope" in got[1]["content"]
    assert "src/app.py:1:" in got[2]["content"]
    assert "regex" in got[3]["content"].lower()
    assert "README.md" in got[5]["content"] and "app.py" not in got[5]["content"]


async def test_every_tool_reports_its_errors(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    (proj / "dup.txt").write_text("same\nsame\n", encoding="utf-8")
    session = await start_chat(client, proj)
    fake.add(
        calls(
            ("read_file", {"path": "missing.py"}),
            ("read_file", {"path": "src"}),
            ("edit_file", {"path": "src/app.py", "old_text": "not there", "new_text": "x"}),
            ("edit_file", {"path": "dup.txt", "old_text": "same", "new_text": "other"}),
            ("write_file", {"path": ".my_agent_core/memory/MEMORY.md", "content": "forged"}),
            ("write_file", {"path": "../escape.txt", "content": "out"}),
            ("run_command", {"command": "   "}),
            ("run_command", {"command": "true", "timeout_s": -1}),
            ("edit_file", {"path": "src/app.py"}),
        ),
        {"content": "errors seen"},
    )
    await send(client, session, "marker-errors try things")
    got = results(client, session)
    assert [r["ok"] for r in got] == [False] * 9
    texts = [r["content"] for r in got]
    assert texts[0].startswith("Error:") and "missing.py" in texts[0]
    assert "list_files" in texts[1]
    assert "not found" in texts[2]
    assert "occurs 2 times" in texts[3]
    assert "memory" in texts[4]
    assert "climbs out" in texts[5]
    assert "empty" in texts[6]
    assert "timeout_s" in texts[7]
    assert "old_text" in texts[8] or "required" in texts[8]
    assert not editor.approvals  # nothing was asked: every call failed before
    assert (proj / "dup.txt").read_text(encoding="utf-8") == "same\nsame\n"
    assert "forged" not in (proj / ".my_agent_core" / "memory" / "MEMORY.md").read_text("utf-8")
    assert not (roots["base"] / "escape.txt").exists()


# ---- edits -------------------------------------------------------------------------------------------


async def test_an_approved_edit_of_an_open_file_goes_through_the_editor_and_a_command_sees_it(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    app = proj / "src" / "app.py"
    uri = editor.open(app)
    session = await start_chat(client, proj)
    fake.add(
        calls(
            (
                "edit_file",
                {
                    "path": "src/app.py",
                    "old_text": "return 'hi ' + name",
                    "new_text": "return 'hello ' + name",
                },
            )
        ),
        calls(("run_command", {"command": "cat src/app.py"})),
        {"content": "edited and checked"},
    )
    await send(client, session, "marker-edit-open change it")
    edited = APP.replace("'hi '", "'hello '")
    try:
        first, second = editor.approvals
        (edit_call, command_call) = events(client, session, "tool_call")
        assert first["sessionId"] == session and first["callId"] == edit_call["callId"]
        assert first["kind"] == "edit" and first["title"] == "Edit src/app.py"
        assert "-    return 'hi ' + name" in first["detail"]
        assert "+    return 'hello ' + name" in first["detail"]
        assert first["uri"] == app.resolve().as_uri() and first["newText"] == edited
        assert second["kind"] == "command" and second["detail"] == "cat src/app.py"
        assert second["callId"] == command_call["callId"]
        assert second["cwd"] == os.path.realpath(proj)
        (params,) = editor.edits
        (change,) = params.edit.document_changes
        assert change.text_document.uri == uri and change.text_document.version == 1
        assert (params.label or "").startswith(AGENT_EDIT_LABEL)
        assert editor.docs[uri].text == edited and editor.saved == [uri]
        assert app.read_text(encoding="utf-8") == edited
        got = results(client, session)
        assert got[0]["ok"] and "Edited src/app.py" in got[0]["content"]
        assert got[1]["ok"] and "'hello '" in got[1]["content"]  # the command saw it on disk
        approvals = events(client, session, "approval")
        assert [(a["approvalKind"], a["approved"], a["reason"]) for a in approvals] == [
            ("edit", True, "user"),
            ("command", True, "user"),
        ]
        assert [a["callId"] for a in approvals] == [edit_call["callId"], command_call["callId"]]
    finally:
        editor.close(app)
        app.write_text(APP, encoding="utf-8")


async def test_a_dirty_buffer_gets_the_edit_but_is_not_saved(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    notes = roots["proj"] / "notes.txt"
    disk = notes.read_text(encoding="utf-8")
    dirty = disk + "typed by the user\n"
    uri = editor.open(notes, dirty)
    session = await start_chat(client, roots["proj"])
    fake.add(
        calls(("edit_file", {"path": "notes.txt", "old_text": "line two", "new_text": "LINE 2"})),
        {"content": "done"},
    )
    await send(client, session, "marker-dirty edit")
    try:
        assert results(client, session)[0]["ok"]
        assert editor.docs[uri].text == dirty.replace("line two", "LINE 2")
        assert editor.saved == [] and notes.read_text(encoding="utf-8") == disk
    finally:
        editor.close(notes)


async def test_edits_of_closed_files_and_new_files_are_written_on_disk(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    notes = proj / "notes.txt"
    session = await start_chat(client, proj)
    fake.add(
        calls(
            ("edit_file", {"path": "notes.txt", "old_text": "line two", "new_text": "line 2"}),
            ("write_file", {"path": "pkg/new_module.py", "content": "VALUE = 1\n"}),
        ),
        {"content": "written"},
    )
    await send(client, session, "marker-disk write")
    try:
        assert [r["ok"] for r in results(client, session)] == [True, True]
        assert notes.read_text(encoding="utf-8") == "line one\nline 2\nline three\n"
        assert (proj / "pkg" / "new_module.py").read_text(encoding="utf-8") == "VALUE = 1\n"
        assert not editor.edits  # no editor involved for files that are not open
        titles = [a["title"] for a in editor.approvals]
        assert titles == ["Edit notes.txt", "Create pkg/new_module.py"]
        assert "newText" in editor.approvals[1] and editor.approvals[1]["newText"] == "VALUE = 1\n"
    finally:
        notes.write_text("line one\nline two\nline three\n", encoding="utf-8")


async def test_a_denied_edit_and_a_denied_command_leave_no_trace(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    editor.answer = "deny"
    session = await start_chat(client, proj)
    fake.add(
        calls(
            ("edit_file", {"path": "src/app.py", "old_text": "'hi '", "new_text": "'bye '"}),
            ("run_command", {"command": "touch made-by-denied.txt; sleep 30 & echo started"}),
        ),
        {"content": "ok, I will not"},
    )
    await send(client, session, "marker-deny do it")
    got = results(client, session)
    assert [r["ok"] for r in got] == [False, False]
    assert "declined" in got[0]["content"] and "Do not retry" in got[0]["content"]
    assert "declined" in got[1]["content"]
    assert (proj / "src" / "app.py").read_text(encoding="utf-8") == APP
    assert not (proj / "made-by-denied.txt").exists()
    approvals = events(client, session, "approval")
    assert [(a["approved"], a["reason"]) for a in approvals] == [(False, "user"), (False, "user")]
    assert not editor.edits


async def test_the_user_typing_while_the_card_is_open_is_a_conflict(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    app = proj / "src" / "app.py"
    editor.open(app)
    typed = APP + "# typed while the card was open\n"
    editor.before_answer = lambda params: editor.type(app, typed)
    session = await start_chat(client, proj)
    fake.add(
        calls(("edit_file", {"path": "src/app.py", "old_text": "'hi '", "new_text": "'yo '"})),
        {"content": "conflict seen"},
    )
    await send(client, session, "marker-conflict edit")
    try:
        (got,) = results(client, session)
        assert got["ok"] is False and "changed in the editor" in got["content"]
        assert editor.docs[app.as_uri()].text == typed and not editor.edits
        assert app.read_text(encoding="utf-8") == APP
    finally:
        editor.close(app)


# ---- commands ----------------------------------------------------------------------------------------


async def test_a_command_timeout_kills_its_whole_process_group(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    pid_file = proj / "child.pid"
    session = await start_chat(client, proj)
    fake.add(
        calls(
            (
                "run_command",
                {"command": "sleep 300 & echo $! > child.pid; wait", "timeout_s": 1},
            )
        ),
        {"content": "it timed out"},
    )
    await send(client, session, "marker-timeout run")
    pid = int(pid_file.read_text().strip())
    try:
        (got,) = results(client, session)
        assert got["ok"] is False and "did not finish within 1 s" in got["content"]
        assert not alive(pid)
    finally:
        kill_quietly(pid)
        pid_file.unlink()


async def test_secrets_stay_out_of_a_commands_environment(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    session = await start_chat(client, roots["proj"])
    fake.add(calls(("run_command", {"command": "env"})), {"content": "printed"})
    await send(client, session, "marker-env show it")
    (got,) = results(client, session)
    assert got["ok"] and "PAGER=cat" in got["content"]
    assert SECRET not in got["content"] and PG_SECRET not in got["content"]
    assert "OPENAI_API_KEY" not in got["content"] and "MY_AGENT_PG_DSN" not in got["content"]
    assert "pg-password" not in got["content"]


async def test_a_commands_output_streams_as_events_of_its_call_before_the_result(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    session = await start_chat(client, roots["proj"])
    fake.add(
        calls(("run_command", {"command": "echo one; sleep 1.5; echo two >&2; echo three"})),
        {"content": "ran"},
    )
    await send(client, session, "marker-live run")
    every = events(client, session)
    (call,) = [e for e in every if e["kind"] == "tool_call"]
    output = [e for e in every if e["kind"] == "command_output"]
    assert output and all(e["callId"] == call["callId"] for e in output)
    assert "".join(e["text"] for e in output if e["stream"] == "stdout") == "one\nthree\n"
    assert "".join(e["text"] for e in output if e["stream"] == "stderr") == "two\n"
    kinds = [e["kind"] for e in every]
    assert kinds.index("tool_result") > max(i for i, k in enumerate(kinds) if k == "command_output")
    assert len(output) >= 2, "the first line went out while the command still ran"


# ---- stop ----------------------------------------------------------------------------------------------


async def test_stop_during_a_command_kills_it_and_the_session_goes_on(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    pid_file = proj / "running.pid"
    session = await start_chat(client, proj)
    fake.add(calls(("run_command", {"command": "echo $$ > running.pid; sleep 300"})))
    msg_id = new_id()
    task = asyncio.ensure_future(send(client, session, "marker-stop-cmd run", msg_id=msg_id))
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=20)
    pid = int(pid_file.read_text().strip())
    assert alive(pid)
    client.cancel_request(types.CancelParams(id=msg_id))
    try:
        with pytest.raises(JsonRpcException) as info:
            await asyncio.wait_for(task, timeout=30)
        assert info.value.code == -32800
        assert not alive(pid)
        fake.add({"content": "still here"})
        assert (await send(client, session, "are you there?"))["reply"] == "still here"
        assert_prefix_chain(session_requests(fake, "marker-stop-cmd"))
        last = fake.completion_requests[-1].json["messages"]
        stopped = [m for m in last if m["role"] == "tool"]
        assert stopped and "cancelled" in stopped[-1]["content"]
    finally:
        kill_quietly(pid)
        pid_file.unlink()


async def test_stop_while_a_card_waits_cancels_the_approval_request(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    editor.answer = "hang"
    session = await start_chat(client, proj)
    fake.add(calls(("run_command", {"command": "touch never-ran.txt"})))
    msg_id = new_id()
    task = asyncio.ensure_future(send(client, session, "marker-stop-card run", msg_id=msg_id))
    await wait_until(lambda: editor.approvals, timeout=20)
    call_id = editor.approvals[0]["callId"]
    client.cancel_request(types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(task, timeout=30)
    assert info.value.code == -32800
    await wait_until(lambda: call_id in editor.cancelled, timeout=10)  # $/cancelRequest arrived
    (approval,) = events(client, session, "approval")
    assert approval["callId"] == call_id and approval["approved"] is False
    assert approval["reason"] == "cancelled"
    assert not (proj / "never-ran.txt").exists()
    editor.answer = "approve"
    fake.add({"content": "back"})
    assert (await send(client, session, "again"))["reply"] == "back"
    assert_prefix_chain(session_requests(fake, "marker-stop-card"))


async def test_the_prefix_holds_across_tools_approvals_denials_and_cancels(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    session = await start_chat(client, proj)
    script = [
        ("read the readme", [calls(("read_file", {"path": "README.md"})), {"content": "read"}]),
        (
            "edit, denied",
            [
                calls(("write_file", {"path": "x.txt", "content": "x"})),
                {"content": "understood"},
            ],
        ),
        ("run ls", [calls(("run_command", {"command": "ls"})), {"content": "listed"}]),
        ("memory", [calls(("memory", {"target": "memory", "action": "add", "content": "ls ok"}))]),
    ]
    answers = iter(["deny", "approve"])
    editor.answer = lambda params: next(answers)
    for number, (text, responses) in enumerate(script):
        fake.add(*responses)
        if text == "memory":
            fake.add({"content": "saved"})
        await send(client, session, f"marker-prefix {number}: {text}")
    # a cancelled turn in the middle of a tool step, then more turns
    editor.answer = "hang"
    fake.add(calls(("run_command", {"command": "echo hi"})))
    msg_id = new_id()
    task = asyncio.ensure_future(send(client, session, "cancel me", msg_id=msg_id))
    await wait_until(lambda: len(editor.approvals) == 3, timeout=20)
    client.cancel_request(types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(task, timeout=30)
    editor.answer = "approve"
    fake.add(calls(("search_text", {"query": "pytest"})), {"content": "the end"})
    await send(client, session, "last")
    records = session_requests(fake, "marker-prefix 0")
    assert len(records) >= 9
    assert_prefix_chain(records)
    system = {json.loads(r.body)["messages"][0]["content"] for r in records}
    assert len(system) == 1
    (proj / "x.txt").unlink(missing_ok=True)
    memory = proj / ".my_agent_core" / "memory" / "MEMORY.md"
    memory.write_text("uses pytest\n", encoding="utf-8")


# ---- settings ------------------------------------------------------------------------------------------


async def test_settings_pre_approve_edits_and_listed_commands(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    proj = make_folder(tmp_path, "pre", memory="x\n")
    (proj / "a.txt").write_text("alpha\n", encoding="utf-8")
    client, editor = await start_assistant(
        fake,
        [proj],
        settings={"tools": {"approveEdits": True, "allowedCommands": ["echo *", 7, ""]}},
    )
    try:
        editor.answer = "deny"
        session = await start_chat(client, proj)
        fake.add(
            calls(
                ("edit_file", {"path": "a.txt", "old_text": "alpha", "new_text": "beta"}),
                ("run_command", {"command": "echo pre-approved"}),
                ("run_command", {"command": "echo sneaky; touch sneaky.txt"}),
            ),
            {"content": "done"},
        )
        await send(client, session, "marker-settings go")
        got = results(client, session)
        assert [r["ok"] for r in got] == [True, True, False]
        assert (proj / "a.txt").read_text(encoding="utf-8") == "beta\n"
        assert "pre-approved" in got[1]["content"]
        assert not (proj / "sneaky.txt").exists()
        assert [a["detail"] for a in editor.approvals] == ["echo sneaky; touch sneaky.txt"]
        approvals = events(client, session, "approval")
        assert [(a["approvalKind"], a["approved"], a["reason"]) for a in approvals] == [
            ("edit", True, "setting"),
            ("command", True, "setting"),
            ("command", False, "user"),
        ]
    finally:
        await stop_server(client)


# ---- editor context ------------------------------------------------------------------------------------


async def test_editor_context_goes_into_that_turns_user_message(
    client: Any, fake: FakeOpenAI, editor: Editor, roots: dict[str, Path]
) -> None:
    proj = roots["proj"]
    notes = proj / "notes.txt"
    uri = editor.open(notes, "line one\nUNSAVED two 😀 end\nline three\n")
    session = await start_chat(client, proj)
    system = (await request(client, "myAgent/chat/systemPrompt", {"sessionId": session}))["text"]
    selection = {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}
    secret = (roots["outside"] / "secret.txt").as_uri()
    fake.add({"content": "I see it"})
    await send(
        client,
        session,
        "marker-context what is this?",
        context=[
            {"uri": uri, "range": selection},
            {"uri": (proj / "README.md").as_uri()},
            {"uri": secret},
            {"uri": "untitled:Untitled-1"},
            {"uri": (proj / "gone.py").as_uri()},
        ],
    )
    editor.close(notes)
    body = last_request(fake)
    assert body["messages"][0]["content"] == system  # never the system prompt
    user = body["messages"][-1]
    assert user["role"] == "user" and user["content"].startswith("marker-context what is this?")
    content = user["content"]
    assert "<editor_context>" in content and "UNSAVED two 😀 end" in content
    assert "notes.txt · lines 2-2" in content and "line three" not in content
    assert "Run the tests with `pytest`." in content  # a whole file, read from disk
    assert "TOP SECRET" not in content and "outside the folder" in content
    assert content.count("[UNAVAILABLE:") == 3
    # the next turn carries none of it
    fake.add({"content": "plain"})
    await send(client, session, "next")
    assert last_request(fake)["messages"][-1] == {"role": "user", "content": "next"}


@pytest.mark.parametrize(
    "context",
    [
        "file:///x",
        [{"uri": 5}],
        [{"range": {}}],
        [{"uri": "file:///x", "range": {"start": {"line": -1, "character": 0}}}],
        [{"uri": "file:///x", "range": {"start": {"line": 0}, "end": {"line": 0}}}],
        [{"uri": "file:///x"}] * 21,
    ],
)
async def test_malformed_context_is_32602(
    client: Any, fake: FakeOpenAI, roots: dict[str, Path], context: Any
) -> None:
    session = await start_chat(client, roots["proj"])
    served = len(fake.completion_requests)
    with pytest.raises(JsonRpcException) as info:
        await send(client, session, "hi", context=context)
    assert info.value.code == -32602 and "context" in info.value.message
    assert len(fake.completion_requests) == served


@pytest.mark.parametrize("where", ["appRoot", "ripgrepPath"])
async def test_search_uses_vscodes_ripgrep_or_the_configured_one(
    fake: FakeOpenAI, tmp_path: Path, where: str
) -> None:
    real = shutil.which("rg")
    if real is None:
        pytest.skip("ripgrep is not installed (apt-get install ripgrep)")
    app_root = tmp_path / "vscode-app"
    bundled = app_root / "node_modules" / "@vscode" / "ripgrep" / "bin" / "rg"
    bundled.parent.mkdir(parents=True)
    log = tmp_path / "rg-calls.log"
    bundled.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n', encoding="utf-8")
    bundled.chmod(0o755)
    proj = make_folder(tmp_path, "rgproj", memory="x\n")
    (proj / "main.py").write_text("needle = 1\n", encoding="utf-8")
    settings = (
        {"appRoot": str(app_root)}
        if where == "appRoot"
        else {"tools": {"ripgrepPath": str(bundled)}}
    )
    client, _ = await start_assistant(
        fake,
        [proj],
        settings=settings,
        env={"PATH": "/nonexistent"},  # no rg on PATH
    )
    try:
        session = await start_chat(client, proj)
        fake.add(calls(("search_text", {"query": "needle"})), {"content": "found"})
        await send(client, session, "marker-rg find it")
        (got,) = results(client, session)
        assert got["ok"] and "main.py:1: needle = 1" in got["content"]
        assert "needle" in log.read_text(encoding="utf-8")  # the search went through that rg
    finally:
        await stop_server(client)
