"""The merge driver end to end, as git runs it: one process per merge of two 2,200-char MEMORY.md.

Most of a driver run is the interpreter starting and importing the package, so the figures sit
beside two floors measured in the same run, interleaved: `python -c pass` (the interpreter alone)
and `python -c "import my_agent_core.cli"` (the package's import). Target: a driver run under 100 ms.
The in-process merge of the same files is printed too.

The worst case of the pairing of edited entries is measured beside it: files of the store's largest
size (256 KB) whose entries are long runs over two letters (difflib's slowest input), every entry
edited on both sides; it took hours before the pairing was bounded. Target: well under a second.

Run: .venv/bin/python bench/merge.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.memory.document import budget_used, serialize
from my_agent_core.memory.limits import MAX_FILE_BYTES
from my_agent_core.memory.merge import merge_texts
from my_agent_core.team.git_setup import driver_command

TARGET_MS = 100.0
WORST_TARGET_MS = 500.0


def versions() -> tuple[list[str], list[str], list[str]]:
    """A base and two sides of about 2,200 chars: each side edits, removes and adds entries."""
    base = [
        f"Fact {i}: module `pkg/mod{i}.py` is tested by `uv run pytest tests/test_mod{i}.py -q` and "
        f"owned by team {i % 3}."
        for i in range(21)
    ]
    ours = [
        e.replace("owned by", "maintained by") if i in (2, 7) else e for i, e in enumerate(base)
    ]
    del ours[11]
    ours += ["Ours: releases are cut on Tuesdays from main.", "Ours: the staging host is stg-1."]
    theirs = [e + " Flaky on CI." if i in (4, 15) else e for i, e in enumerate(base)]
    del theirs[17]
    theirs += ["Theirs: secrets come from the vault, never from .env.", "Theirs: use Python 3.11."]
    return base, ours, theirs


def worst_versions(count: int) -> tuple[str, str, str]:
    """`count` entries filling the store's largest file, each a run over two letters, every one
    edited on both sides (all must be kept: both versions of each)."""
    rnd = random.Random(7)
    size = MAX_FILE_BYTES // count - 4
    base = ["".join(rnd.choice("ab") for _ in range(size)) for _ in range(count)]
    ours = [e[:-1] + "O" for e in base]
    theirs = [e[:-1] + "T" for e in base]
    return serialize(base), serialize(ours), serialize(theirs)


def worst_case(rounds: int) -> float:
    """The slowest of the worst shapes (entry counts), median over `rounds`, in ms."""
    slowest = 0.0
    for count in (8, 64, 1000, 3200):
        texts = worst_versions(count)
        samples = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            merged = merge_texts(*texts)
            samples.append(time.perf_counter() - t0)
        assert len(merged.entries) == 2 * count, "an edited entry was lost"
        median = statistics.median(samples) * 1000
        print(
            f"worst pairing, {count:>5} entries of {MAX_FILE_BYTES // count - 4:>6,} chars: "
            f"{median:8.1f} ms"
        )
        slowest = max(slowest, median)
    return slowest


def run(command: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = quick.parse(parser, {"rounds": 3})
    base, ours, theirs = versions()
    print(
        f"versions: base {budget_used(base)}, ours {budget_used(ours)}, theirs "
        f"{budget_used(theirs)} chars"
    )
    # The command git-setup registers, with git's %O %A %B %P filled in.
    template = driver_command().split(" merge-driver ")[0]
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as tmp:
        folder = Path(tmp)
        files = {name: folder / f"{name}.md" for name in ("base", "ours", "theirs", "pristine")}
        for name, entries in (("base", base), ("pristine", ours), ("theirs", theirs)):
            files[name].write_text(serialize(entries), encoding="utf-8")
        driver = [
            *template.split(" "),
            "merge-driver",
            str(files["base"]),
            str(files["ours"]),
            str(files["theirs"]),
            ".my_agent_core/memory/MEMORY.md",
        ]
        floors = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import my_agent_core.cli": [sys.executable, "-c", "import my_agent_core.cli"],
        }
        timings: dict[str, list[float]] = {name: [] for name in [*floors, "merge-driver"]}
        for _ in range(args.rounds):
            for name, command in floors.items():
                timings[name].append(run(command))
            shutil.copyfile(files["pristine"], files["ours"])
            timings["merge-driver"].append(run(driver))
        merged = files["ours"].read_text(encoding="utf-8")
        texts = [files[n].read_text(encoding="utf-8") for n in ("base", "pristine", "theirs")]
        in_process: list[float] = []
        for _ in range(args.rounds * 5):
            t0 = time.perf_counter()
            result = merge_texts(*texts)
            in_process.append(time.perf_counter() - t0)
        assert result.text == merged, "the driver and the in-process merge disagree"
    print(f"merged: {budget_used(list(result.entries))} chars, {len(result.entries)} entries")
    print(f"{'process':<26}{'median ms':>10}{'p90 ms':>9}")
    for name, values in timings.items():
        print(f"{name:<26}{statistics.median(values) * 1000:>10.1f}{pct(values, 0.9) * 1000:>9.1f}")
    print(f"{'merge in process':<26}{statistics.median(in_process) * 1000:>10.2f}")
    driver_ms = statistics.median(timings["merge-driver"]) * 1000
    start_ms = statistics.median(timings["python -c pass"]) * 1000
    import_ms = statistics.median(timings["import my_agent_core.cli"]) * 1000
    print(
        f"start-up share of a driver run: interpreter {start_ms / driver_ms:.0%}, interpreter + "
        f"package import {import_ms / driver_ms:.0%}"
    )
    print(
        f"driver median {driver_ms:.1f} ms = {driver_ms / TARGET_MS:.2f}x the {TARGET_MS:.0f} ms target"
    )
    worst_ms = worst_case(1 if args.quick else 5)
    verdict = "ok" if worst_ms < WORST_TARGET_MS else "OVER"
    print(
        f"worst-case merge of two largest files: {worst_ms:.0f} ms "
        f"(target < {WORST_TARGET_MS:.0f} ms) {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
