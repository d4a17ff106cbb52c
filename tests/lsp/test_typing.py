"""mypy over the language server and the parser/linter it builds on (config: `[tool.mypy]`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_the_language_server_type_checks() -> None:
    pytest.importorskip("mypy", reason="mypy is in the `test` extra")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
