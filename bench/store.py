"""Latency of MemoryStore mutations against the floor of a bare crash-safe write of the same bytes.

The floor is what any crash-safe store must pay: temp file in the same folder, write, fsync, rename,
folder fsync. A mutation adds locking, re-reading, parsing, the safety scan and the journal on top; the
target is at most 1.2x the floor. Both are measured in the same run, interleaved, so machine noise hits
both alike.

Run: .venv/bin/python bench/store.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from my_agent_core.memory import MemoryStore, serialize

ENTRIES = [
    f"Project fact {i}: the service `svc-{i}` builds with `uv run pytest -k svc{i}` and deploys on "
    f"Fridays; its config lives in config/svc{i}.toml."
    for i in range(14)
]


def floor_write(path: Path, text: str) -> None:
    """The bare crash-safe write of `text` (what a mutation cannot avoid)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".floor.", suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        handle.write(text.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def timed(timings: dict[str, list[float]], name: str, action: Callable[[], object]) -> None:
    """Run `action` once and record its wall time under `name`."""
    t0 = time.perf_counter()
    action()
    timings[name].append(time.perf_counter() - t0)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        mem_dir = Path(tmp) / "memory"
        store = MemoryStore(mem_dir)
        for entry in ENTRIES:
            store.add("memory", entry)
        store.load_from_disk()
        # The same edits without the history journal, to show what the journal costs.
        bare = MemoryStore(Path(tmp) / "bare")
        for entry in ENTRIES:
            bare.add("memory", entry)
        bare.journal.append = lambda record: None  # type: ignore[method-assign]
        floor_path = mem_dir / "FLOOR.md"
        extra = "The user prefers short answers with code first and explanations after, in English."
        text_after_add = serialize([*store.entries("memory"), extra])
        print(
            f"store: {len(ENTRIES)} entries, {store.used('memory')}/{store.limit('memory')} chars"
        )

        timings: dict[str, list[float]] = {
            name: []
            for name in ("floor", "add", "replace", "remove", "add*", "replace*", "remove*")
        }
        for n in range(args.rounds):
            timed(timings, "floor", lambda: floor_write(floor_path, text_after_add))
            newer = extra + f" (v{n})"
            for suffix, s in (("", store), ("*", bare)):
                timed(timings, "add" + suffix, lambda s=s: s.add("memory", extra))
                timed(
                    timings,
                    "replace" + suffix,
                    lambda s=s, new=newer: s.replace("memory", "short answers", new),
                )
                timed(timings, "remove" + suffix, lambda s=s: s.remove("memory", "short answers"))

        floor_median = statistics.median(timings["floor"])
        floor_p99 = pct(timings["floor"], 0.99)
        print(
            f"{'operation':<10}{'median ms':>12}{'p99 ms':>10}{'median/floor':>14}{'p99/floor':>11}"
        )
        for name in timings:
            med, p99 = statistics.median(timings[name]), pct(timings[name], 0.99)
            print(
                f"{name:<10}{med * 1000:>12.3f}{p99 * 1000:>10.3f}"
                f"{med / floor_median:>14.2f}{p99 / floor_p99:>11.2f}"
            )
        worst = (
            max(statistics.median(timings[k]) for k in ("add", "replace", "remove")) / floor_median
        )
        bare_worst = (
            max(statistics.median(timings[k]) for k in ("add*", "replace*", "remove*"))
            / floor_median
        )
        print(f"worst median ratio: {worst:.2f}x the floor (target <= 1.20x)")
        print(f"  without the history journal (rows marked *): {bare_worst:.2f}x")
        journal = mem_dir / "history.jsonl"
        print(
            f"journal after {3 * args.rounds} edits: {len(journal.read_text().splitlines())} records"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
