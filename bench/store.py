"""Latency of MemoryStore mutations against the floor of a bare crash-safe write of the same bytes.

The floor is what any crash-safe store must pay: temp file in the same folder, write, fsync, rename,
folder fsync. A mutation adds locking, the path checks, re-reading, parsing, the safety scan and the
journal on top; the target is at most 1.2x the floor. Both are measured in the same run, interleaved,
so machine noise hits both alike; the same edits on a store without the journal show the journal's
own cost.

The same measurement on a RAM disk (/dev/shm), where a write costs almost nothing, shows the store's
own work in microseconds: that part does not depend on the disk or on other processes' I/O, so it
stays comparable on a loaded machine, where the floor itself swings.

Run: .venv/bin/python bench/store.py [--rounds N] [--dir FOLDER]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from my_agent_core.memory import MemoryStore, serialize

ENTRIES = [
    f"Project fact {i}: the service `svc-{i}` builds with `uv run pytest -k svc{i}` and deploys on "
    f"Fridays; its config lives in config/svc{i}.toml."
    for i in range(14)
]
EXTRA = "The user prefers short answers with code first and explanations after, in English."
OPERATIONS = ("add", "replace", "remove")
RAM_DISK = Path("/dev/shm")


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


def measure(folder: Path, rounds: int) -> dict[str, list[float]]:
    """Interleaved timings of the floor, the three edits, and the same edits without the journal
    (names marked *), on stores in a fresh temp folder under `folder`."""
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=folder) as tmp:
        store = MemoryStore(Path(tmp) / "memory")
        # The same edits without the history journal, to show what the journal costs.
        bare = MemoryStore(Path(tmp) / "bare")
        for entry in ENTRIES:
            store.add("memory", entry)
            bare.add("memory", entry)
        store.load_from_disk()
        bare.journal.append = lambda *records: None  # type: ignore[method-assign]
        floor_path = Path(tmp) / "memory" / "FLOOR.md"
        text_after_add = serialize([*store.entries("memory"), EXTRA])
        timings: dict[str, list[float]] = {
            name: [] for name in ("floor", *OPERATIONS, *(f"{op}*" for op in OPERATIONS))
        }
        for n in range(rounds):
            timed(timings, "floor", lambda: floor_write(floor_path, text_after_add))
            newer = EXTRA + f" (v{n})"
            for suffix, s in (("", store), ("*", bare)):
                timed(timings, "add" + suffix, partial(s.add, "memory", EXTRA))
                timed(timings, "replace" + suffix, partial(s.replace, "memory", "short ans", newer))
                timed(timings, "remove" + suffix, partial(s.remove, "memory", "short answers"))
        store.close()
        bare.close()
        return timings


def median(timings: dict[str, list[float]], name: str) -> float:
    return statistics.median(timings[name])


def journal_cost(timings: dict[str, list[float]]) -> float:
    """Seconds the journal adds to a write: median with it minus median without, averaged."""
    return statistics.mean(median(timings, op) - median(timings, op + "*") for op in OPERATIONS)


def report(timings: dict[str, list[float]]) -> None:
    floor_median = median(timings, "floor")
    floor_p99 = pct(timings["floor"], 0.99)
    print(f"{'operation':<10}{'median ms':>12}{'p99 ms':>10}{'median/floor':>14}{'p99/floor':>11}")
    for name in timings:
        med, p99 = median(timings, name), pct(timings[name], 0.99)
        print(
            f"{name:<10}{med * 1000:>12.3f}{p99 * 1000:>10.3f}"
            f"{med / floor_median:>14.2f}{p99 / floor_p99:>11.2f}"
        )
    worst = max(median(timings, op) for op in OPERATIONS) / floor_median
    bare_worst = max(median(timings, op + "*") for op in OPERATIONS) / floor_median
    journal = journal_cost(timings)
    print(f"worst median ratio: {worst:.2f}x the floor (target <= 1.20x)")
    print(f"  without the history journal (rows marked *): {bare_worst:.2f}x")
    print(
        f"  the journal's own cost: {journal * 1000:+.3f} ms a write "
        f"({journal / floor_median:+.2f}x the floor), measured in this run"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: the temp folder)"
    )
    args = parser.parse_args()
    folder = args.dir if args.dir is not None else Path(tempfile.gettempdir())
    print(f"store: {len(ENTRIES)} entries, {len(serialize(ENTRIES)) - 1}/2200 chars")

    print(f"\non disk ({folder}):")
    report(measure(folder, args.rounds))

    if RAM_DISK.is_dir() and os.access(RAM_DISK, os.W_OK):
        ram = measure(RAM_DISK, args.rounds * 3)
        floor_us = median(ram, "floor") * 1e6
        worst_us = max(median(ram, op) for op in OPERATIONS) * 1e6
        bare_us = max(median(ram, op + "*") for op in OPERATIONS) * 1e6
        print(f"\non a RAM disk ({RAM_DISK}), where the write itself costs almost nothing:")
        print(
            f"  floor {floor_us:.0f} us, worst edit {worst_us:.0f} us: the store's own work is "
            f"{worst_us - floor_us:.0f} us a write, of which the journal "
            f"{journal_cost(ram) * 1e6:.0f} us ({bare_us - floor_us:.0f} us without it)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
