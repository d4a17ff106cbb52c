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


def test_chat_without_a_model_says_how_to_configure_one(first_run: Session) -> None:
    s = first_run
    open_view(s, "myAgent.chat")
    before = s.js("return await (await h.webviewFrame('textarea')).locator('body').innerText()")
    assert "myAgent.model" not in str(before), (
        "the hint must answer the user's message, not precede it"
    )
    text = s.js(
        r"""
        const frame = await h.webviewFrame('textarea');
        const box = frame.locator('textarea').first();
        await box.click();
        await box.fill('hello');
        await box.press('Enter');
        return await h.waitFor(async () => {
          const t = await frame.locator('body').innerText();
          return /myAgent\.model|MY_AGENT_MODEL/.test(t) ? t : null;
        }, { timeout: 60000, what: 'a message about the missing model' });
        """
    )
    s.shot("chat-without-model")
    assert isinstance(text, str)
    assert "myAgent.model" in text or "MY_AGENT_MODEL" in text, text
