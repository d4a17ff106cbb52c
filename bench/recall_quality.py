"""Recall quality on a small labelled set: keyword recall (BM25 evidence) alone vs hybrid (keywords and
all-MiniLM-L6-v2 embeddings fused), for search (hit@3) and for unasked recall (hit@3 of what passes the
bar, and how many ordinary messages recall something they should not).

Needs the `semantic` extra (pip install torch --index-url https://download.pytorch.org/whl/cpu, then
pip install -e '.[semantic]'); without it only the keyword figures are printed. The set is tests/support/recall_corpus.py: 23 archived items,
10 messages that reuse an item's words, 15 that say the same in other words, 15 unrelated messages.

Run: .venv/bin/python bench/recall_quality.py [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.recall_corpus import PARAPHRASES, RELATED, REMOVED, TURNS, UNRELATED

import quick
from my_agent_core.memory.providers import semantic
from my_agent_core.memory.providers.archive import ArchiveProvider
from my_agent_core.memory.providers.indexed import IndexedArchiveProvider
from my_agent_core.memory.providers.items import RecallItem


def fill(provider: IndexedArchiveProvider) -> None:
    for user, reply in TURNS:
        provider.sync_turn(user, reply)
    for target, action, before, after in REMOVED:
        provider.on_memory_write(target, action, before, after)


def hit_at_3(find: Callable[[str], Sequence[RecallItem]], cases: Sequence[tuple[str, str]]) -> int:
    return sum(any(marker in item.text for item in find(q)[:3]) for q, marker in cases)


def report(name: str, reader: IndexedArchiveProvider) -> None:
    def search(q: str) -> Sequence[RecallItem]:
        return reader.search_items(q, 3)

    same, other = len(RELATED), len(PARAPHRASES)
    t0 = time.perf_counter()
    false = sum(bool(reader.prefetch_items(q)) for q in UNRELATED)
    per_query = (time.perf_counter() - t0) / len(UNRELATED)
    print(f"{name}")
    print(
        f"  search   hit@3: same words {hit_at_3(search, RELATED)}/{same}, "
        f"other words {hit_at_3(search, PARAPHRASES)}/{other}"
    )
    print(
        f"  recall   hit@3: same words {hit_at_3(reader.prefetch_items, RELATED)}/{same}, "
        f"other words {hit_at_3(reader.prefetch_items, PARAPHRASES)}/{other}; "
        f"unrelated messages recalling something: {false}/{len(UNRELATED)} "
        f"({per_query * 1e3:.1f} ms per message)"
    )


def main() -> int:
    # The labelled set is small: a whole run already takes seconds, so `--quick` is that run.
    quick.parse(argparse.ArgumentParser(description=__doc__.splitlines()[0]), {})
    folder = Path(tempfile.mkdtemp(prefix="recall-quality-"))
    try:
        writer = ArchiveProvider(folder / "keywords", session_id="earlier")
        fill(writer)
        writer.shutdown()
        reader = ArchiveProvider(folder / "keywords", session_id="now")
        report("keywords (BM25 evidence)", reader)
        reader.shutdown()
        reason = semantic.unavailable()
        if reason:
            print(f"hybrid: skipped ({reason})")
            return 0
        t0 = time.perf_counter()
        embedder = semantic.MiniLMEmbedder()
        loaded = time.perf_counter() - t0
        hybrid_writer = semantic.HybridArchiveProvider(
            folder / "hybrid", embedder=embedder, session_id="earlier"
        )
        spent = []
        for user, reply in TURNS:
            t0 = time.perf_counter()
            hybrid_writer.sync_turn(user, reply)
            spent.append(time.perf_counter() - t0)
        for target, action, before, after in REMOVED:
            hybrid_writer.on_memory_write(target, action, before, after)
        hybrid_writer.shutdown()
        hybrid = semantic.HybridArchiveProvider(
            folder / "hybrid", embedder=embedder, session_id="now"
        )
        hybrid.wait_idle(600)  # every item has its vector before the figures
        report(f"hybrid (BM25 + {embedder.name}, similarity bar {semantic.SIMILARITY_BAR})", hybrid)
        hybrid.shutdown()
        print(
            f"  model load {loaded:.1f} s; sync_turn with embedding p50 "
            f"{statistics.median(spent) * 1e3:.1f} ms (CPU)"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
