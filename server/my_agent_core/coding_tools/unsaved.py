"""search_text sees what the user sees: a file open in the editor with unsaved edits is searched in its
buffer, not in the stale copy on disk.

Only the open files whose buffer differs from the disk are searched again (so a clean file keeps the
backend's answer exactly), and only those the search itself covers: the listing decides, with the same
.gitignore and glob rules as both backends. Their disk hits are replaced by the buffer's, matched line by
line the way the pure-Python search does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from my_agent_core.paths import PathRefused, read_regular

from .folder import Folder
from .search import Hit, SearchResult, buffer_hits
from .textfile import decode_for_read

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
) -> bool:
    """Replace the hits of the files in `texts` with the hits of their unsaved text, in place.
    False (nothing replaced) when `regex` is one Python's `re` cannot read (ripgrep's own syntax)."""
    pattern: re.Pattern[str] | None = None
    if regex:
        try:
            pattern = re.compile(query, re.MULTILINE)
        except re.error:
            return False
    hits: list[Hit] = [hit for hit in result.hits if hit.path not in texts]
    result.more_in -= set(texts)
    for rel, text in texts.items():
        found, more = buffer_hits(rel, text, query, pattern, max_per_file)
        hits.extend(found)
        if more:
            result.more_in.add(rel)
    hits.sort(key=lambda hit: (hit.path, hit.line))
    if len(hits) > collect_limit:
        hits = hits[:collect_limit]
        result.complete = False
    result.hits = hits
    return True
