"""One embedding per archived item, in `vectors.sqlite3` beside the archive; nearest by brute force.

Python's sqlite3 here cannot load extensions, so `sqlite-vec` cannot be used: the vectors are float32
blobs in a plain table, scored by one matrix product (numpy, from the `semantic` extra; a plain-Python
product where numpy is missing, for small archives and tests), which is what sqlite-vec's `vec0` does
for a table this size. The file is private like the archive (0600 from its creation) and made by the
first vector only.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import operator
import os
import sqlite3
import sys
import threading
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path

from my_agent_core.memory.providers.archive import create_owner_only, refuse_odd_files

__all__ = ["VECTOR_FILE", "VectorStore"]

VECTOR_FILE = "vectors.sqlite3"
BUSY_TIMEOUT_S = 1.5


class VectorStore:
    """Vectors of one model (`model`, `dim`) by item id; `nearest` ranks them by cosine."""

    def __init__(self, path: Path, model: str, dim: int) -> None:
        refuse_odd_files(path)
        self.path = path
        self.model = model
        self.dim = dim
        self._np = (
            importlib.import_module("numpy") if importlib.util.find_spec("numpy") else None
        )  # an optional dependency: typed at run time
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._ids: list[int] = []
        self._rows: list[bytes] = []
        self._matrix: object = None
        self._last = 0
        if os.path.lexists(path):
            with self._lock:
                self._connect()

    # ---------------------------------------------------------------- storage

    def _connect(self) -> sqlite3.Connection:
        """The open database (caller holds the lock), created 0600 when missing."""
        if self._closed:
            raise sqlite3.ProgrammingError(f"{self.path} is closed")
        if self._db is not None:
            return self._db
        create_owner_only(self.path)
        refuse_odd_files(self.path)
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            db.execute("PRAGMA trusted_schema = OFF")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, model TEXT NOT NULL, "
                "v BLOB NOT NULL)"
            )
        except BaseException:
            db.close()
            raise
        with contextlib.suppress(OSError):
            os.chmod(self.path, 0o600)  # an older version made it 0644
        self._db = db
        return db

    def add(self, item_id: int, vector: bytes) -> None:
        self.add_many([(item_id, vector)])

    def add_many(self, pairs: Iterable[tuple[int, bytes]]) -> None:
        rows = [(int(i), self.model, bytes(v)) for i, v in pairs if len(v) == 4 * self.dim]
        if not rows:
            return
        with self._lock:
            db = self._connect()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors(id, model, v) VALUES (?, ?, ?)", rows
                )
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise

    def has(self, item_ids: Sequence[int]) -> set[int]:
        """Which of `item_ids` have a vector of this model."""
        if not item_ids:
            return set()
        with self._lock:
            if self._db is None and not os.path.lexists(self.path):
                return set()
            db = self._connect()
            rows = db.execute(
                f"SELECT id FROM vectors WHERE model = ? AND id IN ({','.join('?' * len(item_ids))})",
                [self.model, *item_ids],
            ).fetchall()
        return {int(row[0]) for row in rows}

    def count(self) -> int:
        with self._lock:
            if self._db is None and not os.path.lexists(self.path):
                return 0
            db = self._connect()
            return int(
                db.execute(
                    "SELECT count(*) FROM vectors WHERE model = ?", (self.model,)
                ).fetchone()[0]
            )

    def delete(self, item_id: int) -> None:
        with self._lock:
            if self._db is None and not os.path.lexists(self.path):
                return
            self._connect().execute("DELETE FROM vectors WHERE id = ?", (item_id,))
            if item_id in self._ids:  # rebuild the cache without it
                self._ids, self._rows, self._matrix, self._last = [], [], None, 0

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
                self._db = None

    # ---------------------------------------------------------------- search

    def nearest(
        self, vector: bytes, k: int, *, exclude: frozenset[int] | set[int] = frozenset()
    ) -> list[tuple[int, float]]:
        """The `k` most similar items as (id, cosine), best first, leaving out the ids in
        `exclude` BEFORE taking the `k` (a session's own items never crowd the others out)."""
        with self._lock:
            if self._db is None and not os.path.lexists(self.path):
                return []
            self._refresh(self._connect())
            if not self._ids:
                return []
            if self._np is not None:
                return self._nearest_numpy(vector, k, exclude)
            scores = [
                (item_id, _dot(row, vector))
                for item_id, row in zip(self._ids, self._rows, strict=True)
                if item_id not in exclude
            ]
        scores.sort(key=lambda pair: -pair[1])
        return scores[: max(0, k)]

    def _refresh(self, db: sqlite3.Connection) -> None:
        """Add the vectors stored since the last search (by this or another process) to the cache."""
        fresh = db.execute(
            "SELECT id, v FROM vectors WHERE id > ? AND model = ? ORDER BY id",
            (self._last, self.model),
        ).fetchall()
        if not fresh:
            return
        for item_id, blob in fresh:
            if len(blob) == 4 * self.dim:
                self._ids.append(int(item_id))
                self._rows.append(bytes(blob))
        self._last = int(fresh[-1][0])
        if self._np is not None:
            self._matrix = self._np.frombuffer(b"".join(self._rows), dtype="<f4").reshape(
                len(self._rows), self.dim
            )

    def _nearest_numpy(
        self, vector: bytes, k: int, exclude: frozenset[int] | set[int]
    ) -> list[tuple[int, float]]:
        np = self._np
        assert np is not None
        scores = self._matrix @ np.frombuffer(vector, dtype="<f4")
        if exclude:
            ids = np.asarray(self._ids)
            scores = np.where(np.isin(ids, list(exclude)), -np.inf, scores)
        usable = int(np.isfinite(scores).sum())
        count = min(k, usable)
        if count <= 0:
            return []
        best = np.argpartition(-scores, count - 1)[:count]
        ranked = sorted(((float(scores[i]), self._ids[int(i)]) for i in best), reverse=True)
        return [(item_id, score) for score, item_id in ranked]


def _floats(blob: bytes) -> array[float]:
    values = array("f")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()  # stored little-endian
    return values


def _dot(a: bytes, b: bytes) -> float:
    return float(sum(map(operator.mul, _floats(a), _floats(b))))
