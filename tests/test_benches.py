"""Every bench runs: `bench/X.py --quick` exits 0 and prints its figures.

A bench nothing runs rots (`bench/workspace.py` crashed for weeks, its stub missing a method the code
had grown). Each bench runs here as a subprocess with `--quick` (small sizes, the same code path),
and its printed figures are read back: the lines it must print and the numbers in them. Nothing
here asserts a time: the figures of a quick run on a shared machine say nothing about targets.
Parts that need PostgreSQL or an optional extra print why they were skipped, as the tests do.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def _quick_note() -> str:
    """The line every bench prints under `--quick` (bench/quick.py, loaded by path: putting bench/
    on sys.path would let its scripts shadow modules of the same name for the whole test run)."""
    spec = importlib.util.spec_from_file_location("bench_quick", BENCH / "quick.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.QUICK_NOTE)


QUICK_NOTE = _quick_note()

NUM = r"[-+]?\d[\d,]*(?:\.\d+)?"
#: Not benches: what the benches import or start.
HELPERS = {
    "floor_server.py": "the do-nothing server bench/lsp.py measures against (it starts it)",
    "quick.py": "the --quick option every bench takes",
}
#: Each bench's figure lines (regular expressions, matched per line); their groups are numbers,
#: or absent where an alternative says the part was skipped and why.
FIGURES: dict[str, list[str]] = {
    "agent.py": [
        rf"^agent overhead per step : ({NUM}) ms; ratio agent/bare = ({NUM})$",
        r"^requests extending the previous one byte for byte: (\d+)/(\d+) = ",
        r"^compactions: (\d+)$",
        rf"^load \+ Agent\.resume p50: ({NUM}) ms",
        rf"^wall per message: ({NUM}) ms without persistence",
    ],
    "archive.py": [
        rf"^  sync_turn\s+p50 ({NUM}) ms",
        rf"^  prefetch / bare\s+({NUM})x",
        rf"^(?:PostgreSQL: skipped \(.+\)|  prefetch, indexed p50 ({NUM}) ms.*x SQLite's)",
    ],
    "chat_lsp.py": [
        rf"^plain turn \(1 request\)\s+server p50\s+({NUM}) ms.*ratio\s+({NUM})x",
        rf"^tool turn: write_file \+ approval\s+server p50\s+({NUM}) ms.*ratio\s+({NUM})x",
        rf"^resume a \d+-message session\s+server p50\s+({NUM}) ms.*ratio\s+({NUM})x",
    ],
    "context.py": [
        rf"^  index build \(walker\)\s+({NUM}) ms\s+({NUM})x git ls-files",
        rf"^  workspace rules \(keystroke, cached\)\s+({NUM}) ms\s+({NUM})x",
    ],
    "lsp.py": [
        rf"^cold start \(spawn -> first diagnostics; bytecode cached\): ours median ({NUM}) ms"
        rf".* ratio ({NUM})x",
        rf"^ full-size\s+incremental\s+{NUM}\s+\d+\s+({NUM})\s+({NUM})\s+({NUM})x",
        rf"^    100 KB\s+full\s+{NUM}\s+\d+\s+({NUM})\s+({NUM})\s+({NUM})x",
    ],
    "mcp_roundtrip.py": [
        rf"^MCP call overhead without the disk \(a remove matching nothing\): ({NUM}) ms",
        rf"^MCP write overhead \(median mcp - median store\): ({NUM}) ms",
    ],
    "memreq.py": [
        rf"^tool add: \+({NUM}) ms over the bare call \(({NUM})x",
        rf"^tool remove: \+({NUM}) ms over the bare call",
        rf"^recall search: \+({NUM}) ms over the bare call",
    ],
    "merge.py": [
        rf"^driver median ({NUM}) ms",
        rf"^worst-case merge of two largest files: ({NUM}) ms",
    ],
    "near_duplicates.py": [
        rf"^  all\s+precision ({NUM}) recall ({NUM})",
        rf"^cost: ({NUM}) ms a check against 30 entries, ({NUM})x",
    ],
    "poisoning.py": [
        r"^auto\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$",
        r"^ask\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$",
        r"^(?:untrusted: not available on this server \(.+\)|untrusted\s+(\d+)/(\d+)\s+"
        r"(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\d+)\s+(\d+)\s+(\d+))$",
        rf"^ask\s+({NUM})\s+(\d+)/(\d+)\s+(\d+)/(\d+)$",
    ],
    "recall_quality.py": [
        r"^  search   hit@3: same words (\d+)/(\d+), other words (\d+)/(\d+)$",
        r"^(?:hybrid: skipped \(.+\)|hybrid \(BM25 \+ .+\))$",
    ],
    "render.py": [
        rf"^snapshot\s+({NUM}) ms .* ratio\s+({NUM})x$",
        rf"^session start \(cached\)\s+({NUM}) ms .* ratio\s+({NUM})x$",
        rf"^session start \(first\)\s+({NUM}) ms .* ratio\s+({NUM})x$",
    ],
    "safety.py": [
        rf"^  overall\s+(\d+) / (\d+) = ({NUM})$",
        rf"^  corpus, entry by entry\s+{NUM} KB\s+scan\s+({NUM}) us/KB.*ratio\s+({NUM})x",
    ],
    "store.py": [
        rf"^worst median ratio: ({NUM})x the floor",
        rf"^  where the extra goes: \w+ = floor \+ ({NUM}) us: path checks ({NUM}), "
        rf"lock ({NUM}), edit rules ({NUM}), scans ({NUM}), write ({NUM}), journal ({NUM}), "
        rf"the rest ({NUM}) \(us; (\d) scans\)$",
        rf"^(?:RAM disk: skipped \(.+\)|  floor ({NUM}) us, worst edit ({NUM}) us)",
    ],
    "taint_runs.py": [
        r"^chosen rule: copies caught (\d+)/(\d+); own words flagged (\d+)/(\d+)$",
        rf"^feed a 50,000-char tool result: p50 ({NUM}) ms; .* ratio ({NUM})x$",
        rf"^judge a 300-char write, {NUM} chars indexed: p50 ({NUM}) ms; .* ratio ({NUM})x$",
    ],
    "workspace.py": [
        rf"^search_text / rg: ({NUM})x",
        rf"^list_files first call / git ls-files -co --exclude-standard: ({NUM})x",
    ],
}


def test_every_bench_is_run_here() -> None:
    """A new bench must be added to FIGURES (or named a helper), so it is run too."""
    found = {path.name for path in BENCH.glob("*.py")}
    assert found == set(FIGURES) | set(HELPERS)


def figures(pattern: str, output: str) -> list[float]:
    """The numbers of the first line of `output` matching `pattern` (none: the test fails)."""
    match = re.search(pattern, output, re.MULTILINE)
    assert match is not None, f"no line matches {pattern!r} in:\n{output}"
    numbers = [float(g.replace(",", "")) for g in match.groups() if g is not None]
    assert all(math.isfinite(n) for n in numbers), match.group(0)
    return numbers


def run_quick(name: str, timeout: float) -> tuple[int, str, str]:
    """`bench/NAME --quick` in a session of its own: on a timeout the whole group is killed (the
    servers a bench started too) and the output so far is kept for the failure message."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT)])}
    env.pop("MY_AGENT_MEMORY_PROVIDER", None)
    proc = subprocess.Popen(
        [sys.executable, str(BENCH / name), "--quick"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{name} --quick still running after {timeout:.0f} s\n{out}\n{err}")
    return proc.returncode, out, err


@pytest.mark.timeout(400)
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_the_bench_runs_quick_and_prints_its_figures(name: str) -> None:
    code, out, err = run_quick(name, timeout=360)
    assert code == 0, f"exit {code}\n{out}\n{err}"
    assert "Traceback" not in err, err
    assert QUICK_NOTE in out.splitlines()
    for pattern in FIGURES[name]:
        figures(pattern, out)
