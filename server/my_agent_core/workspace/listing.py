"""list_files: the files under a folder that the tools may see, sorted: from git's index in a git
work tree (fast: no walk of tracked folders), else from ripgrep or the pure-Python walker.

In a git work tree the listing is git's own (`git ls-files --cached --others --exclude-standard`):
tracked files, plus untracked files that .gitignore does not exclude. Its entries are not checked
one by one (a file deleted but still in the index is listed by git), so `Listing.verified` is
False and the caller checks the entries it shows.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .ignore import GlobFilter, WalkCancelled, walk_files
from .process import StreamedRun
from .ripgrep import BASE_FLAGS
from .seams import CancelToken

__all__ = ["Listing", "ListingStopped", "list_paths"]


class ListingStopped(Exception):
    """The listing was cancelled or ran out of time."""


@dataclass(frozen=True)
class Listing:
    """Sorted paths relative to the workspace folder; `complete` is False when the walk stopped at
    its scan limit (then `paths` holds what was found); `verified` is False when the entries come
    from git's index and may name files deleted since."""

    paths: list[str]
    complete: bool
    verified: bool = True


def list_paths(
    root: Path,
    start: Path,
    *,
    glob: str | None,
    rg: str | None,
    scan_limit: int,
    cancel: CancelToken | None = None,
    timeout_s: float = 60.0,
    use_git: bool = False,
) -> Listing:
    """Every visible file under `start` (real paths, `start` inside `root`): git's listing when
    `use_git` and `root` is a git work tree (and no glob is given); else ripgrep when `rg` is given,
    the pure-Python walker otherwise (the same files either way)."""
    matcher = GlobFilter(glob) if glob else None
    if use_git and glob is None and (root / ".git").exists():
        listed = _with_git(root, start, scan_limit, cancel, timeout_s)
        if listed is not None:
            return listed
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
    run = StreamedRun(args, root, cancel, timeout_s)
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


def _with_git(
    root: Path, start: Path, scan_limit: int, cancel: CancelToken | None, timeout_s: float
) -> Listing | None:
    """git's listing, or None when git is missing or this is not a work tree git can read."""
    git = shutil.which("git")
    if git is None:
        return None
    args = [
        git,
        "-c",
        "core.fsmonitor=false",  # never start a monitor program named by the repository's config
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--deduplicate",
    ]
    if start != root:
        args += ["--", os.path.relpath(start, root)]
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    try:
        run = StreamedRun(args, root, cancel, timeout_s, env)
    except OSError:
        return None
    chunks: list[bytes] = []
    try:
        chunks.extend(run.lines())
    finally:
        code, _stderr = run.close()
    if run.stopped:
        raise ListingStopped(run.stopped)
    if code != 0:
        return None
    found = [
        entry.decode("utf-8", errors="surrogateescape")
        for entry in b"".join(chunks).split(b"\0")
        if entry and not entry.endswith(b"/")  # "nested/": another repository, not a file
    ]
    found.sort()
    if len(found) > scan_limit:
        return Listing(found[:scan_limit], False, verified=False)
    return Listing(found, True, verified=False)
