"""Memory for every agent in a real VS Code: another extension finds the memory tool in `vscode.lm.tools`
and calls `vscode.lm.invokeTool`; VS Code asks the user first (declined once, accepted once); the accepted
call reaches the language server (`myAgent/memory/tool`), lands in MEMORY.md, is journaled as written by
`vscode-lm:...`, and the Memory view shows the new entry.

The "other extension" is tests/e2e/host/lm-caller, loaded beside the installed .vsix as a development
extension (code-server's `extensionDevelopmentPath` payload), so the calls go through the real VS Code API
and the real confirmation dialog. (An `extensionTestsPath` module would not do: during extension tests
VS Code answers every confirmation with "yes" without showing it.)
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import vscode_e2e as v
from e2e_session import (
    Session,
    open_view,
    repo_python,
    start_session,
    stop_session,
    view_name,
    wait_until,
)

pytestmark = pytest.mark.e2e

ENTRY = "Release notes are written in docs/CHANGES.md before tagging (added by another agent)."
FIRST = "Build with `make build`; the binary lands in out/."


@pytest.fixture(scope="module")
def host_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("lm-host")
    (d / "entry.txt").write_text(ENTRY, encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def workspace_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small workspace whose memory has room (the shared fixture is over budget on purpose)."""
    src = tmp_path_factory.mktemp("lm-src") / "workspace"
    mem = src / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text(FIRST + "\n", encoding="utf-8")
    (src / "README.md").write_text("# lm tool e2e\n", encoding="utf-8")
    return src


def _payload_url(s: Session) -> str:
    """The workbench URL that also loads the calling extension (as a development extension)."""
    assert sorted(s.server.extensions_dir.glob(f"{s.ext_id}-*")), "the .vsix is not installed"
    remote = f"vscode-remote://127.0.0.1:{s.server.port}"
    payload = [["extensionDevelopmentPath", f"{remote}{v.HERE / 'host' / 'lm-caller'}"]]
    return f"{s.server.url}&payload={urllib.parse.quote(json.dumps(payload))}"


@pytest.fixture(scope="module")
def vscode(
    vsix: Path,
    host_dir: Path,
    workspace_src: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Session]:
    settings = {"myAgent.python.interpreter": repo_python()}
    session = start_session(
        "lmtool",
        tmp_path_factory.mktemp("vscode-lmtool"),
        vsix,
        settings,
        env={"MY_AGENT_E2E_HOST_DIR": str(host_dir)},
        workspace_src=workspace_src,
        url_for=_payload_url,
    )
    yield session
    for name in ("round2", "release"):
        (host_dir / name).write_text("done", encoding="utf-8")
    stop_session(session)


def steps(host_dir: Path) -> list[dict]:
    try:
        return json.loads((host_dir / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []


def wait_step(host_dir: Path, name: str, timeout: float, count: int = 1) -> dict:
    def found() -> dict | None:
        got = steps(host_dir)
        errors = [x for x in got if x["step"] == "error"]
        if errors:
            raise AssertionError(f"the extension-host test failed: {errors[0]['message']}")
        matching = [x for x in got if x["step"] == name]
        return matching[count - 1] if len(matching) >= count else None

    return wait_until(found, timeout, f"host step {name!r} #{count}")


def answer_dialog(s: Session, button: str) -> str:
    """Presses a button of the workbench's modal dialog (the tool's confirmation); returns its text."""
    return s.js(  # type: ignore[return-value]
        """
        const box = page.locator('.monaco-dialog-box');
        await box.waitFor({ state: 'visible', timeout: 60000 });
        const message = await box.innerText();
        await box.locator('.monaco-button', { hasText: new RegExp('^' + args.button + '$') }).first().click();
        await box.waitFor({ state: 'hidden', timeout: 15000 });
        return message;
        """,
        button=button,
    )


def memory_view_rows(s: Session) -> list[str] | None:
    return s.js(  # type: ignore[return-value]
        """
        const panes = page.locator('.pane').filter({
          has: page.locator('.pane-header', { hasText: new RegExp('^' + args.name + '$', 'i') }) });
        if ((await panes.count()) === 0) return null;
        return await panes.first().locator('.monaco-list-row').evaluateAll((rows) => rows.map(
          (r) => (r.getAttribute('aria-label') || '') + ' || ' + (r.textContent || '')));
        """,
        name=view_name("myAgent.memory"),
    )


def journal(folder: Path) -> list[dict]:
    mem_dir = str(folder / ".my_agent_core" / "memory")
    proc = subprocess.run(
        [repo_python(), "-m", "my_agent_core", "memory", "log", "--json", "--dir", mem_dir],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    return data if isinstance(data, list) else data.get("entries", [])


def test_the_tool_is_listed_for_every_extension(vscode: Session, host_dir: Path) -> None:
    listed = wait_step(host_dir, "listed", 120)
    vscode.shot("listed")
    assert listed["name"] == "myAgent_memory"
    assert listed["required"] == ["target", "action"]
    assert "WHEN to save" in listed["description"] or "memory" in listed["description"].lower()


def test_a_declined_confirmation_writes_nothing(vscode: Session, host_dir: Path) -> None:
    memory = vscode.memory_dir() / "MEMORY.md"
    before = memory.read_bytes()
    wait_step(host_dir, "invoking", 60, count=1)
    message = answer_dialog(vscode, "Cancel")
    # The confirmation says what will be added, where.
    assert "Add to MEMORY.md?" in message
    assert ENTRY in message
    assert ".my_agent_core/memory/MEMORY.md" in message
    declined = wait_step(host_dir, "declined", 30)
    (host_dir / "round2").write_text("go", encoding="utf-8")
    assert declined["ok"] is False, declined
    assert memory.read_bytes() == before


def test_an_accepted_call_is_written_journaled_and_shown(vscode: Session, host_dir: Path) -> None:
    wait_step(host_dir, "invoking", 60, count=2)
    vscode.shot("confirmation")
    answer_dialog(vscode, "Yes")
    invoked = wait_step(host_dir, "invoked", 60)
    assert invoked["ok"] is True, invoked
    assert not invoked["text"].startswith("Error:"), invoked["text"]
    assert "/2200" in invoked["text"], invoked["text"]
    text = (vscode.memory_dir() / "MEMORY.md").read_text(encoding="utf-8")
    assert ENTRY in text and FIRST in text
    authors = [e.get("author", "") for e in journal(vscode.workspace)]
    assert any(a.startswith("vscode-lm:") for a in authors), authors
    # the caller is the editor the language client names in `initialize` (here "code-server")
    assert "vscode-lm:unknown" not in authors, authors
    open_view(vscode, "myAgent.memory")
    rows = wait_until(
        lambda: (r := memory_view_rows(vscode)) and any(ENTRY[:60] in x for x in r) and r,
        30,
        "the new entry in the Memory view",
    )
    vscode.shot("memory-view")
    assert any(FIRST[:30] in x for x in rows), rows
