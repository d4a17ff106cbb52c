"""The product in a real VS Code (code-server 4.100.3 + chromium): lint, quick fix, Memory view, chat.

The tests share one code-server and run in file order, like a user's session: open the hand-edited
over-budget MEMORY.md, see the Problems, apply the quick fix, look at the Memory view, then chat with a
local fake model that writes memory, and check the session's frozen snapshot did not move.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import vscode_e2e as v
from conftest import (
    FakeModel,
    Session,
    command_title,
    record_figure,
    repo_python,
    start_session,
    stop_session,
    view_name,
)

pytestmark = pytest.mark.e2e

T = TypeVar("T")

MEMORY_REL = ".my_agent_core/memory/MEMORY.md"
NEW_ENTRY = "Sam asked to always run `make test-fast` before pushing; the full suite runs in CI only."
REPLY = "Noted: I saved that to your project memory. It joins the snapshot of your next chat session."


def wait_until(fn: Callable[[], T], timeout: float, what: str, interval: float = 0.25) -> T:
    """Polls fn until it returns something truthy; fails with `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except v.DriverError as e:
            last = e
        else:
            if last:
                return last  # type: ignore[return-value]
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last value: {last!r}")


def fixture_entries(name: str) -> list[str]:
    """The entries of a fixture memory file, read with the project's one parser."""
    from my_agent_core.memory.document import parse

    text = (v.HERE / "fixtures" / "workspace" / ".my_agent_core" / "memory" / name).read_text()
    return list(parse(text).entry_texts)


def lint_json(path: Path) -> list[dict]:
    """`my-agent lint --format json` on one file: what the Problems panel must show."""
    proc = subprocess.run(
        [repo_python(), "-m", "my_agent_core", "lint", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def vscode(vsix: Path, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    settings = {
        "myAgent.python.interpreter": repo_python(),
        "myAgent.baseUrl": fake_model.base_url,
        "myAgent.model": "fake-model",
    }
    session = start_session("main", tmp_path_factory.mktemp("vscode-main"), vsix, settings)
    yield session
    stop_session(session)


def problems_rows(s: Session) -> list[str]:
    return s.js("return await h.problems()")  # type: ignore[return-value]


def my_agent_rows(s: Session) -> list[str]:
    return [r for r in problems_rows(s) if "my-agent" in r]


def memory_view_rows(s: Session) -> list[str]:
    """Rows of the Memory view, every collapsed store node expanded first."""
    return s.js(  # type: ignore[return-value]
        """
        const panes = page.locator('.pane').filter({
          has: page.locator('.pane-header', { hasText: new RegExp(args.name, 'i') }) });
        if ((await panes.count()) === 0) return null;
        const pane = panes.first();
        for (let i = 0; i < 5; i++) {
          const closed = pane.locator('.monaco-list-row[aria-expanded="false"]');
          if ((await closed.count()) === 0) break;
          await closed.first().click();
          await h.sleep(200);
        }
        return await pane.locator('.monaco-list-row').evaluateAll((rows) => rows.map(
          (r) => (r.getAttribute('aria-label') || '') + ' || ' + (r.textContent || '')));
        """,
        name=view_name("myAgent.memory"),
    )


def open_view(s: Session, view_id: str) -> None:
    """Opens a contributed view through its generated `Focus on <name> View` command."""
    s.palette(f"Focus on {view_name(view_id)} View")


# --- the tests, in the order a user meets the features ------------------------------------------------


def test_extension_activates(vscode: Session) -> None:
    s = vscode
    s.shot("workbench")
    # workspaceContains activates the extension at startup, without opening any file.
    activated = wait_until(
        lambda: s.server.activation_wall_time(s.ext_id), 90, f"the extension host to activate {s.ext_id}"
    )
    record_figure("cold start: code-server start -> extension activated", activated - s.server.started_wall)
    record_figure("cold start: code-server start -> workbench shown", s.figures["workbench"])
    log = s.server.exthost_log()
    assert f"Activating extension '{s.ext_id}' failed" not in log, log
    assert "failed" not in (s.server.activation_line(s.ext_id) or "")
    # Its activity-bar container is there.
    container = view_name("myAgent.memory")
    s.js(
        """await h.waitFor(async () => (await page.locator('.activitybar .action-item a, .activitybar .action-label')
             .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') || ''))).join('|'),
             { timeout: 20000, what: 'the activity bar' });"""
    )
    assert container
    s.shot("activated")


def test_over_budget_file_shows_diagnostics_in_problems_panel(vscode: Session) -> None:
    s = vscode
    s.js("await h.openFile(args.rel)", rel=MEMORY_REL)
    counts = wait_until(
        lambda: (c := s.js("return await h.problemCounts()")) and c["errors"] >= 1 and c,  # type: ignore[index]
        90,
        "the status bar to count the over-budget error",
    )
    record_figure(
        "code-server start -> diagnostics shown", time.monotonic() - s.server.started_at
    )
    s.palette("View: Focus Problems")
    rows = wait_until(
        lambda: (r := my_agent_rows(s)) and any("over-budget" in x for x in r) and r,
        30,
        "over-budget and duplicate-entry rows in the Problems panel",
    )
    s.shot("problems-over-budget")
    assert any("over-budget" in r for r in rows), rows
    assert any("duplicate-entry" in r for r in rows), rows
    assert counts["errors"] >= 1
    # The panel shows what the command-line linter finds (same rules, same server code).
    expected = {f["code"] for f in lint_json(s.workspace / MEMORY_REL)}
    assert {"over-budget", "duplicate-entry"} <= expected
    shown = " ".join(rows)
    missing = [code for code in expected if code not in shown]
    assert not missing, f"lint codes {missing} are not in the Problems panel: {rows}"


def test_quick_fix_repairs_the_over_budget_file(vscode: Session) -> None:
    s = vscode
    path = s.workspace / MEMORY_REL
    before = path.read_text(encoding="utf-8")
    entries = fixture_entries("MEMORY.md")
    dup = next(e for e in entries if entries.count(e) > 1)
    # The hand-pasted copy is the later one: put the cursor on its first line.
    copy_line = before[: before.rindex(dup)].count("\n") + 1
    s.js("await h.openFile(args.rel)", rel=MEMORY_REL)
    s.js(
        """
        await page.keyboard.press('Control+G');
        const input = page.locator('.quick-input-widget input.input');
        await input.waitFor({ state: 'visible' });
        await input.fill(':' + args.line);
        await page.keyboard.press('Enter');
        await h.sleep(300);
        await page.keyboard.press('Control+.');
        """,
        line=copy_line,
    )
    actions = wait_until(
        lambda: s.js(
            """return await page.locator('.action-widget .monaco-list-row')
                 .evaluateAll((rows) => rows.map((r) => r.getAttribute('aria-label') || r.textContent))"""
        ),
        20,
        "the quick-fix menu",
    )
    s.shot("quick-fix-menu")
    choice = next((a for a in actions if "duplicate" in a.lower()), None)
    assert choice, f"no quick fix for the duplicate entry; offered: {actions}"
    s.js(
        """
        const rows = page.locator('.action-widget .monaco-list-row');
        const labels = await rows.evaluateAll((rs) => rs.map((r) => r.getAttribute('aria-label') || r.textContent));
        await rows.nth(labels.indexOf(args.choice)).click();
        await h.sleep(300);
        await page.keyboard.press('Control+S');
        """,
        choice=choice,
    )
    wait_until(
        lambda: (r := my_agent_rows(s)) is not None
        and not any("over-budget" in x or "duplicate-entry" in x for x in r),
        30,
        "the over-budget and duplicate-entry problems to go away",
    )
    s.palette("View: Focus Problems")
    s.shot("quick-fix-applied")
    after = wait_until(
        lambda: (t := path.read_text(encoding="utf-8")) != before and t, 15, "the fixed file on disk"
    )
    assert after.count(dup) == 1, "the quick fix must leave exactly one copy of the duplicated entry"
    for entry in entries:
        assert entry in after, f"the quick fix lost an entry: {entry[:60]!r}"
    codes = {f["code"] for f in lint_json(path)}
    assert not codes & {"over-budget", "duplicate-entry"}, codes


def test_memory_view_lists_the_entries(vscode: Session) -> None:
    s = vscode
    open_view(s, "myAgent.memory")
    wanted = list(dict.fromkeys(fixture_entries("MEMORY.md") + fixture_entries("USER.md")))

    def shown() -> list[str] | None:
        rows = memory_view_rows(s)
        text = "\n".join(rows or [])
        return rows if rows and all(e[:40] in text for e in wanted) else None

    try:
        rows = wait_until(shown, 30, "every entry in the Memory view")
    finally:
        s.shot("memory-view")
    assert len(rows) >= len(wanted)


def test_chat_streams_reply_and_writes_memory_with_frozen_snapshot(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    fake_model.add(
        {
            "tool_calls": [
                {
                    "name": "memory",
                    "arguments": {"target": "memory", "action": "add", "content": NEW_ENTRY},
                }
            ],
            "chunk_delay": 0.02,
        },
        {"content": REPLY, "chunk_size": 5, "chunk_delay": 0.12},
    )
    sent_before = len(fake_model.requests())
    open_view(s, "myAgent.chat")
    frame_sel = "textarea"
    s.js("await h.webviewFrame(args.sel)", sel=frame_sel)
    s.shot("chat-open")
    # Type the message and send it; then watch the reply grow (a strict prefix first, then all of it).
    seen = s.js(
        """
        const frame = await h.webviewFrame(args.sel);
        const box = frame.locator(args.sel).first();
        await box.click();
        await box.fill(args.message);
        await box.press('Enter');
        const partials = [];
        const end = Date.now() + 60000;
        while (Date.now() < end) {
          const text = await frame.locator('body').innerText();
          if (text.includes(args.reply)) return { partials, final: text };
          for (let k = args.reply.length - 1; k >= 10; k--) {
            if (text.includes(args.reply.slice(0, k))) { partials.push(k); break; }
          }
          await h.sleep(60);
        }
        return { partials, final: await frame.locator('body').innerText(), timeout: true };
        """,
        sel=frame_sel,
        message="Please remember: always run make test-fast before pushing.",
        reply=REPLY,
    )
    s.shot("chat-replied")
    assert isinstance(seen, dict)
    assert not seen.get("timeout"), f"the reply never appeared in the chat view; it shows: {seen['final']!r}"
    assert seen["partials"], "the reply appeared all at once: it was not streamed"
    # The model's memory write reached the disk and the Memory view.
    memory_file = s.workspace / MEMORY_REL
    wait_until(lambda: NEW_ENTRY in memory_file.read_text(encoding="utf-8"), 15, "the agent's write")
    open_view(s, "myAgent.memory")
    wait_until(
        lambda: any(NEW_ENTRY[:40] in r for r in memory_view_rows(s) or []),
        20,
        "the new entry in the Memory view",
    )
    s.shot("memory-view-after-chat")
    # The frozen snapshot: both requests of the turn carry the same system prompt, without the new entry.
    requests = fake_model.requests()[sent_before:]
    assert len(requests) == 2, f"expected a tool-call request and a reply request, got {len(requests)}"
    systems = [r["json"]["messages"][0] for r in requests]
    assert all(m["role"] == "system" for m in systems)
    assert systems[0]["content"] == systems[1]["content"], "the system prompt changed within the session"
    assert NEW_ENTRY not in systems[1]["content"]
    assert fixture_entries("USER.md")[0] in systems[0]["content"], "the snapshot lacks the user profile"
    # Show Frozen Snapshot shows that very prompt, still without the new entry.
    s.palette(command_title("myAgent.showSnapshot"))
    time.sleep(1.0)
    s.shot("frozen-snapshot")
    shown = s.js("return await h.editorFullText()")
    assert isinstance(shown, str)
    assert NEW_ENTRY not in shown, "the frozen snapshot changed after the memory write"
    snapshot_entry = fixture_entries("MEMORY.md")[0]
    assert snapshot_entry in shown, f"Show Frozen Snapshot does not show the session's snapshot: {shown[:300]!r}"
