"""search_text sees what the user sees: a file open in the editor with unsaved edits is searched in its
buffer, not in the stale copy on disk.

Only the open files whose buffer differs from the disk are searched again (so a clean file keeps the
backend's answer exactly), and only those the search itself covers: the listing decides, with the same
.gitignore and glob rules as both backends. Their disk hits are replaced by the buffer's, found by the
same engine as the files' (ripgrep reads each buffer on stdin; without it, the pure-Python search's
own matching), within the same deadline as the rest of the call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from my_agent_core.paths import PathRefused, read_regular

from .folder import Folder
from .seams import CancelToken
from .search import (
    Hit,
    SearchResult,
    SearchStopped,
    hit_in,
    literal_lines,
    ripgrep_hits,
    start_regex,
)
from .textfile import decode_for_read
from .untrusted_regex import RegexStopped

__all__ = ["overlay_unsaved", "unsaved_texts"]


def unsaved_texts(folder: Folder, start: Path, *, max_bytes: int) -> dict[str, str]:
    """Path (relative to the folder) -> the editor's text, for every file open under `start` whose
    buffer is not what the disk holds. Files over `max_bytes` are left to the backend (it skips them
    too), as are buffers with a NUL character (binary)."""
    if folder.buffers is None:
        return {}
    root = folder.root
    found: dict[str, str] = {}
    for path in folder.buffers.open_paths():
        real = Path(os.path.realpath(path))
        if real != start and start not in real.parents:
            continue
        if root not in real.parents:
            continue
        text = folder.buffers.text_of(real)
        if text is None or "\x00" in text or len(text.encode("utf-8", "replace")) > max_bytes:
            continue
        rel = folder.rel(real)
        if text != _disk_text(real, rel, max_bytes):
            found[rel] = text
    return found


def _disk_text(real: Path, rel: str, max_bytes: int) -> str | None:
    try:
        data = read_regular(real, max_bytes=max_bytes, truncate=False, name=rel)
    except (PathRefused, OSError):
        return None
    return None if data is None else decode_for_read(data).text


def overlay_unsaved(
    result: SearchResult,
    texts: Mapping[str, str],
    *,
    query: str,
    regex: bool,
    max_per_file: int,
    collect_limit: int,
    rg: str | None,
    deadline: float,
    cancel: CancelToken | None = None,
) -> None:
    """Replace the hits of the files in `texts` with the hits of their unsaved text, in place,
    matched by the engine that searched the files: ripgrep (fed each buffer on stdin), else a
    literal search, else Python's `re` in a child process killed at `deadline`. Raises
    SearchError / SearchStopped as `search` does."""
    found: dict[str, tuple[list[Hit], bool]] = {}
    if rg is not None:
        for rel, text in texts.items():
            found[rel] = ripgrep_hits(
                rg, rel, _bytes(text), query, regex=regex, max_per_file=max_per_file,
                cancel=cancel, deadline=deadline,
            )  # fmt: skip
    elif not regex:
        needle = query.encode("utf-8")
        for rel, text in texts.items():
            lines = literal_lines(_bytes(text), needle, max_per_file + 1)
            found[rel] = _hits(rel, lines, max_per_file)
    else:
        process = start_regex(query, max_per_file + 1, deadline, cancel)
        try:
            for rel, text in texts.items():
                found[rel] = _hits(rel, process.lines(_bytes(text)), max_per_file)
        except RegexStopped as exc:
            raise SearchStopped("regex-timeout" if str(exc) == "timeout" else str(exc)) from None
        finally:
            process.close()
    hits: list[Hit] = [hit for hit in result.hits if hit.path not in texts]
    result.more_in -= set(texts)
    for rel, (own, more) in found.items():
        hits.extend(own)
        if more:
            result.more_in.add(rel)
    hits.sort(key=lambda hit: (hit.path, hit.line))
    if len(hits) > collect_limit:
        hits = hits[:collect_limit]
        result.complete = False
    result.hits = hits


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _hits(rel: str, lines: list[tuple[int, str, int]], max_per_file: int) -> tuple[list[Hit], bool]:
    shown = [hit_in(rel, line_no, line, column) for line_no, line, column in lines[:max_per_file]]
    return shown, len(lines) > max_per_file
