"""A memory file as the system prompt shows it: parsed, scanned and rendered once per text per process.

Every new chat session freezes a snapshot of both files (`MemoryStore.load_from_disk`); parsing them
and rendering every entry through the safety scanner cost about 1.5 ms per session start, for files
that mostly did not change since the last session. So the section is cached, keyed by the file's
text (read anyway, two small reads) with how it is titled and budgeted: an unchanged pair of files
renders once per process, and the snapshot is byte for byte what rendering it again would give. The
key is the text, not the file's stat signature: a same-size rewrite within one tick of the file
system's clock keeps the signature, and the snapshot must be exactly what is on disk.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from my_agent_core.memory.document import parse
from my_agent_core.memory.render import MemorySection, render_memory_section

__all__ = ["CACHED_TEXT_CHARS", "TITLES", "LoadedFile", "forget", "load_section"]

#: How the snapshot titles each target's section.
TITLES = {"memory": "agent notes", "user": "user profile"}
#: Files longer than this (far over any budget) are rendered each time, so the cache stays small.
CACHED_TEXT_CHARS = 64 * 1024
_CACHED_FILES = 64


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """A memory file as loaded: its entries (deduplicated, in order) and its snapshot section."""

    entries: tuple[str, ...]
    section: str


def load_section(
    name: str, title: str, limit: int, text: str, error: str | None = None
) -> LoadedFile:
    """The file `name` (its `text`, or `error`: why it could not be read) as the snapshot shows it."""
    if error is not None:
        return _load(name, title, limit, "", error)
    if len(text) > CACHED_TEXT_CHARS:
        return _load.__wrapped__(name, title, limit, text, None)
    return _load(name, title, limit, text, None)


@functools.lru_cache(maxsize=_CACHED_FILES)
def _load(name: str, title: str, limit: int, text: str, error: str | None) -> LoadedFile:
    entries = () if error is not None else tuple(parse(text).stored_texts)
    section = render_memory_section(MemorySection(name, title, entries, limit, error))
    return LoadedFile(entries, section)


def forget() -> None:
    """Drop every cached section (for benches and tests that measure or check a first render)."""
    _load.cache_clear()
