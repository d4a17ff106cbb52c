"""The coding assistant in a real VS Code (code-server 4.100.3 + chromium), against the local fake model.

One code-server, tests in file order like a user's session:
1. the model reads a file, proposes an edit; the chat (a view container of its own, a one-line header)
   scrolls the approval card into view and focuses it (screenshot); Open Diff opens VS Code's diff
   editor with Approve / Deny in its title bar (screenshot); Approve there applies the edit through the
   editor (the open buffer and its undo see it), closes the diff, and the card says which line changed;
   the extension saves the clean document, and the command the model runs next (approved with the
   keyboard) sees the edit on disk; its card holds its output; a path in the reply opens the file;
3. a denied command (denied with the keyboard) leaves no trace: no file it would create, no process;
4. a running command shows its output live with the elapsed time; Stop says "stopped";
5. the window is reloaded (a new extension host, a new language server): once the extension is active
   again, the transcript comes back with its cards, and the next message continues the session byte for
   byte at the model endpoint.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import vscode_e2e as v
from chat_page import card, chat, press, reply
from e2e_session import (
    FakeModel,
    Session,
    command_title,
    open_view,
    repo_python,
    start_session,
    stop_session,
    wait_for_activation,
    wait_until,
)
from tests.support.fake_openai import prefix_extension_problem

pytestmark = pytest.mark.e2e

APP = "def greet(name):\n    return 'hi ' + name\n"
EDITED = APP.replace("'hi '", "'hello '")
EDIT = {
    "path": "src/app.py",
    "old_text": "return 'hi ' + name",
    "new_text": "return 'hello ' + name",
}
EDIT_REPLY = "Done: greet() in `src/app.py:2` now says hello; nothing to note in MEMORY.md."
EDIT_REPLY_SHOWN = "Done: greet() in src/app.py:2 now says hello; nothing to note in MEMORY.md."
DENIED = "touch denied-marker.txt && sleep 4242"
DENIED_REPLY = "Understood: I did not run it."
LIVE = "echo $$ > live.pid; for i in 1 2 3; do echo tick $i; sleep 1; done; sleep 4343"
AFTER_RELOAD = "Yes, I still remember: greet() says hello now."


@pytest.fixture(scope="module")
def workspace_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("assistant-src") / "workspace"
    mem = src / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("Tests run with `python -m pytest -q`.\n", encoding="utf-8")
    (src / "src").mkdir()
    (src / "src" / "app.py").write_text(APP, encoding="utf-8")
    (src / "README.md").write_text("# greeter\n", encoding="utf-8")
    return src


@pytest.fixture(scope="module")
def vscode(
    vsix: Path,
    fake_model: FakeModel,
    workspace_src: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Session]:
    settings = {
        "myAgent.python.interpreter": repo_python(),
        "myAgent.baseUrl": fake_model.base_url,
        "myAgent.model": "fake-model",
        "myAgent.memory.provider": "none",
    }
    session = start_session(
        "assistant",
        tmp_path_factory.mktemp("vscode-assistant"),
        vsix,
        settings,
        workspace_src=workspace_src,
    )
    yield session
    stop_session(session)


TAB_LABELS = """return await page.locator('.tabs-container .tab').evaluateAll(
    (ts) => ts.map((t) => (t.getAttribute('aria-label') || '') + (t.classList.contains('dirty') ? ' [dirty]' : '')));"""


ROOM = """
const frame = await h.chatFrame();
const box = async (sel) => (await frame.locator(sel).first().boundingBox()) || { x: 0, y: 0, width: 0, height: 0 };
const transcript = await box('#transcript');
const header = await box('header.header');
const card = await box(`.approval[data-call-id="${args.callId}"]`);
return { transcript: transcript.height, header: header.height,
         cardVisible: card.height > 0 && card.y >= transcript.y - 1 && card.y + Math.min(card.height, 60) <= transcript.y + transcript.height + 1,
         focus: await h.chatFocus(frame) };
"""

TOOL_ROWS = "return await h.toolRows(await h.chatFrame())"


def tool_rows(s: Session) -> list[dict]:
    rows = s.js(TOOL_ROWS)
    assert isinstance(rows, list)
    return rows


def row(s: Session, call_id: str) -> dict:
    return next(r for r in tool_rows(s) if r["callId"] == call_id)


def kept_cards(s: Session) -> int:
    """Approval cards in the chat's kept transcripts (workspace storage, one file per session)."""
    found = 0
    storage = s.server.user_data_dir / "User" / "workspaceStorage"
    for path in storage.glob(f"*/{s.ext_id}/transcripts/*.json"):
        with contextlib.suppress(OSError, ValueError):
            turns = json.loads(path.read_text(encoding="utf-8"))["turns"]
            found += sum(1 for t in turns for p in t["parts"] if p["kind"] == "approval")
    return found


