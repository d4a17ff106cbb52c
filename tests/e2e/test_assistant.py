"""The coding assistant in a real VS Code (code-server 4.100.3 + chromium), against the local fake model.

One code-server, tests in file order like a user's session:
1. the model reads a file, proposes an edit; the approval card is shown (screenshot), Open Diff opens
   VS Code's diff editor (screenshot), Approve applies it through the editor (the open buffer and its
   undo see it), the extension saves the clean document, and the command the model runs next sees
   the edit on disk;
2. a denied command leaves no trace: no file it would create, no process;
3. the window is reloaded (a new extension host, a new language server): the transcript comes back
   and the next message continues the session byte for byte at the model endpoint.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_session import (
    FakeModel,
    Session,
    open_view,
    repo_python,
    start_session,
    stop_session,
    view_name,
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
EDIT_REPLY = "Done: greet() now says hello, and the file on disk has it."
DENIED = "touch denied-marker.txt && sleep 4242"
DENIED_REPLY = "Understood: I did not run it."
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


SEND = """
const frame = await h.chatFrame({ timeout: 60000 });
await h.waitFor(async () => frame.locator('button#stop').isDisabled(), { timeout: 30000, what: 'an idle chat' });
const box = frame.locator('textarea#input');
await box.click();
await box.fill(args.message);
await box.press('Enter');
"""

WAIT_REPLY = """
const frame = await h.chatFrame();
await h.waitFor(async () => (await frame.locator('#transcript').innerText()).includes(args.reply),
                { timeout: 60000, what: 'the reply in the chat' });
await h.waitFor(async () => frame.locator('button#stop').isDisabled(), { timeout: 30000, what: 'the turn to end' });
return await frame.locator('#transcript').innerText();
"""

CARD = """
const frame = await h.chatFrame();
return await h.waitFor(async () => (await h.approvalCards(frame)).find(
    (c) => c.status === args.status && (!args.callId || c.callId === args.callId) && !args.not.includes(c.callId)) || null,
  { timeout: 60000, what: `an approval card that is ${args.status}` });
"""

PRESS = """
const frame = await h.chatFrame();
await h.pressCardButton(frame, args.callId, args.action);
"""

TAB_LABELS = """return await page.locator('.tabs-container .tab').evaluateAll(
    (ts) => ts.map((t) => (t.getAttribute('aria-label') || '') + (t.classList.contains('dirty') ? ' [dirty]' : '')));"""


def give_the_chat_room(s: Session) -> None:
    """Collapse the Memory view so the chat fills the side bar (the cards in the screenshots)."""
    s.js(
        """const header = page.locator('.pane-header', { hasText: new RegExp('^' + args.name, 'i') }).first();
           if ((await header.getAttribute('aria-expanded')) === 'true') { await header.click(); await h.sleep(300); }""",
        name=view_name("myAgent.memory"),
    )


def chat(s: Session, message: str) -> None:
    s.js(SEND, message=message)


def card(s: Session, status: str = "pending", call_id: str = "", *, other_than: str = "") -> dict:
    found = s.js(CARD, status=status, callId=call_id, **{"not": [other_than] if other_than else []})
    assert isinstance(found, dict), found
    return found


def press(s: Session, call_id: str, action: str) -> None:
    s.js(PRESS, callId=call_id, action=action)


def reply(s: Session, text: str) -> str:
    transcript = s.js(WAIT_REPLY, reply=text)
    assert isinstance(transcript, str)
    return transcript


def tool_results(request: dict) -> list[str]:
    return [str(m.get("content")) for m in request["json"]["messages"] if m["role"] == "tool"]


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
    give_the_chat_room(s)
    chat(s, "Make greet() say hello instead of hi.")
    edit = card(s)
    assert edit["kind"] == "edit" and "src/app.py" in edit["title"], edit
    assert {"approve", "deny", "openDiff"} <= set(edit["buttons"]), edit
    s.shot("approval-card")
    assert app.read_text(encoding="utf-8") == APP, "nothing may change before the approval"
    # Open Diff: VS Code's diff editor, the current text against the proposal.
    press(s, edit["callId"], "openDiff")
    wait_until(
        lambda: any("proposed by the agent" in t for t in s.js(TAB_LABELS)),  # type: ignore[union-attr]
        20,
        "the diff editor tab",
    )
    s.js("await h.sleep(800)")  # let the diff render before the screenshot
    s.shot("open-diff")
    diff_text = s.js(
        """return await page.locator('.editor-group-container.active .monaco-diff-editor').first().innerText();"""
    )
    assert "hello" in str(diff_text) and "hi" in str(diff_text), diff_text
    press(s, edit["callId"], "approve")
    card(s, "approved", edit["callId"])
    command = card(s, "pending", other_than=edit["callId"])
    assert command["kind"] == "command" and command["callId"] != edit["callId"], command
    # Before the command runs the edited file is on disk (saved by the extension: it was clean).
    on_disk = wait_until(
        lambda: app.read_text(encoding="utf-8") == EDITED, 20, "the edit on disk before the command"
    )
    assert on_disk
    press(s, command["callId"], "approve")
    transcript = reply(s, EDIT_REPLY)
    s.shot("edit-approved")
    assert "Stopped." not in transcript and "Error" not in transcript, transcript
    cards = s.js("return await h.approvalCards(await h.chatFrame())")
    assert [c["status"] for c in cards] == ["approved", "approved"], cards  # type: ignore[union-attr]
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
    press(s, command["callId"], "deny")
    transcript = reply(s, DENIED_REPLY)
    s.shot("command-denied")
    assert DENIED_REPLY in transcript
    assert not (s.workspace / "denied-marker.txt").exists()
    assert processes_with("sleep 4242") == []
    final = fake_model.requests()[sent_before:][-1]
    result = tool_results(final)[-1]  # the history holds the earlier turns too
    assert result.startswith("Error:") and "declined" in result, result


def test_a_reloaded_window_brings_the_chat_back_and_continues_it(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    before = fake_model.requests()
    last_ok = before[-1]
    s.palette("Developer: Reload Window")
    s.js(
        """await h.sleep(1000);
           await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 90000 });
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
    assert EDIT_REPLY in restored["text"] and DENIED_REPLY in restored["text"], restored
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
