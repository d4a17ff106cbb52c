"""Entries a merge kept in two versions, remembered so the linter can point at them.

When both sides of a merge changed one entry differently, the merge keeps both versions next to
each other and someone should keep one. Git shows the driver's note once, in a terminal that may
be gone by the time MEMORY.md is opened, and nothing in the file says which two entries belong
together (two similar entries may also be meant). So whatever merges records the pairs here: the
merge driver, and a memory write that resolved a file left with conflict markers. The linter
reads them (`merge-pair`, a hint on each version with "Keep this one") without asking git.

The file is `merge-pairs.json` in the memory folder: private (the folder's `.gitignore` keeps all
but MEMORY.md out of git), small (the newest `MAX_PAIRS`), written with the one safe writer,
read bounded and never trusted: a pair is only a pair of texts, shown only when both are entries
of the file, and a damaged or planted file is read as no pairs.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from my_agent_core import bounded_json
from my_agent_core.paths import PathRefused, check_memory_folder, read_regular
from my_agent_core.safe_write import write_atomic

__all__ = ["MAX_PAIRS", "PAIRS_FILE", "MergePair", "read_pairs", "record_pairs"]

logger = logging.getLogger(__name__)

PAIRS_FILE = "merge-pairs.json"
MAX_PAIRS = 64
_MAX_BYTES = 512 * 1024
_MAX_TEXT = 64 * 1024


@dataclass(frozen=True, slots=True)
class MergePair:
    """Two versions of one entry that a merge kept (`first` stands before `second` in the file)."""

    file: str
    first: str
    second: str


def read_pairs(mem_dir: Path | str, file: str | None = None) -> list[MergePair]:
    """The recorded pairs (of `file` only, when given); [] when there are none or the record cannot
    be read (never raises)."""
    path = Path(mem_dir) / PAIRS_FILE
    try:
        if not os.path.lexists(path):
            return []
        check_memory_folder(mem_dir)
        data = read_regular(path, max_bytes=_MAX_BYTES, name=PAIRS_FILE)
        if data is None:
            return []
        raw = bounded_json.loads(data, max_depth=8, what=PAIRS_FILE)
    except (OSError, PathRefused, ValueError) as exc:
        logger.info("merge pairs not read: %s", exc)
        return []
    pairs: list[MergePair] = []
    items = raw.get("pairs") if isinstance(raw, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        name, first, second = item.get("file"), item.get("first"), item.get("second")
        if not (isinstance(name, str) and isinstance(first, str) and isinstance(second, str)):
            continue
        if first and second and first != second and (file is None or name == file):
            pairs.append(MergePair(name, first, second))
    return pairs[-MAX_PAIRS:]


def record_pairs(
    mem_dir: Path | str,
    file: str,
    pairs: Iterable[tuple[str, str]],
    entries: Sequence[str],
) -> None:
    """Remember `pairs` (first, second) of `file`, whose entries are now `entries`: earlier pairs of
    that file that are no longer both entries are dropped. Nothing is written when nothing
    changes; a folder that is missing or refused, or a failed write, is logged (never raises)."""
    folder = Path(mem_dir)
    present = set(entries)
    new = [
        MergePair(file, a, b)
        for a, b in pairs
        if a != b and a in present and b in present and len(a) + len(b) <= _MAX_TEXT
    ]
    old = read_pairs(folder)
    kept = [p for p in old if p.file != file or (p.first in present and p.second in present)]
    known = {(p.file, p.first, p.second) for p in kept}
    merged = kept + [p for p in new if (p.file, p.first, p.second) not in known]
    merged = merged[-MAX_PAIRS:]
    if merged == old:
        return
    try:
        if not folder.is_dir():
            return
        check_memory_folder(folder)
        data = {"pairs": [{"file": p.file, "first": p.first, "second": p.second} for p in merged]}
        text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        if len(text.encode("utf-8")) > _MAX_BYTES:
            return
        write_atomic(folder / PAIRS_FILE, text.encode("utf-8"), mode=0o600)
    except (OSError, PathRefused) as exc:
        logger.warning("merge pairs not recorded in %s: %s", folder, exc)
