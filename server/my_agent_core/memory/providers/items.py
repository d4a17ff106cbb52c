"""What providers hand back: recall items (for prompts and the Recall view) and search hits (for tools).

One shape for every provider, so the recall renderer, the `memory_search` tool, the CLI and an editor
view never look inside a provider.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal, TypedDict

__all__ = ["ItemKind", "RecallItem", "SearchHit"]

ItemKind = Literal["turn", "memory", "note"]
"""`turn`: a finished turn (user message + final reply); `memory`: an entry a replace or remove took out
of MEMORY.md / USER.md; `note`: anything else a third-party provider returns."""


class SearchHit(TypedDict):
    """One `search()` result, JSON-ready (what `memory_search` and `my-agent recall --json` print)."""

    id: str
    kind: str
    text: str
    created: str  # ISO 8601 UTC, "" when unknown
    score: float
    source: str  # a person's label: "turn", "removed from MEMORY.md (replace)", ...


@dataclass(frozen=True, slots=True)
class RecallItem:
    """An archived item.

    `id` is unique within its provider ("42"); `text` is what a prompt shows (for a turn: "user: ...",
    "assistant: ..."); `created` is a UNIX time (0: unknown); `score` the relevance evidence (0 when
    listed rather than searched); `session` the chat session that produced it, when known.
    """

    id: str
    kind: ItemKind
    text: str
    created: float = 0.0
    score: float = 0.0
    source: str = ""
    session: str | None = None

    @property
    def label(self) -> str:
        """Where the item came from, for a person or a model: "turn", "removed from USER.md", ..."""
        return self.source or self.kind

    @property
    def date(self) -> str:
        """The item's day (UTC), "" when unknown."""
        return time.strftime("%Y-%m-%d", time.gmtime(self.created)) if self.created > 0 else ""

    def to_hit(self) -> SearchHit:
        created = (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.created))
            if self.created > 0
            else ""
        )
        return SearchHit(
            id=self.id,
            kind=self.kind,
            text=self.text,
            created=created,
            score=round(self.score, 3),
            source=self.label,
        )
