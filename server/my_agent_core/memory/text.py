"""Small string helpers shared by the linter and the language server."""

from __future__ import annotations

__all__ = ["common_prefix", "common_suffix"]


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings (binary search over C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str) -> int:
    """Length of the common suffix of two strings."""
    return common_prefix(a[::-1], b[::-1])
