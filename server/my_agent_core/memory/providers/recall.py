"""Recalled items -> the text appended to a user message: deduplicated, scanned, bounded, framed.

Archived turns may hold text that came from a file or a web page, so every item goes through the memory
safety scanner and an unsafe one is withheld (never quoted). Items the frozen snapshot already holds are
skipped (the prompt has them). The framing itself is the one prompt renderer's (`memory/render.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from my_agent_core.memory.providers.items import RecallItem
from my_agent_core.memory.render import (
    RECALL_ITEM_CHARS,
    RECALL_PREAMBLE,
    RECALL_TAG,
    render_block,
    render_recall_block,
)
from my_agent_core.memory.render import RecallItem as RenderItem
from my_agent_core.memory.safety import scan

__all__ = ["CLOSE_TAG", "OPEN_TAG", "Framed", "frame", "normalized", "select"]

OPEN_TAG = f"<{RECALL_TAG}>"
CLOSE_TAG = f"</{RECALL_TAG}>"
_MIN_ITEM_ROOM = 120  # an item is not worth showing in fewer characters than this
_HEADER_ROOM = 160  # an item's header and cut note
_SPACE = re.compile(r"\s+")


def normalized(text: str) -> str:
    """Case and whitespace folded: how recall compares an item with snapshot entries."""
    return _SPACE.sub(" ", text).strip().casefold()


def select(
    items: Iterable[RecallItem],
    *,
    snapshot_entries: Sequence[str],
    seen: set[str],
) -> list[RecallItem]:
    """The items worth recalling: unsafe ones are dropped (never quoted, not even as a notice that
    would recur on every turn that finds them).

    Skipped: items whose text the frozen snapshot already holds (equal to or inside an entry), items
    already recalled in this session (`seen`: ids; the history has them), and repeats.
    """
    snapshot = [normalized(entry) for entry in snapshot_entries if entry.strip()]
    chosen: list[RecallItem] = []
    texts: set[str] = set()
    for item in items:
        key = normalized(item.text)
        if not key or item.id in seen or key in texts:
            continue
        if any(key in entry for entry in snapshot):
            continue
        if scan(item.text):
            continue
        texts.add(key)
        chosen.append(item)
    return chosen


class Framed(NamedTuple):
    """The recall text and the ids of the items it shows (in full or cut)."""

    text: str
    shown: list[str]


def frame(items: Sequence[RecallItem], *, max_chars: int) -> Framed:
    """`items` as the one prompt renderer frames recalled memory (`render.render_recall_block`:
    neutralised so item text cannot forge the tags, headers or roles; each item cut to a bound), in
    rank order while the whole block fits in `max_chars`. The text is "" when no item fits."""
    shown = list(items)
    overhead = len(render_block(RECALL_TAG, RECALL_PREAMBLE, ""))
    per_item = max(0, min(RECALL_ITEM_CHARS, max_chars - overhead - _HEADER_ROOM))
    while shown and per_item >= _MIN_ITEM_ROOM:
        text = render_recall_block(
            [_rendered(item) for item in shown], max_chars=max_chars, max_item_chars=per_item
        )
        if len(text) <= max_chars and "[NOT SHOWN:" not in text:
            return Framed(text, [item.id for item in shown])
        shown.pop()
    return Framed("", [])


def _rendered(item: RecallItem) -> RenderItem:
    day = f" · {item.date}" if item.date else ""
    return RenderItem(source=f"{item.label}{day}", text=item.text)
