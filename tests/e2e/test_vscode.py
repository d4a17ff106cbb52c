"""The product in a real VS Code (code-server 4.100.3 + chromium): lint, quick fix, Memory view, chat.

The tests share one code-server and run in file order, like a user's session: open the hand-edited
over-budget MEMORY.md, see the Problems, apply the quick fix, look at the Memory view, then chat with a
local fake model that writes memory, and check the session's frozen snapshot did not move.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import vscode_e2e as v
from e2e_session import (
    MEMORY_REL,
    FakeModel,
    Session,
    command_title,
    container_title,
    my_agent_rows,
    open_view,
    record_figure,
    repo_python,
    start_session,
    stop_session,
    view_name,
    wait_until,
)

pytestmark = pytest.mark.e2e

NEW_ENTRY = (
    "Sam asked to always run `make test-fast` before pushing; the full suite runs in CI only."
)
REPLY = (
    "Noted: I saved that to your project memory. It joins the snapshot of your next chat session."
)


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
def vscode(
    vsix: Path, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Session]:
    settings = {
        "myAgent.python.interpreter": repo_python(),
        "myAgent.baseUrl": fake_model.base_url,
        "myAgent.model": "fake-model",
    }
    session = start_session("main", tmp_path_factory.mktemp("vscode-main"), vsix, settings)
    yield session
    stop_session(session)


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


# --- the tests, in the order a user meets the features ------------------------------------------------


def test_extension_activates(vscode: Session) -> None:
    s = vscode
    s.shot("workbench")
    # workspaceContains activates the extension at startup, without opening any file.
    activated = wait_until(
        lambda: s.server.activation_wall_time(s.ext_id),
        90,
        f"the extension host to activate {s.ext_id}",
    )
    record_figure(
        "cold start: code-server start -> extension activated", activated - s.server.started_wall
    )
    record_figure("cold start: code-server start -> workbench shown", s.figures["workbench"])
    failures = [
        line
        for line in s.server.exthost_log().splitlines()
        if s.ext_id in line.lower() and ("failed" in line.lower() or "[error]" in line)
    ]
    assert not failures, failures
    # Its activity-bar container is there.
    title = container_title("myAgent")
    labels = wait_until(
        lambda: (
            (ls := s.js(ACTIVITY_LABELS)) and any(title.lower() in x.lower() for x in ls) and ls  # type: ignore[union-attr]
        ),
        20,
        f"the {title!r} container in the activity bar",
    )
    assert any(title.lower() in x.lower() for x in labels)
    # The server started and reported the folder's memory: the status bar shows its usage.
    status = wait_until(
        lambda: [t for t in s.js(STATUS_TEXTS) if "Memory" in t and "%" in t],  # type: ignore[union-attr]
        90,
        "the memory usage in the status bar (the language server answering)",
    )
    record_figure(
        "cold start: code-server start -> server ready (status bar usage)",
        time.monotonic() - s.server.started_at,
    )
    # "Memory N% · User M%": the store's figures (it counts a duplicated entry once, the linter does not).
    assert any(re.search(r"Memory \d+%.*User \d+%", t) for t in status), status
    s.shot("activated")


def test_over_budget_file_shows_diagnostics_in_problems_panel(vscode: Session) -> None:
    s = vscode
    opened_at = time.monotonic()
    s.js("await h.openFile(args.rel)", rel=MEMORY_REL)
    counts = wait_until(
        lambda: (c := s.js("return await h.problemCounts()")) and c["errors"] >= 1 and c,  # type: ignore[index]
        90,
        "the status bar to count the over-budget error",
    )
    record_figure("code-server start -> diagnostics shown", time.monotonic() - s.server.started_at)
    record_figure("open MEMORY.md (Quick Open) -> diagnostics shown", time.monotonic() - opened_at)
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
            """return await page.locator('.action-widget .monaco-list-row.action')
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
        // The menu is keyboard-driven (a pointer block covers it): the first action is focused.
        const rows = page.locator('.action-widget .monaco-list-row.action');
        const labels = await rows.evaluateAll((rs) => rs.map((r) => r.getAttribute('aria-label') || r.textContent));
        for (let i = 0; i < labels.indexOf(args.choice); i++) await page.keyboard.press('ArrowDown');
        await page.keyboard.press('Enter');
        await page.locator('.action-widget').waitFor({ state: 'hidden', timeout: 5000 });
        await h.sleep(300);
        await page.keyboard.press('Control+S');
        """,
        choice=choice,
    )
    s.palette("View: Focus Problems")
    # The status bar counts every file's problems whether or not the panel shows them; the panel must list
    # the file's remaining my-agent problems (if any) without the two that the fix removed.
    wait_until(
        lambda: (c := s.js("return await h.problemCounts()")) and c["errors"] == 0 and c["label"],  # type: ignore[index]
        30,
        "the status bar to count no errors after the quick fix",
    )
    rows = my_agent_rows(s)
    assert not any("over-budget" in x or "duplicate-entry" in x for x in rows), rows
    s.shot("quick-fix-applied")
    after = wait_until(
        lambda: (t := path.read_text(encoding="utf-8")) != before and t,
        15,
        "the fixed file on disk",
    )
    assert after.count(dup) == 1, (
        "the quick fix must leave exactly one copy of the duplicated entry"
    )
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


ACTIVITY_LABELS = """return await page.locator('.activitybar .action-item .action-label')
    .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') || ''));"""