def keys(s: Session, combo: str) -> None:
    """A key press where the focus is (a keybinding of the extension)."""
    s.js("await page.keyboard.press(args.combo); await h.sleep(200);", combo=combo)


def wait_cursor_line(s: Session, line: int) -> str:
    return wait_until(
        lambda: (
            (p := s.js("return await h.cursorPosition()")) and f"Ln {line}," in str(p) and str(p)
        ),
        20,
        f"the cursor on line {line}",
    )


def tool_results(request: dict) -> list[str]:
    return [str(m.get("content")) for m in request["json"]["messages"] if m["role"] == "tool"]


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def kill_group_quietly(pid: int) -> None:
    """Stops what a failed test left running (a command runs in a process group of its own)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def processes_with(text: str) -> list[str]:
    """Command lines of running processes that contain `text` (zombies excluded)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        if text in cmdline and stat[stat.rfind(b")") + 2 :].split()[0] != b"Z":
            found.append(cmdline)
    return found


def test_an_approved_edit_reaches_the_open_editor_and_the_disk(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    app = s.workspace / "src" / "app.py"
    s.js("await h.openFile(args.rel)", rel="src/app.py")
    fake_model.add(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": EDIT}]},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "cat src/app.py"}}]},
        {"content": EDIT_REPLY},
    )
    sent_before = len(fake_model.requests())
    open_view(s, "myAgent.chat")
    chat(s, "Make greet() say hello instead of hi.")
    edit = card(s)
    assert edit["kind"] == "edit" and "src/app.py" in edit["title"], edit
    assert {"approve", "deny", "openDiff"} <= set(edit["buttons"]), edit
    # Room to work: the chat has a container of its own and a one-line header; the card that arrived
    # is in view and has the focus (the user was in the chat).
    room = s.js(ROOM, callId=edit["callId"])
    assert isinstance(room, dict)
    assert room["transcript"] > 300 and room["header"] <= 34, room
    assert room["cardVisible"] and room["focus"]["callId"] == edit["callId"], room
    read = next(r for r in tool_rows(s) if not r["card"])
    assert read["summary"] == "Read src/app.py" and read["state"] == "done", read
    s.shot("approval-card")
    assert app.read_text(encoding="utf-8") == APP, "nothing may change before the approval"
    # Open Diff: VS Code's diff editor, the current text against the proposal, Approve / Deny on top.
    press(s, edit["callId"], "openDiff")
    wait_until(
        lambda: any("proposed by the agent" in t for t in s.js(TAB_LABELS)),  # type: ignore[union-attr]
        20,
        "the diff editor tab",
    )
    approve_title = command_title("myAgent.chat.approvePending").split(": ", 1)[1]
    deny_title = command_title("myAgent.chat.denyPending").split(": ", 1)[1]
    actions = wait_until(
        lambda: (
            (a := s.js("return await h.editorTitleActions()"))
            and any(x.startswith(approve_title) for x in a)  # type: ignore[union-attr]
            and a
        ),
        20,
        "Approve in the diff editor's title bar",
    )
    assert any(x.startswith(deny_title) for x in actions), actions  # type: ignore[union-attr]
    s.js("await h.sleep(800)")  # let the diff render before the screenshot
    s.shot("open-diff")
    diff_text = s.js(
        """return await page.locator('.editor-group-container.active .monaco-diff-editor').first().innerText();"""
    )
    assert "hello" in str(diff_text) and "hi" in str(diff_text), diff_text
    s.js(
        """await page.locator(`.editor-group-container.active .editor-actions .action-label[aria-label^="${args.t}"]`).first().click();""",
        t=approve_title,
    )
    card(s, "approved", edit["callId"])
    # Decided: the diff closes, and the card says which line changed.
    wait_until(
        lambda: not any("proposed by the agent" in t for t in s.js(TAB_LABELS)),  # type: ignore[union-attr]
        20,
        "the diff editor to close after the decision",
    )
    command = card(s, "pending", other_than=edit["callId"])
    assert command["kind"] == "command" and command["callId"] != edit["callId"], command
    note = wait_until(lambda: row(s, edit["callId"])["note"], 20, "the edit's outcome in its card")
    assert note.startswith("Changed src/app.py, line 2."), note
    # Before the command runs the edited file is on disk (saved by the extension: it was clean).
    on_disk = wait_until(
        lambda: app.read_text(encoding="utf-8") == EDITED, 20, "the edit on disk before the command"
    )
    assert on_disk
    # The keyboard: Focus Chat puts the focus on the waiting card, the approve key approves it.
    keys(s, "Control+Alt+A")
    wait_until(
        lambda: (
            (f := s.js("return await h.chatFocus(await h.chatFrame())"))
            and f["callId"] == command["callId"]
        ),  # type: ignore[index]
        20,
        "the focus on the command's card",
    )
    keys(s, "Control+Alt+Y")
    card(s, "approved", command["callId"])
    transcript = reply(s, EDIT_REPLY_SHOWN)
    s.shot("edit-approved")
    assert "Stopped." not in transcript and "Error" not in transcript, transcript
    # The command's card holds its output, in order: no separate row above it.
    ran = row(s, command["callId"])
    assert (
        ran["card"] and ran["summary"] == "Ran cat src/app.py: exit 0" and ran["state"] == "done"
    ), ran
    assert "return 'hello ' + name" in ran["output"], ran
    assert [r["callId"] for r in tool_rows(s)].count(command["callId"]) == 1
    # A path in the reply opens the file at its line; a bare file name is not a web link.
    links = s.js(
        """const frame = await h.chatFrame();
           return await frame.locator('.markdown a').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href')]));"""
    )
    assert links == [["src/app.py:2", "src/app.py#L2"]], links
    s.js(
        """const frame = await h.chatFrame();
           await frame.locator('.markdown a.path-link').first().click();"""
    )
    wait_until(
        lambda: any("app.py" in t and "proposed" not in t for t in s.js(TAB_LABELS)),  # type: ignore[union-attr]
        20,
        "app.py opened from the link",
    )
    wait_cursor_line(s, 2)
    cards = s.js("return await h.approvalCards(await h.chatFrame())")
    assert [c["status"] for c in cards] == ["approved", "approved"], cards  # type: ignore[union-attr]
    # "Open at the change" on the edit's card: the file, the changed line selected.
    s.js("await page.keyboard.press('Control+Home')")
    press(s, edit["callId"], "openChange")
    assert "selected" in wait_cursor_line(s, 2)
    requests = fake_model.requests()[sent_before:]
    assert len(requests) == 4, [r["json"]["messages"][-1] for r in requests]
    results = tool_results(requests[-1])
    assert "return 'hi ' + name" in results[0]  # read_file
    assert results[1].startswith("Edited src/app.py"), results[1]
    assert "return 'hello ' + name" in results[2], results[2]  # the command saw the saved file
    # The editor shows the edited file, saved (its tab is not dirty), and its undo knows the edit.
    s.js("await page.locator('.tabs-container .tab[aria-label*=\"app.py\"]').first().click()")
    text = s.js("return await h.editorFullText()")
    assert text == EDITED, text
    tabs = s.js(TAB_LABELS)
    assert not any("app.py" in t and "[dirty]" in t for t in tabs), tabs  # type: ignore[union-attr]
    s.js(
        """await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
           await page.keyboard.press('Control+Z'); await h.sleep(300);"""
    )
    undone = s.js("return await h.editorFullText()")
    assert undone == APP, f"the editor's undo does not know the agent's edit: {undone!r}"
    s.js("await page.keyboard.press('Control+Shift+Z'); await h.sleep(300);")
    assert s.js("return await h.editorFullText()") == EDITED
    s.js("await page.keyboard.press('Control+S'); await h.sleep(300);")
    assert app.read_text(encoding="utf-8") == EDITED


def test_the_chat_keys_are_not_taken_by_vscode(vscode: Session) -> None:
    """Focus Chat / Approve / Deny use keys none of VS Code's own default keybindings use."""
    s = vscode
    s.palette("Preferences: Open Default Keyboard Shortcuts (JSON)")
    wait_until(
        lambda: any("Default Keybindings" in t for t in s.js(TAB_LABELS)),  # type: ignore[union-attr]
        20,
        "the default keybindings",
    )
    defaults = json.loads(
        re.sub(r"^\s*//.*$", "", str(s.js("return await h.editorFullText()")), flags=re.M)
    )
    pkg = json.loads((v.package_dir() / "package.json").read_text(encoding="utf-8"))
    ours = {k["key"] for k in pkg["contributes"]["keybindings"]}
    assert ours == {"ctrl+alt+a", "ctrl+alt+y", "ctrl+alt+d"}, ours
    taken = [
        d for d in defaults if d.get("key") in ours and not d["command"].startswith("myAgent.")
    ]
    assert taken == [], taken
    s.js("await page.keyboard.press('Control+W')")


def test_a_denied_command_leaves_no_trace(vscode: Session, fake_model: FakeModel) -> None:
    s = vscode
    fake_model.add(
        {"tool_calls": [{"name": "run_command", "arguments": {"command": DENIED}}]},
        {"content": DENIED_REPLY},
    )
    sent_before = len(fake_model.requests())
    open_view(s, "myAgent.chat")
    chat(s, "Create the marker file and wait.")
    command = card(s)
    assert command["kind"] == "command", command
    s.shot("command-card")
    # The card took the focus (the user was typing in the chat): the deny key answers it.
    focus = s.js("return await h.chatFocus(await h.chatFrame())")
    assert focus["callId"] == command["callId"], focus  # type: ignore[index]
    keys(s, "Control+Alt+D")
    card(s, "denied", command["callId"])
    transcript = reply(s, DENIED_REPLY)
    s.shot("command-denied")
    assert DENIED_REPLY in transcript
    assert not (s.workspace / "denied-marker.txt").exists()
    assert processes_with("sleep 4242") == []
    final = fake_model.requests()[sent_before:][-1]
    result = tool_results(final)[-1]  # the history holds the earlier turns too
    assert result.startswith("Error:") and "declined" in result, result


def test_a_running_command_shows_its_output_live_and_stop_says_stopped(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    pid_file = s.workspace / "live.pid"
    fake_model.add({"tool_calls": [{"name": "run_command", "arguments": {"command": LIVE}}]})
    open_view(s, "myAgent.chat")
    chat(s, "Count to three, slowly, then wait.")
    command = card(s)
    press(s, command["callId"], "approve")
    pid = int(
        wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), 30, "live.pid")
    )
    try:
        live = wait_until(
            lambda: (r := row(s, command["callId"])) and "tick 2" in r["output"] and r,
            60,
            "the command's output while it runs",
        )
        assert live["state"] == "running" and live["status"] == "running…", live
        assert live["summary"].startswith("Running echo $$ > live.pid; for i in 1 2 3"), live
        assert re.fullmatch(r"\d+ s", live["elapsed"]), live
        s.shot("command-running")
        s.js("const frame = await h.chatFrame(); await frame.locator('button#stop').click();")
        stopped = wait_until(
            lambda: (r := row(s, command["callId"])) and r["state"] == "stopped" and r,
            30,
            "the command's status after Stop",
        )
        assert stopped["status"] == "stopped" and "tick 2" in stopped["output"], stopped
        wait_until(lambda: not alive(pid), 30, "the stopped command's processes to end")
        s.shot("command-stopped")
    finally:
        kill_group_quietly(pid)
        pid_file.unlink(missing_ok=True)


