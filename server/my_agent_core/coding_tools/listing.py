"""list_files: the files under a folder that the tools may see, sorted, from the walker of
ignore.py (the same files ripgrep sees), remembered between calls while nothing changed.

A walk of a big repository costs tens of milliseconds; a model lists the same folder again and
again. As git's untracked cache does, a listing is kept with the modification stamps of every folder
it scanned and every ignore file it read: creating, deleting or renaming a file changes its
folder's stamp, so while all stamps are unchanged the list is too. A folder stamped too close to
the walk's start is "racy" (it may have changed within the clock's resolution): such a listing is
not kept.
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from .ignore import GlobFilter, WalkCancelled, walk_batches
from .seams import CancelToken

__all__ = ["Listing", "ListingCache", "ListingStopped", "list_paths"]

_RACY_NS = 50_000_000  # a stamp this close to the walk's start may hide a change in the same tick
Stamp = tuple[int, int, int] | None


class ListingStopped(Exception):
    """The listing was cancelled or ran out of time."""


@dataclass(frozen=True)
class Listing:
    """Sorted paths relative to the workspace folder; `complete` is False when the walk stopped at
    its scan limit (then `paths` holds what was found)."""

    paths: list[str]
    complete: bool


def _stamp(path: str) -> Stamp:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ListingCache:
    """The last few complete listings of one folder, each valid while its stamps are unchanged."""

    def __init__(self, capacity: int = 8) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, str | None], tuple[list[str], dict[str, Stamp]]]
        self._entries = OrderedDict()

    def get(self, key: tuple[str, str | None]) -> list[str] | None:
        found = self._entries.get(key)
        if found is None:
            return None
        paths, stamps = found
        if any(_stamp(path) != stamp for path, stamp in stamps.items()):
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return paths

    def put(self, key: tuple[str, str | None], paths: list[str], seen: list[str], t0: int) -> None:
        stamps = {path: _stamp(path) for path in seen}
        if any(stamp is not None and stamp[0] >= t0 - _RACY_NS for stamp in stamps.values()):
            return
        self._entries[key] = (paths, stamps)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


def list_paths(
    root: Path,
    start: Path,
    *,
    glob: str | None,
    scan_limit: int,
    cancel: CancelToken | None = None,
    timeout_s: float = 60.0,
    cache: ListingCache | None = None,
) -> Listing:
    """Every visible file under `start` (real paths, `start` inside `root`), sorted."""
    matcher = GlobFilter(glob) if glob else None
    key = (str(start), glob)
    if cache is not None:
        remembered = cache.get(key)
        if remembered is not None:
            return Listing(remembered, True)
    found: list[str] = []
    seen: list[str] = []
    t0 = time.time_ns()
    deadline = time.monotonic() + timeout_s
    try:
        for batch in walk_batches(
            root, start, glob=matcher, cancel=cancel, deadline=deadline, seen=seen
        ):
            found += batch
            if len(found) >= scan_limit:
                return Listing(sorted(found)[:scan_limit], False)
    except WalkCancelled as exc:
        raise ListingStopped(str(exc)) from None
    found.sort()
    if cache is not None:
        cache.put(key, found, seen, t0)
    return Listing(found, True)