STATUS_TEXTS = """return await page.locator('.statusbar-item').evaluateAll((els) => els.map(
    (e) => (e.getAttribute('aria-label') || '') + ' || ' + (e.textContent || '')));"""


def frozen_snapshot_text(s: Session, label: str) -> str:
    """Runs Show Frozen Snapshot and returns the text of the read-only frozen-system-prompt document."""
    s.js("await h.palette('View: Close All Editors')")
    s.palette(command_title("myAgent.showSnapshot"))
    s.js(
        """await h.waitFor(async () => (await page.locator('.tabs-container .tab[aria-label*="frozen-system-prompt"]').count()) > 0,
             { timeout: 20000, what: 'the frozen-system-prompt tab' });
           await h.sleep(500);"""
    )
    s.shot(label)
    tabs = s.js(
        """return await page.locator('.tabs-container .tab').evaluateAll((ts) => ts.map((t) => t.getAttribute('aria-label')));"""
    )
    s.js(
        """await page.locator('.tabs-container .tab[aria-label*="frozen-system-prompt"]').first().click();
           await h.sleep(300);"""
    )
    text = s.js("return await h.editorFullText()")
    assert isinstance(text, str) and text.strip(), f"empty snapshot document; tabs: {tabs}"
    s.last_tabs = tabs  # type: ignore[attr-defined]
    return text


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
    s.js("await h.webviewFrame('textarea')")
    # The session's snapshot before anything is written (the command starts the chat session).
    before = frozen_snapshot_text(s, "snapshot-before-chat")
    assert NEW_ENTRY not in before
    assert fixture_entries("USER.md")[0] in before, "the snapshot lacks the user profile"
    s.js("await h.palette('View: Close All Editors')")
    open_view(s, "myAgent.chat")
    s.shot("chat-open")
    # Type the message and send it; then watch the reply grow (a strict prefix first, then all of it).
    seen = s.js(
        """
        const frame = await h.webviewFrame('textarea');
        const box = frame.locator('textarea').first();
        await box.click();
        await box.fill(args.message);
        await box.press('Enter');
        const partials = [];
        const end = Date.now() + 60000;
        while (Date.now() < end) {
          const text = await frame.locator('body').innerText();
          if (text.includes(args.reply)) {
            // Then the turn ends: Stop is disabled again (Escape in the input would cancel a busy turn).
            await h.waitFor(async () => frame.locator('button#stop').isDisabled(),
                            { timeout: 30000, what: 'the chat turn to finish' });
            return { partials, final: await frame.locator('body').innerText() };
          }
          for (let k = args.reply.length - 1; k >= 10; k--) {
            if (text.includes(args.reply.slice(0, k))) { partials.push(k); break; }
          }
          await h.sleep(60);
        }
        return { partials, final: await frame.locator('body').innerText(), timeout: true };
        """,
        message="Please remember: always run make test-fast before pushing.",
        reply=REPLY,
    )
    s.shot("chat-replied")
    assert isinstance(seen, dict)
    assert not seen.get("timeout"), f"the reply never appeared in the chat view: {seen['final']!r}"
    assert seen["partials"], "the reply appeared all at once: it was not streamed"
    assert "Stopped." not in seen["final"], seen["final"]
    assert "Error" not in seen["final"], seen["final"]
    # The model's memory write reached the disk and the Memory view.
    memory_file = s.workspace / MEMORY_REL
    wait_until(
        lambda: NEW_ENTRY in memory_file.read_text(encoding="utf-8"), 15, "the agent's write"
    )
    open_view(s, "myAgent.memory")
    wait_until(
        lambda: any(NEW_ENTRY[:40] in r for r in memory_view_rows(s) or []),
        20,
        "the new entry in the Memory view",
    )
    s.shot("memory-view-after-chat")
    # Both requests of the turn carried the session's frozen prompt, without the new entry.
    requests = fake_model.requests()[sent_before:]
    assert len(requests) == 2, (
        f"expected a tool-call request and a reply request, got {len(requests)}"
    )
    systems = [r["json"]["messages"][0] for r in requests]
    assert all(m["role"] == "system" for m in systems)
    assert systems[0]["content"] == systems[1]["content"], (
        "the system prompt changed within the session"
    )
    assert systems[0]["content"] == before, "the model did not get the snapshot the editor showed"
    # Show Frozen Snapshot after the write: unchanged, and (live files differ now) a frozen/live diff opens.
    after = frozen_snapshot_text(s, "snapshot-after-chat")
    assert after == before, "the session's frozen snapshot changed after the memory write"
    assert any("↔" in (t or "") for t in s.last_tabs), f"no frozen/live diff opened: {s.last_tabs}"  # type: ignore[attr-defined]
