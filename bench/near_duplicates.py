"""Precision and recall of the near-duplicate check behind an add's "It may restate entry N" note.

The set is tests/data/near_duplicates.jsonl: pairs of memory entries in English and Chinese, each
an existing entry and a new one, labelled `duplicate` when the new one restates it (`reworded`),
changes its value (`updated`) or extends it (`extended`), all cases where `replace` is the right
call, and not a duplicate when it is a different fact on the same topic (`topic`).

Printed: precision / recall at the shipped `SIMILAR_THRESHOLD`, per language and per kind, the
sweep of thresholds around it, and a 2-fold check (a threshold chosen on one half of the pairs,
scored on the other) that shows how much of the figure is tuning on this very set. Then the cost
of the check per add against a full MEMORY.md, as a ratio to the add itself.

Run: .venv/bin/python bench/near_duplicates.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.memory import MemoryStore
from my_agent_core.memory.similar import SIMILAR_THRESHOLD, near_duplicate_note, similarity

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "near_duplicates.jsonl"


@dataclass(frozen=True)
class Pair:
    lang: str
    kind: str
    duplicate: bool
    existing: str
    new: str


def load_pairs(path: Path = DATA) -> list[Pair]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(
                Pair(row["lang"], row["kind"], row["duplicate"], row["existing"], row["new"])
            )
    return pairs


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    flagged: int
    positives: int

    def __str__(self) -> str:
        return (
            f"precision {self.precision:.3f} recall {self.recall:.3f} "
            f"({self.flagged} flagged, {self.positives} duplicates)"
        )


def score(pairs: Sequence[Pair], threshold: float) -> Score:
    """Precision and recall of `similarity >= threshold` as the duplicate test on `pairs`."""
    flagged = [p for p in pairs if similarity(p.existing, p.new) >= threshold]
    true = sum(p.duplicate for p in flagged)
    positives = sum(p.duplicate for p in pairs)
    precision = true / len(flagged) if flagged else 1.0
    recall = true / positives if positives else 1.0
    return Score(precision, recall, len(flagged), positives)


def best_threshold(pairs: Sequence[Pair], floor: float = 0.9) -> float:
    """The threshold of highest recall whose precision is at least `floor` (ties: the higher one)."""
    grid = [n / 100 for n in range(10, 90)]
    good = [(score(pairs, t).recall, t) for t in grid if score(pairs, t).precision >= floor]
    return max(good)[1] if good else max(grid)


def two_fold(pairs: Sequence[Pair]) -> list[tuple[float, Score]]:
    """Tune on the even pairs and score the odd ones, then the other way round."""
    halves = [pairs[0::2], pairs[1::2]]
    results = []
    for tune, test in (halves, halves[::-1]):
        threshold = best_threshold(tune)
        results.append((threshold, score(test, threshold)))
    return results


def cost_ratio(rounds: int) -> tuple[float, float]:
    """Time of the note's check per add (seconds), and its ratio to the time of an add on the same
    full MEMORY.md."""
    entries = [
        f"Service {n} listens on port {8000 + n}; its logs are under /var/log/svc{n}."
        for n in range(30)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp), memory_char_limit=100_000)
        for entry in entries:
            store.add("memory", entry)
        new = "Service 7 now listens on port 9007."

        def timed(job: Callable[[], object]) -> float:
            start = time.perf_counter()
            for _ in range(rounds):
                job()
            return (time.perf_counter() - start) / rounds

        def add_and_undo() -> None:
            store.add("memory", new)
            store.remove("memory", new)

        check = timed(lambda: near_duplicate_note(entries, new, "MEMORY.md"))
        edit = timed(add_and_undo) / 2
    return check, check / edit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args = quick.parse(parser, {}, argv)
    pairs = load_pairs()
    print(f"{len(pairs)} pairs from {DATA.relative_to(ROOT)}; threshold {SIMILAR_THRESHOLD}")
    print(f"  all        {score(pairs, SIMILAR_THRESHOLD)}")
    for lang in sorted({p.lang for p in pairs}):
        subset = [p for p in pairs if p.lang == lang]
        print(f"  {lang:<10} {score(subset, SIMILAR_THRESHOLD)}")
    print("per kind (share flagged):")
    for kind in sorted({p.kind for p in pairs}):
        subset = [p for p in pairs if p.kind == kind]
        hits = sum(similarity(p.existing, p.new) >= SIMILAR_THRESHOLD for p in subset)
        print(f"  {kind:<10} {hits}/{len(subset)}")
    print("sweep:")
    for step in range(-4, 5):
        threshold = round(SIMILAR_THRESHOLD + step * 0.02, 2)
        print(f"  {threshold:.2f}  {score(pairs, threshold)}")
    print("2-fold (threshold tuned on one half, scored on the other):")
    for threshold, result in two_fold(pairs):
        print(f"  tuned {threshold:.2f}: {result}")
    seconds, ratio = cost_ratio(20 if args.quick else 200)
    print(
        f"cost: {seconds * 1e3:.2f} ms a check against 30 entries, {ratio:.2f}x the time of the "
        "add it annotates"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
