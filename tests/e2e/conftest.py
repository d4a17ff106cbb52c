"""Fixtures for the real-VS-Code tests: tools, the built .vsix, a fake model server, a code-server session.

One code-server + one browser per test module (they take ~10 s to start on two cores); every step saves a
screenshot under test-output/e2e/, and a failing test also saves the page and code-server's logs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import vscode_e2e as v
from e2e_session import FIGURES, FakeModel, record_figure, save_failure_artifacts


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not FIGURES:
        return
    terminalreporter.section("my-agent e2e figures (seconds)")
    for name, value in FIGURES.items():
        terminalreporter.write_line(f"{name}: {value}")
    v.OUTPUT.mkdir(parents=True, exist_ok=True)
    path = v.OUTPUT / "figures.json"
    old = {}
    with contextlib.suppress(OSError, ValueError):
        old = json.loads(path.read_text())
    old.update(FIGURES)
    path.write_text(json.dumps(old, indent=2) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


# --- tools and the extension ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def e2e_tools() -> None:
    """Skips (with the reason) when code-server, playwright-core or chromium is not installed."""
    why = v.missing_tools()
    if why:
        pytest.skip(why)


def _newest_source_mtime() -> float:
    roots = [
        v.REPO / "client" / "src",
        v.REPO / "client" / "media",
        v.REPO / "server" / "my_agent_core",
    ]
    files = [v.REPO / "package.json", v.REPO / "package.nls.json"]
    for root in roots:
        if root.exists():
            files += [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return max((p.stat().st_mtime for p in files if p.exists()), default=0.0)


@pytest.fixture(scope="session")
def vsix(e2e_tools: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built extension; (re)built with `npm run package` when missing or older than its sources."""
    found = v.newest_vsix()
    no_build = os.environ.get("MY_AGENT_E2E_NO_BUILD") == "1" or os.environ.get("MY_AGENT_E2E_VSIX")
    stale = found is None or found.stat().st_mtime < _newest_source_mtime()
    if stale and not no_build:
        if not (v.REPO / "node_modules").exists():
            pytest.fail(
                "dist/*.vsix is missing or stale and node_modules is absent: run `npm ci` first"
            )
        t0 = time.monotonic()
        proc = subprocess.run(
            ["npm", "run", "package"], cwd=v.REPO, capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            pytest.fail(f"npm run package failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        record_figure("npm run package", time.monotonic() - t0)
        found = v.newest_vsix()
    if found is None or not found.exists():
        pytest.fail("no dist/*.vsix: `npm run package` did not produce one")
    # A private copy: a rebuild of dist/ during the run must not pull the file from under the tests.
    copy = tmp_path_factory.mktemp("vsix") / found.name
    shutil.copy2(found, copy)
    return copy


@pytest.fixture(scope="module")
def fake_model(e2e_tools: None) -> Iterator[FakeModel]:
    script = v.REPO / "tests" / "support" / "fake_openai.py"
    if not script.exists():
        pytest.fail("tests/support/fake_openai.py is missing")
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", "0", "--exit-on-stdin-eof"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout
    line = proc.stdout.readline().strip()
    if not line.startswith("http"):
        proc.kill()
        pytest.fail(f"fake_openai.py printed {line!r} instead of its base URL")
    yield FakeModel(proc, line)
    with contextlib.suppress(Exception):
        assert proc.stdin
        proc.stdin.close()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


# --- a code-server session -----------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _artifacts_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """Saves a screenshot and the logs when a test that uses a code-server session fails."""
    yield
    rep = getattr(request.node, "rep_call", None)
    if rep is None or not rep.failed:
        return
    for fixture_name in ("vscode", "first_run"):
        if fixture_name in request.fixturenames:
            session = request.getfixturevalue(fixture_name)
            save_failure_artifacts(session, request.node.name)


# --- polling and reading the workbench ----------------------------------------------------------------
