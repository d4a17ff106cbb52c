"""Latency of MemoryStore mutations against the floor of a bare crash-safe write of the same bytes.

The floor is what any crash-safe store must pay: temp file in the same folder, write, fsync, rename,
folder fsync. A mutation adds locking, the path checks, re-reading, parsing, the safety scan and the
journal on top; the target is at most 1.2x the floor. Both are measured in the same run, interleaved,
so machine noise hits both alike; the same edits on a store without the journal show the journal's
own cost, and each other part of the store's work is timed on its own, in the same loop, to print
where the extra goes beside the ratio, and how much of it is what no edit may skip (the path
checks, the lock, the scan, the journal). Every round edits fresh text, as a session does: the
scanner remembers the findings of a text it has seen (a reviewed edit runs its rules twice, a
replace names the entry it replaces), and the same text every round would time that memory instead
of the scan. The store lives in a workspace's own layout (`.my_agent_core/memory`), as the
product keeps it, so its layout checks are timed too.

The floor itself swings with the disk and the other processes on the machine (0.45-0.9 ms here):
run the whole bench several times and take the best, both sides always from the same run.

The same measurement on a RAM disk (/dev/shm), where a write costs almost nothing, shows the store's
own work in microseconds: that part does not depend on the disk or on other processes' I/O, so it
stays comparable on a loaded machine, where the floor itself swings.

Run: .venv/bin/python bench/store.py [--rounds N] [--dir FOLDER] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.layout import FILE_NAMES, JOURNAL_NAME, LOCK_NAME, TARGETS, memory_dir_of
from my_agent_core.memory import MemoryStore, Operation, edits, serialize
from my_agent_core.memory.lock_file import FolderHold
from my_agent_core.memory.safety import scan
from my_agent_core.memory.store_folder import StoreFolder
from my_agent_core.safe_write import write_atomic

ENTRIES = [
    f"Project fact {i}: the service `svc-{i}` builds with `uv run pytest -k svc{i}` and deploys on "
    f"Fridays; its config lives in config/svc{i}.toml."
    for i in range(14)
]
EXTRA = "The user prefers short answers with code first and explanations after, in English."
OPERATIONS = ("add", "replace", "remove")
RAM_DISK = Path("/dev/shm")
#: The parts of the store's work timed on their own (the journal: edits with it minus without it).
PARTS = {
    "path checks": "the workspace layout check, and the verdict on the look at the folder's own files",
    "lock": "the thread lock, flock, and that look (an lstat a name; `.lock` still the file held)",
    "edit rules": "validate, locate, budget, message (without the scans)",
    "scans": "the safety scan of one entry's text, times the scans of the edit (SCANS)",
    "write": "the atomic write's own extra over the floor (fchmod, a stat, temp name)",
}
#: Safety scans per edit of fresh text: an add scans its text, a replace its new text; the entry a
#: replace or remove names in its message was scanned when it was added (`safety.scan` remembers
#: each text's findings), so it costs no scan again (tests/test_scan_memo.py counts them).
SCANS = {"add": 1, "replace": 1, "remove": 0}


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


def part_actions(mem_dir: Path, text: str) -> dict[str, Callable[[int], object]]:
    """Each part of an edit's work, done on its own on the folder of the timed store (a second
    `StoreFolder` of it: its own lock descriptor, the same files)."""
    folder = StoreFolder(mem_dir, TARGETS, (*FILE_NAMES.values(), JOURNAL_NAME, LOCK_NAME))
    thread_lock = threading.RLock()
    entries = [*ENTRIES, EXTRA]
    _, replace = edits.batch(
        "MEMORY.md", 2200, [Operation("replace", old_text="short ans", new_content=EXTRA)]
    )
    data = text.encode("utf-8")
    twin = mem_dir / "TWIN.md"

    look = folder.files.look()

    def path_checks(_n: int) -> object:
        folder.folder_error()
        folder.files.offer(look)  # the look itself is the lock's (timed there)
        return folder.files.locate("MEMORY.md", every_pair=True)

    def lock(_n: int) -> None:
        with FolderHold(folder.lock, thread_lock, 10.0, "MEMORY.md"):  # the layout check is above
            pass

    return {
        "path checks": path_checks,
        "lock": lock,
        "edit rules": lambda _n: edits.plan("MEMORY.md", 2200, entries, replace),
        "scans": lambda n: scan(f"{EXTRA} (part {n})"),
        "write": lambda _n: write_atomic(twin, data, mode=0o644, keep_mode=False),
    }


def measure(folder: Path, rounds: int) -> dict[str, list[float]]:
    """Interleaved timings of the floor, the three edits, the same edits without the journal
    (names marked *) and the parts, on stores in a fresh temp folder under `folder`."""
    with tempfile.TemporaryDirectory(prefix="bench-store-", dir=folder) as tmp:
        # A workspace's own layout, as the product keeps memory (its layout checks included).
        mem_dir = memory_dir_of(Path(tmp) / "workspace")
        store = MemoryStore(mem_dir)
        # The same edits without the history journal, to show what the journal costs.
        bare = MemoryStore(memory_dir_of(Path(tmp) / "bare"))
        for entry in ENTRIES:
            store.add("memory", entry)
            bare.add("memory", entry)
        store.load_from_disk()
        bare.journal.append = lambda *records: None  # type: ignore[method-assign]
        floor_path = mem_dir / "FLOOR.md"
        text_after_add = serialize([*store.entries("memory"), EXTRA])
        parts = part_actions(mem_dir, text_after_add)
        timings: dict[str, list[float]] = {
            name: [] for name in ("floor", *OPERATIONS, *(f"{op}*" for op in OPERATIONS), *parts)
        }
        for n in range(rounds):
            timed(timings, "floor", lambda: floor_write(floor_path, text_after_add))
            for suffix, s in (("", store), ("*", bare)):
                fresh, newer = f"{EXTRA} (round {n}{suffix})", f"{EXTRA} (v{n}{suffix})"
                timed(timings, "add" + suffix, partial(s.add, "memory", fresh))
                timed(timings, "replace" + suffix, partial(s.replace, "memory", "short ans", newer))
                timed(timings, "remove" + suffix, partial(s.remove, "memory", "short answers"))
            for name, action in parts.items():
                timed(timings, name, partial(action, n))
        store.close()
        bare.close()
        return timings


def median(timings: dict[str, list[float]], name: str) -> float:
    return statistics.median(timings[name])


def journal_cost(timings: dict[str, list[float]]) -> float:
    """Seconds the journal adds to a write: median with it minus median without, averaged."""
    return statistics.mean(median(timings, op) - median(timings, op + "*") for op in OPERATIONS)


#: The parts no edit may skip: the checks that keep it safe and its record.
SAFETY_PARTS = ("path checks", "lock", "scans", "journal")


def shares_of(timings: dict[str, list[float]]) -> tuple[str, float, dict[str, float]]:
    """The worst edit, its extra over the floor and that extra by part (seconds); `the rest` is
    what no part accounts for (the store's bookkeeping, the record, the event, the message)."""
    worst = max(OPERATIONS, key=lambda op: median(timings, op))
    floor = median(timings, "floor")
    extra = median(timings, worst) - floor
    shares = {name: median(timings, name) for name in PARTS}
    shares["scans"] *= SCANS[worst]
    shares["write"] -= floor
    shares["journal"] = journal_cost(timings)
    shares["the rest"] = extra - sum(shares.values())
    return worst, extra, shares


def breakdown(timings: dict[str, list[float]]) -> str:
    """The worst edit's extra over the floor, by part (microseconds)."""
    worst, extra, shares = shares_of(timings)
    listed = ", ".join(f"{name} {value * 1e6:+.0f}" for name, value in shares.items())
    return f"{worst} = floor + {extra * 1e6:.0f} us: {listed} (us; {SCANS[worst]} scans)"


def safety_share(timings: dict[str, list[float]]) -> str:
    """What the parts no edit may skip take of the worst edit, against the floor."""
    _worst, _extra, shares = shares_of(timings)
    safety = sum(shares[name] for name in SAFETY_PARTS)
    return (
        f"{safety * 1e6:.0f} us of it ({safety / median(timings, 'floor'):+.2f}x the floor) is "
        f"what no edit may skip: {', '.join(SAFETY_PARTS)}"
    )


def report(timings: dict[str, list[float]]) -> None:
    floor_median = median(timings, "floor")
    floor_p99 = pct(timings["floor"], 0.99)
    print(f"{'operation':<10}{'median ms':>12}{'p99 ms':>10}{'median/floor':>14}{'p99/floor':>11}")
    for name in ("floor", *OPERATIONS, *(f"{op}*" for op in OPERATIONS)):
        med, p99 = median(timings, name), pct(timings[name], 0.99)
        print(
            f"{name:<10}{med * 1000:>12.3f}{p99 * 1000:>10.3f}"
            f"{med / floor_median:>14.2f}{p99 / floor_p99:>11.2f}"
        )
    worst = max(median(timings, op) for op in OPERATIONS) / floor_median
    bare_worst = max(median(timings, op + "*") for op in OPERATIONS) / floor_median
    journal = journal_cost(timings)
    print(f"worst median ratio: {worst:.2f}x the floor (target <= 1.20x)")
    print(f"  where the extra goes: {breakdown(timings)}")
    print(f"  {safety_share(timings)}")
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
    args = quick.parse(parser, {"rounds": 20})
    folder = args.dir if args.dir is not None else Path(tempfile.gettempdir())
    print(f"store: {len(ENTRIES)} entries, {len(serialize(ENTRIES)) - 1}/2200 chars")
    print("parts of an edit's work, timed on their own in the same loop:")
    for name, what in PARTS.items():
        print(f"  {name}: {what}")

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
        print(f"  where it goes: {breakdown(ram)}")
    else:
        print(f"\nRAM disk: skipped ({RAM_DISK} is not a writable folder here)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
