"""Small string helpers shared by the linter and the language server."""

from __future__ import annotations

__all__ = ["common_prefix", "common_suffix"]

#: The first span compared; each equal span doubles the next one.
_FIRST_SPAN = 64


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of two strings.

    A full-sync keystroke asks this of two whole documents, so the cost follows the prefix, not the
    strings: spans of `b` growing from the start are compared in place in `a` (`startswith` at an
    offset, C speed, one copy of the span only), then the first unequal span is bisected."""
    n = min(len(a), len(b))
    lo, span = 0, _FIRST_SPAN
    while lo < n:
        hi = min(n, lo + span)
        if not a.startswith(b[lo:hi], lo):
            return _bisect_prefix(a, b, lo, hi)
        lo, span = hi, span * 2
    return n


def _bisect_prefix(a: str, b: str, lo: int, hi: int) -> int:
    """The prefix length, known to be at least `lo` and less than `hi`."""
    hi -= 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.startswith(b[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int | None = None) -> int:
    """Length of the common suffix of two strings, at most `limit` (e.g. what is left after the
    common prefix, so that the two never overlap). Like `common_prefix`, its cost follows the
    suffix: spans of `b` growing from the end are compared in place in `a` (`endswith`)."""
    n = min(len(a), len(b)) if limit is None else min(len(a), len(b), limit)
    la, lb = len(a), len(b)
    lo, span = 0, _FIRST_SPAN
    while lo < n:
        hi = min(n, lo + span)
        if not a.endswith(b[lb - hi : lb - lo], 0, la - lo):
            hi -= 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if a.endswith(b[lb - mid : lb - lo], 0, la - lo):
                    lo = mid
                else:
                    hi = mid - 1
            return lo
        lo, span = hi, span * 2
    return n
