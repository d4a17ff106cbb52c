"""Runs the client's Node unit tests (`npm test`) from pytest, so one `pytest` run covers both sides."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_npm_test_passes() -> None:
    """`npm test` compiles the client (tsc --strict) and runs tests/client/*.test.js under node:test."""
    if not (ROOT / "node_modules").is_dir():
        pytest.skip("node_modules is missing: run `npm ci` at the repository root")
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("node_modules exists but npm is not on PATH")
    proc = subprocess.run(
        [npm, "test", "--silent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"npm test failed:\n{output[-6000:]}"
    assert "# fail 0" in output, f"npm test reported failures:\n{output[-6000:]}"
