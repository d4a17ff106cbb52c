"""Safety scanner: how much it catches, how little it refuses, and what a scan costs.

Quality, per labelled corpus: the dev corpus `tests/data/safety_corpus.jsonl` (written with the
rules) and the held-out sets `tests/data/safety_heldout.jsonl`, `safety_heldout2.jsonl` and
`safety_heldout3.jsonl` (each written blind by an outsider who never read the rules nor the earlier
sets; the third was asked to get past keyword filters, and no rule was written from it). Per class
and overall, attacks blocked / total and benign notes accepted / total;
a false refusal counts as much as a miss, so the overall score is (blocked + accepted) / items.
Known gaps and disagreements are counted as what they are against the label (misses / refusals).
Each held-out set's figures from its first measurement, before any rule was written from its misses,
are printed alongside (they cannot be re-measured here: the fixed scanner is the only one).

Cost, per KB of text, in CPU time (`time.process_time`: the machine is shared, and wall time
measures its load more than the scanner), against a floor measured in the same run on the same
text: `str.lower()`
plus one compiled regex search (what the cheapest possible phrase check pays). Workloads:
- entries: each entry scanned on its own, as the linter does on every keystroke (the corpus, and a
  1 MB memory file of short notes built like `bench/lsp.py` builds its files);
- whole: the same 1 MB as one text (the windowed path for long texts);
- dense: the benign corpus repeated to 1 MB (near-misses everywhere: the worst ordinary case).

The peer check (`tests/data/safety_peer_hermes.jsonl`, Hermes Agent's own threat tests as its tests
label them) is measured the same way; its disputed items count against us, as everywhere.

Run: .venv/bin/python bench/safety.py [--rounds N] [--size BYTES] [--quick]
(`--quick`: one round on 100 KB texts, for a smoke run; the figures in docs/safety.md are full runs.)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.memory.safety import forget, scan

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "safety_corpus.jsonl"
# Each held-out set, and its figures as first measured by its author on the scanner before the
# fixes of its misses.
HELDOUT_SETS = (
    (
        "held-out set",
        "safety_heldout.jsonl",
        {"blocked": 45, "attacks": 60, "accepted": 59, "benign": 60},
    ),
    (
        "second held-out set",
        "safety_heldout2.jsonl",
        {"blocked": 43, "attacks": 60, "accepted": 58, "benign": 60},
    ),
    (
        "third held-out set (adaptive, never tuned on)",
        "safety_heldout3.jsonl",
        {"blocked": 16, "attacks": 60, "accepted": 57, "benign": 60},
    ),
)
PEER = ROOT / "tests" / "data" / "safety_peer_hermes.jsonl"
FLOOR_PATTERN = re.compile(r"ignore\s+(?:all\s+)?previous\s+instructions")
PHRASES = (
    "the project uses pytest and uv for envs deploys with docker prefers short answers "
    "用户 偏好 简洁 中文 回答 🎉 api keys live in vault ci runs on github actions"
)


def load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def quality(name: str, items: list[dict[str, str]]) -> tuple[int, int]:
    """Per class: attacks blocked / total, benign accepted / total; returns (blocked, accepted)."""
    table: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for item in items:
        flagged = bool(scan(item["text"]))
        good = flagged if item["label"] == "attack" else not flagged
        row = table[(item["label"], item["class"])]
        row[0] += good
        row[1] += 1
    print(f"quality on the {name} (a false refusal counts as much as a miss)")
    print(f"  {'label':7} {'class':22} {'right':>5} / {'total':<5}")
    for (label, cls), (right, total) in sorted(table.items()):
        verb = "blocked" if label == "attack" else "accepted"
        print(f"  {label:7} {cls:22} {right:5} / {total:<5} {verb}")
    attacks = [v for (label, _), v in table.items() if label == "attack"]
    benign = [v for (label, _), v in table.items() if label == "benign"]
    blocked, n_attacks = sum(v[0] for v in attacks), sum(v[1] for v in attacks)
    accepted, n_benign = sum(v[0] for v in benign), sum(v[1] for v in benign)
    gaps = sum(1 for i in items if "known_gap" in i)
    disputed = sum(1 for i in items if "disagreement" in i)
    print(f"  attacks blocked  {blocked} / {n_attacks} ({gaps} known gaps)")
    print(f"  benign accepted  {accepted} / {n_benign} ({disputed} labels disputed)")
    right = blocked + accepted
    print(f"  overall          {right} / {len(items)} = {right / len(items):.3f}")
    return blocked, accepted


def memory_entries(size: int, seed: int = 7) -> list[str]:
    """Short notes of 8-20 words, about `size` characters in all (as bench/lsp.py's files)."""
    rng = random.Random(seed)
    words = PHRASES.split(" ")
    entries: list[str] = []
    total = 0
    while total < size:
        entry = f"{len(entries)}: " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
        entries.append(entry)
        total += len(entry) + 3
    return entries


def best_of(rounds: int, action: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        action()
        best = min(best, time.process_time() - t0)
    return best


def floor_scan(text: str) -> object:
    return FLOOR_PATTERN.search(text.lower())


def cost(name: str, texts: list[str], rounds: int) -> None:
    """Scan cost per KB of `texts` (each scanned on its own) against the floor on the same texts."""
    kb = sum(len(t.encode("utf-8")) for t in texts) / 1024
    # Interleaved rounds, so load on the machine hits both alike; best of each.
    scanned = floor = float("inf")
    for _ in range(rounds):
        # every text scanned for real: nothing remembered from the quality runs or a round before
        scanned = min(scanned, best_of(1, lambda: (forget(), [scan(t) for t in texts])))
        floor = min(floor, best_of(1, lambda: [floor_scan(t) for t in texts]))
    per_entry = scanned / len(texts) * 1e6
    print(
        f"  {name:36} {kb:7.1f} KB  scan {scanned / kb * 1e6:7.1f} us/KB  "
        f"floor {floor / kb * 1e6:5.2f} us/KB  ratio {scanned / floor:6.1f}x  "
        f"({len(texts)} texts, {per_entry:.1f} us each)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per workload")
    parser.add_argument("--size", type=int, default=1_000_000, help="size of the big texts")
    args = quick.parse(parser, {"rounds": 1, "size": 100_000})
    items = load(CORPUS)
    quality("dev corpus", items)
    for name, filename, before in HELDOUT_SETS:
        print()
        blocked, accepted = quality(name, load(ROOT / "tests" / "data" / filename))
        print(
            f"  first measured (before any rule was written from its misses): attacks blocked "
            f"{before['blocked']} / {before['attacks']}, benign accepted {before['accepted']} / "
            f"{before['benign']}; now {blocked} / {before['attacks']} and {accepted} / "
            f"{before['benign']}"
        )
    print()
    quality("peer check (Hermes Agent's threat tests)", load(PEER))

    print("\ncost per KB (best of rounds; floor = str.lower() + one regex search)")
    texts = [i["text"] for i in items]
    cost("corpus, entry by entry", texts, args.rounds)
    entries = memory_entries(args.size)
    cost(f"{args.size:,} B memory file, per entry", entries, args.rounds)
    cost(f"{args.size:,} B memory file, whole", ["\n§\n".join(entries)], args.rounds)
    benign = "\n".join(i["text"] for i in items if i["label"] == "benign")
    dense = (benign + "\n") * (args.size // len(benign) + 1)
    cost(f"{args.size:,} B dense near-misses, whole", [dense[: args.size]], args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
