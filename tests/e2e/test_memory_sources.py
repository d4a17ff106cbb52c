"""A memory write that may carry text the model read, in a real VS Code (code-server 4.100.3 +
chromium), under the default `myAgent.memory.approval` ("untrusted", issue 19).

The model reads README.md, then saves one of its lines to memory:
1. the chat's card says why it asks, lists the sources (README.md:N links to the file at that line,
   the copied line quoted as text), then the diff and Approve / Deny / Open Diff (screenshot); the
   link opens README.md at the line; Deny writes nothing and the model is told the user declined;
2. the same again, approved: the entry is written, and the decided card keeps its sources.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_page import card, chat, press, reply
from e2e_session import (
    FakeModel,
    Session,
    open_view,
    repo_python,
    start_session,
    stop_session,
    wait_until,
)

pytestmark = pytest.mark.e2e

MEMORY = "Tests run with `python -m pytest -q`.\n"
FACT = "The release checklist lives in docs/release.md and needs two reviewers."
README = f"# greeter\n\nA small demo.\n{FACT}\n"
FACT_LINE = 4
DENIED_REPLY = "Understood: I did not save it."
SAVED_REPLY = "Saved to memory: the release checklist."


@pytest.fixture(scope="module")
def workspace_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("sources-src") / "workspace"
    mem = src / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    (src / "README.md").write_text(README, encoding="utf-8")
    return src


@pytest.fixture(scope="module")
def vscode(
    vsix: Path,
    fake_model: FakeModel,
    workspace_src: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Session]:
    settings = {  # no myAgent.memory.approval: the default policy
        "myAgent.python.interpreter": repo_python(),
        "myAgent.baseUrl": fake_model.base_url,
        "myAgent.model": "fake-model",
        "myAgent.memory.provider": "none",
    }
    session = start_session(
        "memory-sources",
        tmp_path_factory.mktemp("vscode-sources"),
        vsix,
        settings,
        workspace_src=workspace_src,
    )
    yield session
    stop_session(session)


# What a card shows of its sources, read from the DOM (the call id is matched in the page, never spliced
# into a selector).
SOURCES = """
const frame = await h.chatFrame();
return await frame.evaluate((callId) => {
  const card = [...document.querySelectorAll('.approval')].find((c) => c.dataset.callId === callId);
  const section = card && card.querySelector('.memory-sources');
  if (!section) return null;
  const words = (el) => el.textContent.replace(/\\s+/g, ' ').trim();
  return {
    why: words(section.querySelector('.sources-why')),
    items: [...section.querySelectorAll('ul.sources > li')].map(words),
    links: [...section.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href')]),
    quotes: [...section.querySelectorAll('q')].map((q) => q.textContent),
    markup: section.querySelectorAll('script, img, b, strong, em').length,
    sub: card.querySelector('.approval-sub') ? words(card.querySelector('.approval-sub')) : '',
    diff: (card.querySelector('pre.diff') || {}).textContent || '',
  };
}, args.callId);
"""


TAB_LABELS = """return await page.locator('.tabs-container .tab').evaluateAll(
    (ts) => ts.map((t) => t.getAttribute('aria-label') || ''));"""


def shown_sources(s: Session, call_id: str) -> dict:
    found = s.js(SOURCES, callId=call_id)
    assert isinstance(found, dict), f"the card {call_id} shows no sources"
    return found


def memory(s: Session) -> str:
    return (s.memory_dir() / "MEMORY.md").read_text(encoding="utf-8")


def tool_results(request: dict) -> list[str]:
    return [str(m.get("content")) for m in request["json"]["messages"] if m["role"] == "tool"]


def read_then_save() -> tuple[dict, dict]:
    return (
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {
            "tool_calls": [
                {
                    "name": "memory",
                    "arguments": {"target": "memory", "action": "add", "content": FACT},
                }
            ]
        },
    )


def test_the_card_names_where_the_text_may_come_from_and_deny_writes_nothing(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    fake_model.add(*read_then_save(), {"content": DENIED_REPLY})
    sent_before = len(fake_model.requests())
    open_view(s, "myAgent.chat")
    chat(s, "Read the README and remember where the release checklist is.")
    asked = card(s)
    assert asked["kind"] == "memory", asked
    assert {"approve", "deny", "openDiff"} <= set(asked["buttons"]), asked
    shown = shown_sources(s, asked["callId"])
    assert shown["why"] == "This memory change may carry text the agent read", shown
    place = f"README.md:{FACT_LINE}"
    assert shown["items"][0] == f"Shares words with {place}: {FACT}", shown
    assert shown["items"][1].startswith("Read in this turn, before this change:"), shown
    assert [place, f"README.md#L{FACT_LINE}"] in shown["links"], shown
    assert shown["quotes"] == [FACT] and shown["markup"] == 0, shown
    assert shown["sub"] == "Memory: add to MEMORY.md", shown
    assert shown["diff"].startswith("--- a/MEMORY.md") and f"+{FACT}" in shown["diff"], shown
    assert "This change may carry" not in shown["diff"], "the sources are not diff lines any more"
    s.js("await h.sleep(500)")  # let the card settle before the screenshot
    s.shot("memory-card-sources")
    assert memory(s) == MEMORY, "nothing is written before the user answers"
    # The source's link opens README.md at the line the text shares.
    s.js(
        """const frame = await h.chatFrame();
           const link = await frame.evaluateHandle((href) =>
             [...document.querySelectorAll('.approval .memory-sources a.path-link')]
               .find((a) => a.getAttribute('href') === href) || null, args.href);
           await link.asElement().click();""",
        href=f"README.md#L{FACT_LINE}",
    )
    wait_until(
        lambda: any("README.md" in t for t in s.js(TAB_LABELS)),  # type: ignore[union-attr]
        20,
        "README.md opened from the card",
    )
    wait_until(
        lambda: f"Ln {FACT_LINE}," in str(s.js("return await h.cursorPosition()")),
        20,
        f"the cursor on line {FACT_LINE} of README.md",
    )
    s.shot("source-opened")
    # Deny: nothing is written, the model reads that the user declined.
    press(s, asked["callId"], "deny")
    card(s, "denied", asked["callId"])
    reply(s, DENIED_REPLY)
    s.shot("memory-denied")
    assert memory(s) == MEMORY
    final = fake_model.requests()[sent_before:][-1]
    result = tool_results(final)[-1]
    assert result.startswith("Error:") and "declined" in result and "nothing was saved" in result


def test_approved_the_entry_is_written_and_the_card_keeps_its_sources(
    vscode: Session, fake_model: FakeModel
) -> None:
    s = vscode
    fake_model.add(*read_then_save(), {"content": SAVED_REPLY})
    open_view(s, "myAgent.chat")
    chat(s, "Please save it this time: read the README again and remember the checklist.")
    asked = card(s)
    assert asked["kind"] == "memory", asked
    shown = shown_sources(s, asked["callId"])
    assert shown["items"][0] == f"Shares words with README.md:{FACT_LINE}: {FACT}", shown
    # README.md read again (now from its open editor): the same place is named once.
    assert sum(i.startswith("Shares words with") for i in shown["items"]) == 1, shown
    press(s, asked["callId"], "approve")
    card(s, "approved", asked["callId"])
    reply(s, SAVED_REPLY)
    wait_until(lambda: memory(s) == f"{MEMORY}§\n{FACT}\n", 20, "the approved entry in MEMORY.md")
    # Decided: the card keeps what the user decided on, collapsed with its diff.
    kept = shown_sources(s, asked["callId"])
    assert [f"README.md:{FACT_LINE}", f"README.md#L{FACT_LINE}"] in kept["links"], kept
    s.js(
        """const frame = await h.chatFrame();
           await frame.evaluate((callId) => {
             const card = [...document.querySelectorAll('.approval')].find((c) => c.dataset.callId === callId);
             card.querySelector('details.approval-diff').open = true;
           }, args.callId);
           await h.sleep(300);""",
        callId=asked["callId"],
    )
    s.shot("memory-approved")
