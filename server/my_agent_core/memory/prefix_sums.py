"""Prefix sums with point updates (a Fenwick tree): where the k-th piece of a file starts, in O(log n).

The editor's chunked text and the incremental linter keep one number per piece of a file (its
length, its line breaks, what it adds to the budget); typing changes one of them, and the
questions asked (where does piece k start, which piece holds offset x, which entry passes the
limit) are prefix sums and searches over them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["PrefixSums"]


class PrefixSums:
    """Sums of a list of non-negative integers with O(log n) point updates, prefix sums and search.

    A Fenwick tree plus the plain values (for O(1) reads); rebuilt in O(n) when the list changes
    length, which for a document happens only when chunks are split or merged.
    """

    __slots__ = ("_top", "_total", "_tree", "values")

    def __init__(self, values: Iterable[int]) -> None:
        self.values = list(values)
        self._build()

    def _build(self) -> None:
        n = len(self.values)
        tree = [0, *self.values]
        for i in range(1, n + 1):
            j = i + (i & -i)
            if j <= n:
                tree[j] += tree[i]
        self._tree = tree
        self._top = 1 << (n.bit_length() - 1) if n else 0
        self._total = sum(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def set(self, i: int, value: int) -> None:
        """values[i] = value."""
        delta = value - self.values[i]
        if not delta:
            return
        self.values[i] = value
        self._total += delta
        tree = self._tree
        n = len(self.values)
        k = i + 1
        while k <= n:
            tree[k] += delta
            k += k & -k

    def splice(self, start: int, stop: int, values: Sequence[int]) -> None:
        """values[start:stop] = values (point updates when the length stays, else a rebuild)."""
        if stop - start == len(values):
            for k, value in enumerate(values):
                self.set(start + k, value)
            return
        self.values[start:stop] = values
        self._build()

    def prefix(self, i: int) -> int:
        """sum(values[:i])."""
        total = 0
        tree = self._tree
        while i > 0:
            total += tree[i]
            i -= i & -i
        return total

    def total(self) -> int:
        return self._total

    def search(self, target: float) -> int:
        """The smallest i with sum(values[:i + 1]) > target (len(values) when there is none)."""
        pos = 0
        step = self._top
        tree = self._tree
        n = len(self.values)
        while step:
            nxt = pos + step
            if nxt <= n and tree[nxt] <= target:
                pos = nxt
                target -= tree[nxt]
            step >>= 1
        return pos
