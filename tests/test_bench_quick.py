"""The benches of the workspace tools and of the merge driver still run (`--quick`: small sizes,
the same code path) and print their ratios. Whether a target is met is the bench's business, on a
quiet machine: these tests check only that nothing rotted (exit 0 or 1, never a traceback)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_bench(name: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), "--quick"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("rg") is None, reason="the bench compares with ripgrep")
def test_bench_workspace_quick() -> None:
    out = run_bench("workspace.py")
    assert "list_files first call / git ls-files -co --exclude-standard:" in out
    assert "(both backends identical: True)" in out


def test_bench_merge_quick() -> None:
    out = run_bench("merge.py")
    assert "worst-case merge of two largest files:" in out
