"""list_files: the files under a folder that the tools may see, sorted, from ripgrep or the walker."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from .ignore import GlobFilter, WalkCancelled, walk_files
from .ripgrep import BASE_FLAGS, RipgrepRun
from .seams import CancelToken

__all__ = ["Listing", "ListingStopped", "list_paths"]


class ListingStopped(Exception):
    """The listing was cancelled or ran out of time."""


@dataclass(frozen=True)
class Listing:
    """Sorted paths relative to the workspace folder; `complete` is False when the walk stopped at
    its scan limit (then `paths` holds what was found)."""

    paths: list[str]
    complete: bool


def list_paths(
    root: Path,
    start: Path,
    *,
    glob: str | None,
    rg: str | None,
    scan_limit: int,
    cancel: CancelToken | None = None,
    timeout_s: float = 60.0,
) -> Listing:
    """Every visible file under `start` (real paths, `start` inside `root`); ripgrep when `rg` is
    given, the pure-Python walker otherwise (the same files either way)."""
    matcher = GlobFilter(glob) if glob else None
    if rg is not None:
        return _with_ripgrep(root, start, glob, rg, scan_limit, cancel, timeout_s)
    found: list[str] = []
    deadline = time.monotonic() + timeout_s
    try:
        for rel, _size in walk_files(root, start, glob=matcher, cancel=cancel, deadline=deadline):
            found.append(rel)
            if len(found) >= scan_limit:
                return Listing(sorted(found), False)
    except WalkCancelled as exc:
        raise ListingStopped(str(exc)) from None
    return Listing(sorted(found), True)


def _with_ripgrep(
    root: Path,
    start: Path,
    glob: str | None,
    rg: str,
    scan_limit: int,
    cancel: CancelToken | None,
    timeout_s: float,
) -> Listing:
    args = [rg, "--files", *BASE_FLAGS]
    if glob:
        args += ["--glob", glob]
    args += ["--glob", "!.git"]
    if start != root:
        args += ["--", os.path.relpath(start, root)]
    run = RipgrepRun(args, root, cancel, timeout_s)
    found: list[str] = []
    complete = True
    try:
        for raw in run.lines():
            line = raw.rstrip(b"\n").decode("utf-8", errors="surrogateescape")
            found.append(line[2:] if line.startswith("./") else line)
            if len(found) >= scan_limit:
                complete = False
                break
    finally:
        run.close()
    if run.stopped:
        raise ListingStopped(run.stopped)
    return Listing(sorted(found), complete)