def test_a_reloaded_window_brings_the_chat_back_and_continues_it(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    before = fake_model.requests()
    last_ok = before[-1]
    # The chat keeps what it showed (cards, outcomes) in its workspace storage; on a loaded machine a write
    # can take seconds, so the reload waits for the last turn's card to be kept (a user who reloads sooner
    # gets that turn from the server's history, without its card).
    wait_until(lambda: kept_cards(s) == 4, 60, "the transcript with its four cards kept on disk")
    activations = len(s.server.activation_lines(s.ext_id))
    s.palette("Developer: Reload Window")
    # The real condition, not a pause: the new extension host activated the extension again.
    wait_for_activation(s, after=activations)
    s.js(
        """await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 90000 });
           await page.locator('.part.sidebar, .part.editor').first().waitFor({ state: 'visible', timeout: 90000 });"""
    )
    open_view(s, "myAgent.chat")
    restored = s.js(
        """
        const frame = await h.chatFrame({ timeout: 90000 });
        await h.waitFor(async () => (await frame.locator('.turn.restored').count()) >= 2,
                        { timeout: 90000, what: 'the restored transcript' });
        return { turns: await frame.locator('.turn.restored').count(),
                 text: await frame.locator('#transcript').innerText() };
        """
    )
    s.shot("transcript-restored")
    assert isinstance(restored, dict)
    assert EDIT_REPLY_SHOWN in restored["text"] and DENIED_REPLY in restored["text"], restored
    # The cards come back with their outcomes (the server's history has only the messages).
    cards = s.js("return await h.approvalCards(await h.chatFrame())")
    statuses = [c["status"] for c in cards]  # type: ignore[union-attr]
    assert statuses == ["approved", "approved", "denied", "approved"], cards
    rows = {r["summary"]: r["state"] for r in tool_rows(s)}
    assert rows.get("Ran cat src/app.py: exit 0") == "done", rows
    assert any(
        k.startswith("Run echo $$ > live.pid") and v == "stopped" for k, v in rows.items()
    ), rows
    fake_model.add({"content": AFTER_RELOAD})
    chat(s, "Do you still know what you changed?")
    reply(s, AFTER_RELOAD)
    s.shot("continued-after-reload")
    (after,) = fake_model.requests()[len(before) :]
    problem = prefix_extension_problem(last_ok["body"].encode(), after["body"].encode())
    assert problem is None, (
        f"the first request after the reload does not extend the last: {problem}"
    )
    system = [json.loads(r["body"])["messages"][0]["content"] for r in (last_ok, after)]
    assert system[0] == system[1]
