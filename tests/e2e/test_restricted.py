"""Restricted Mode in a real VS Code: Workspace Trust on, the folder not trusted.

The chat says what is off and why (a banner with Manage Workspace Trust), its welcome does not promise
memory, a session's "memory off" badge explains itself, and the Memory view says its files stay out of
prompts. The agent still answers (the fake model), without memory and without tools.
"""

from __future__ import annotations

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

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def workspace_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("restricted-src") / "workspace"
    mem = src / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("Deploys go through `make release`.\n", encoding="utf-8")
    (src / "README.md").write_text("# cloned from somewhere\n", encoding="utf-8")
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
        # Trust on, no prompt: a folder seen for the first time opens in Restricted Mode.
        "security.workspace.trust.enabled": True,
        "security.workspace.trust.startupPrompt": "never",
        "security.workspace.trust.banner": "never",
    }
    session = start_session(
        "restricted",
        tmp_path_factory.mktemp("vscode-restricted"),
        vsix,
        settings,
        workspace_src=workspace_src,
        workspace_trust=True,
    )
    yield session
    stop_session(session)


def test_restricted_mode_says_what_is_off_and_why(vscode: Session, fake_model: FakeModel) -> None:
    s = vscode
    open_view(s, "myAgent.chat")
    shown = s.js(
        """
        const frame = await h.chatFrame({ timeout: 90000 });
        const banner = frame.locator('#banner .banner.restricted');
        await banner.waitFor({ timeout: 60000 });
        return { banner: await banner.innerText(),
                 button: await banner.locator('button[data-action=manageTrust]').innerText(),
                 welcome: await frame.locator('#transcript').innerText() };
        """
    )
    assert isinstance(shown, dict)
    banner = shown["banner"]
    assert "Restricted Mode" in banner and "not trusted" in banner, banner
    for off in ("memory", "MEMORY.md", "tools", "context files"):
        assert off in banner, (off, banner)
    assert shown["button"] == "Manage Workspace Trust", shown
    assert "In Restricted Mode it has no memory and no tools." in shown["welcome"], shown
    assert "remembers" not in shown["welcome"], shown

    # A session: the agent answers without memory, and the badge says why.
    fake_model.add({"content": "Hello from Restricted Mode."})
    badge = s.js(
        """
        const frame = await h.chatFrame();
        const box = frame.locator('textarea#input');
        await box.click();
        await box.fill('hi');
        await box.press('Enter');
        await h.waitFor(async () => (await frame.locator('#transcript').innerText()).includes('Hello from Restricted Mode.'),
                        { timeout: 60000, what: 'the reply' });
        const b = frame.locator('#session .badge');
        return { text: await b.innerText(), title: await b.getAttribute('title') };
        """
    )
    assert isinstance(badge, dict)
    assert badge["text"] == "memory off" and "not trusted" in badge["title"], badge
    request = fake_model.requests()[-1]["json"]
    assert not request.get("tools"), "an untrusted folder's session has no tools"
    assert "make release" not in request["messages"][0]["content"], "memory stays out of the prompt"
    s.shot("restricted-chat")

    # The Memory view says its files are not used in prompts.
    open_view(s, "myAgent.memory")
    note = wait_until(
        lambda: (
            (
                t := s.js(
                    """return await page.evaluate((name) => {
                     const pane = [...document.querySelectorAll('.pane')].find((p) =>
                       (p.querySelector('.pane-header')?.getAttribute('aria-label') || '').toLowerCase()
                         .includes(name.toLowerCase()));
                     return pane ? pane.innerText : '';
                   }, args.name);""",
                    name=view_name("myAgent.memory"),
                )
            )
            and "not used in prompts" in str(t)
            and t
        ),
        30,
        "the Memory view's Restricted Mode note",
    )
    assert "Restricted Mode" in str(note), note
    s.shot("restricted-memory-view")

    # Manage Workspace Trust opens VS Code's Workspace Trust editor.
    open_view(s, "myAgent.chat")
    s.js(
        "const frame = await h.chatFrame(); await frame.locator('#banner button[data-action=manageTrust]').click();"
    )
    wait_until(
        lambda: any(
            "Workspace Trust" in t
            for t in s.js(  # type: ignore[union-attr]
                "return await page.locator('.tabs-container .tab').evaluateAll((ts) => ts.map((t) => t.getAttribute('aria-label') || ''));"
            )
        ),
        30,
        "the Workspace Trust editor",
    )
    s.shot("restricted-manage-trust")
