"""First run with default settings: the extension builds its private venv from the bundled wheelhouse.

No `myAgent.python.interpreter` and no project venv on PATH, so the extension must create a venv in its
global storage, install the language server from the wheels inside the .vsix (offline) and lint. This is
the "first-run venv setup time" figure of docs/e2e.md.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import vscode_e2e as v
from e2e_session import (
    MEMORY_REL,
    Session,
    my_agent_rows,
    open_view,
    record_figure,
    start_session,
    stop_session,
    wait_until,
)

pytestmark = pytest.mark.e2e


def path_without_project_venv() -> str:
    """PATH minus any virtualenv's bin, so `python3` is a plain interpreter as on a user's machine."""
    venv = os.environ.get("VIRTUAL_ENV")
    parts = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p
        and not Path(p, "activate").exists()
        and not (venv and p.startswith(venv))
        and not p.startswith(str(v.REPO / ".venv"))
    ]
    return os.pathsep.join(parts)


@pytest.fixture(scope="module")
def first_run(vsix: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    env = {
        "PATH": path_without_project_venv(),
        "VIRTUAL_ENV": None,
        "PYTHONPATH": None,
        "MY_AGENT_MODEL": None,  # no model anywhere: the chat must say how to configure one
        "OPENAI_BASE_URL": None,
    }
    probe = subprocess.run(
        [
            "python3",
            "-c",
            "import sys, importlib.util as u; print(sys.executable, u.find_spec('my_agent_core'))",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": env["PATH"]},
    )
    assert probe.returncode == 0, f"no python3 on PATH for the first-run bootstrap: {probe.stderr}"
    assert probe.stdout.strip().endswith("None"), (
        f"python3 on PATH already imports my_agent_core ({probe.stdout.strip()}): nothing to bootstrap"
    )
    session = start_session(
        "first-run", tmp_path_factory.mktemp("vscode-first-run"), vsix, {}, env=env
    )
    yield session
    stop_session(session)


def test_first_run_builds_the_venv_from_bundled_wheels_and_lints(first_run: Session) -> None:
    s = first_run
    activated = wait_until(
        lambda: s.server.activation_wall_time(s.ext_id),
        90,
        f"the extension host to activate {s.ext_id}",
    )
    record_figure(
        "first run: code-server start -> extension activated", activated - s.server.started_wall
    )
    s.js("await h.openFile(args.rel)", rel=MEMORY_REL)
    # The progress notification of the bootstrap (if it is still up) is worth a picture.
    s.shot("bootstrap-progress")
    wait_until(
        lambda: (c := s.js("return await h.problemCounts()")) and c["errors"] >= 1,  # type: ignore[index]
        300,
        "diagnostics after the first-run venv bootstrap",
        interval=0.5,
    )
    record_figure(
        "first run: code-server start -> diagnostics shown (venv bootstrap included)",
        time.monotonic() - s.server.started_at,
    )
    s.palette("View: Focus Problems")
    rows = wait_until(lambda: my_agent_rows(s), 30, "my-agent rows in the Problems panel")
    assert any("over-budget" in r for r in rows), rows
    s.shot("first-run-diagnostics")
    log = s.server.extension_log()
    assert "creating venv" in log, f"the extension did not build its venv; its log:\n{log[-3000:]}"
    ready = re.search(r"venv ready in ([0-9.]+) s", log)
    assert ready, f"no 'venv ready' line in the extension log:\n{log[-3000:]}"
    record_figure("first run: venv setup (extension log)", float(ready.group(1)))
    storage = s.server.user_data_dir / "User" / "globalStorage" / s.ext_id / "python-env"
    python = storage / "bin" / "python"
    assert python.exists(), f"no venv interpreter at {python}"
    check = subprocess.run(
        [str(python), "-c", "import my_agent_core, sys; print(my_agent_core.__file__)"],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert str(v.REPO / "server") not in check.stdout, (
        "the venv imports the repo's sources, not the wheels"
    )


def test_chat_without_a_model_shows_the_setup_first_and_its_error_has_a_way_out(
    first_run: Session,
) -> None:
    s = first_run
    open_view(s, "myAgent.chat")
    # Before the first message: the setup state (model, base URL, key, buttons, a local server to try).
    setup = s.js(
        """
        const frame = await h.chatFrame({ timeout: 60000 });
        const panel = frame.locator('.setup');
        await panel.waitFor({ timeout: 60000 });
        return { text: await panel.innerText(),
                 buttons: await panel.locator('button[data-action]').evaluateAll((bs) => bs.map((b) => b.dataset.action)),
                 missing: await panel.locator('.setup-row.missing').count() };
        """
    )
    assert isinstance(setup, dict)
    text = setup["text"]
    for words in ("Model", "not set", "Base URL", "API key", "Ollama", "llama.cpp", "vLLM"):
        assert words in text, (words, text)
    assert "http://localhost:11434/v1" in text, text
    assert setup["buttons"] == ["openSettings", "setApiKey"], setup
    assert setup["missing"] == 1, setup  # the model (the key comes from OPENAI_API_KEY)
    s.shot("setup-state")
    # Open Settings: the Settings editor, on the extension's settings.
    s.js(
        "const frame = await h.chatFrame(); await frame.locator('.setup button[data-action=openSettings]').click();"
    )
    settings = wait_until(
        lambda: (
            (
                t := s.js(
                    "return await page.locator('.settings-editor').first().innerText().catch(() => '')"
                )
            )
            and "Base Url" in str(t)
            and t
        ),
        30,
        "the Settings editor on the extension's settings",
    )
    assert "Model" in str(settings), settings
    s.shot("setup-open-settings")
    s.js("await page.keyboard.press('Escape'); await page.keyboard.press('Control+W');")
    # Send anyway: the error answers the message and offers what fixes it.
    failed = s.js(
        r"""
        const frame = await h.chatFrame();
        const box = frame.locator('textarea#input');
        await box.click();
        await box.fill('hello');
        await box.press('Enter');
        const error = frame.locator('.turn .error[role=alert]').last();
        await error.waitFor({ timeout: 60000 });
        return { text: await error.innerText(),
                 buttons: await error.locator('button[data-action]').evaluateAll((bs) => bs.map((b) => b.dataset.action)),
                 turns: await frame.locator('.turn').count() };
        """
    )
    s.shot("chat-without-model")
    assert isinstance(failed, dict)
    assert "myAgent.model" in failed["text"] or "MY_AGENT_MODEL" in failed["text"], failed
    assert "`" not in failed["text"], f"inline code is rendered, not shown as backticks: {failed}"
    assert failed["buttons"] == ["openSettings", "retry", "showOutput"], failed
    # Retry sends the message again in place of the failed turn (it fails the same way: one turn).
    again = s.js(
        """
        const frame = await h.chatFrame();
        await frame.locator('.turn .error button[data-action=retry]').last().click();
        await h.sleep(500);
        await h.waitFor(async () => (await frame.locator('.turn .error[role=alert]').count()) === 1,
                        { timeout: 60000, what: 'the retried turn to fail again' });
        return await frame.locator('.turn').count();
        """
    )
    assert again == 1, again
    # Show Output: the My Agent output channel.
    s.js(
        "const frame = await h.chatFrame(); await frame.locator('.turn .error button[data-action=showOutput]').last().click();"
    )
    wait_until(
        lambda: (
            "My Agent"
            in str(
                s.js("return await page.locator('.part.panel').first().innerText().catch(() => '')")
            )
        ),
        30,
        "the My Agent output channel",
    )
