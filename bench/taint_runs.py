"""Rule (b) of the trust policy measured: which run length tells a copy from the user's own words,
and what the copy index costs.

1. The labelled set `tests/data/trust_runs.jsonl`: `copy` items (a planted text as a model saves it:
   verbatim, re-cased, re-punctuated, cut, prefixed, fullwidth or look-alike letters, 9 languages)
   and `own` items (what a benign session saves: the user's fact in their own words, next to the
   file it is about). For each `RunRule` of a grid: the copies caught and the own words flagged
   (each a needless approval). The chosen rule (`trust.text.DEFAULT_RULE`) is marked.
2. Cost, against floors measured in the same run: feeding one 50,000-character tool result (the
   read_file cap) vs folding it alone, and judging one 300-character write against a session that
   read `--indexed` characters vs one substring search over that text.

`bench/poisoning.py` measures the policy end to end (attacks that reach memory, approvals per
benign session); this one only the run rule behind it. `--quick`: fewer rounds, a smaller index.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "bench"))

from my_agent_core.memory.normalize import fold  # noqa: E402
from my_agent_core.trust import DEFAULT_RULE, RunRule, Source, TaintTracker  # noqa: E402
from quick import parse  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "trust_runs.jsonl"
GRID = [RunRule(m, w) for m in (8, 10, 12, 14, 16, 20) for w in (0, 6, 8)]
WORDS = [
    "build",
    "test",
    "deploy",
    "cache",
    "module",
    "config",
    "server",
    "client",
    "user",
    "memory",
    "file",
    "line",
    "agent",
    "tool",
    "project",
    "release",
    "branch",
    "commit",
    "review",
    "docs",
    "python",
    "package",
    "version",
    "script",
    "folder",
]


def load() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def flagged(rule: RunRule, item: dict[str, str]) -> bool:
    tracker = TaintTracker(rule=rule)
    tracker.receive(Source("file", "source", item["source"]), this_turn=False)
    return bool(tracker.assess([item["entry"]]).copied)


def accuracy(items: list[dict[str, str]]) -> None:
    copies = [i for i in items if i["kind"] == "copy"]
    own = [i for i in items if i["kind"] == "own"]
    langs = len({i["lang"] for i in items})
    print(f"labelled set: {len(copies)} copies, {len(own)} own-words entries, {langs} languages")
    print("rule (min units, whole-text units)  copies caught   own words flagged")
    for rule in GRID:
        caught = sum(flagged(rule, i) for i in copies)
        wrong = sum(flagged(rule, i) for i in own)
        mark = "  <- chosen" if rule == DEFAULT_RULE else ""
        print(
            f"  run {rule.min_units:>2}, whole {rule.whole_min_units:>2}"
            f"                   {caught:>3}/{len(copies):<3}        {wrong:>3}/{len(own)}{mark}"
        )
    missed = [i["note"] for i in copies if not flagged(DEFAULT_RULE, i)]
    extra = [i["note"] for i in own if flagged(DEFAULT_RULE, i)]
    print(
        f"chosen rule: copies caught {len(copies) - len(missed)}/{len(copies)}; "
        f"own words flagged {len(extra)}/{len(own)}"
    )
    for note in missed:
        print(f"  missed copy: {note}")
    for note in extra:
        print(f"  flagged own words: {note}")


def prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:chars]


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def cost(rounds: int, indexed: int) -> None:
    rng = random.Random(7)
    result = prose(rng, 50_000)
    feed, floor = [], []
    for _ in range(rounds):
        tracker = TaintTracker()
        start = time.perf_counter()
        tracker.receive(Source("file", "big.txt", result))
        feed.append(time.perf_counter() - start)
        start = time.perf_counter()
        fold(result)
        floor.append(time.perf_counter() - start)
    ratio = p50(feed) / p50(floor)
    print(
        f"feed a 50,000-char tool result: p50 {p50(feed):.2f} ms; fold alone "
        f"{p50(floor):.2f} ms; ratio {ratio:.1f}x"
    )
    tracker = TaintTracker()
    texts = [prose(rng, 20_000) for _ in range(max(1, indexed // 20_000))]
    for text in texts:
        tracker.receive(Source("command", "cat", text))
    write = prose(rng, 300).replace("\n", " ")
    judge, search = [], []
    whole = "\n".join(texts)
    for _ in range(rounds):
        start = time.perf_counter()
        tracker.assess([write])
        judge.append(time.perf_counter() - start)
        start = time.perf_counter()
        _ = "zz unseen run of words zz" in whole
        search.append(time.perf_counter() - start)
    print(
        f"judge a 300-char write, {tracker.indexed_chars:,} chars indexed: p50 "
        f"{p50(judge):.2f} ms; one substring search {p50(search):.3f} ms; "
        f"ratio {p50(judge) / max(p50(search), 1e-6):.0f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--indexed", type=int, default=2_000_000, help="characters indexed")
    args = parse(parser, {"rounds": 3, "indexed": 200_000}, argv)
    accuracy(load())
    cost(args.rounds, args.indexed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
