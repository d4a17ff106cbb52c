"""The archive provider's logic over any storage: what is archived, what is recalled, what is searched.

The SQLite archive (`archive.py`) and the PostgreSQL one (`postgres.py`) differ only in storage; both
implement `ArchiveBackend`, so the relevance bar, the item texts and the size limits are the same for a
laptop and a team.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from my_agent_core.layout import FILE_NAMES
from my_agent_core.memory.providers.base import MemoryProvider, ProviderUnavailable
from my_agent_core.memory.providers.items import ItemKind, RecallItem, SearchHit
from my_agent_core.memory.providers.relevance import evidence, passes, weigh
from my_agent_core.memory.providers.text_index import (
    index_text,
    is_cjk,
    query_terms,
    search_prefix,
)

__all__ = [
    "MAX_FIELD_CHARS",
    "ArchiveBackend",
    "ArchiveBusy",
    "ArchiveError",
    "ArchiveUnavailable",
    "Candidate",
    "IndexedArchiveProvider",
    "MatchSyntax",
    "NewItem",
    "SearchWord",
    "item_from_row",
    "items_by_id",
    "memory_source",
    "parse_item_id",
    "turn_text",
    "with_score",
]

logger = logging.getLogger(__name__)

MAX_FIELD_CHARS = 20_000  # a message or reply longer than this is archived cut, with a note
PREFETCH_ITEMS = 3
PREFETCH_TERMS = 8  # the rarest query terms the index is asked for
PREFETCH_CANDIDATES = 10  # this session's own turns are dropped after ranking: a few spare
MAX_PENDING = 200
MAX_QUERY_CHARS = 8000  # a pasted log is judged by its head: folding megabytes per turn is waste
SEARCH_WORDS = 16  # the most distinctive words of a search query that are looked up
PREFIX_SHARE = 0.8  # a word found only in another form ("tests" for "test") weighs this much
_CUT = "\n…[cut: the archive keeps the first {n:,} characters]"


class ArchiveError(RuntimeError):
    """The archive cannot be used (newer schema, unreadable, refused path); the message says why."""


class ArchiveBusy(ArchiveError):
    """Another process held the archive's write lock past the busy timeout; retry later."""


class ArchiveUnavailable(ArchiveError, ProviderUnavailable):
    """The archive's server cannot be reached (down, wrong host, role or database): the call
    fails, the provider stays on, the next call connects again."""


@dataclass(frozen=True, slots=True)
class NewItem:
    """An item to store: `a` is the user message (turn) or the entry taken out (memory); `b` the reply
    or the entry's replacement; `body` the index text (terms joined by spaces)."""

    kind: ItemKind
    created: float
    session: str | None
    a: str
    b: str | None
    target: str | None
    action: str | None
    body: str


@dataclass(frozen=True, slots=True)
class SearchWord:
    """A word of a search query: its index `term`, and the `prefix` its other forms share
    (None: matched exactly; see `text_index.search_prefix`)."""

    term: str
    prefix: str | None

    def found_in(self, terms: set[str] | frozenset[str]) -> float:
        """1 when an item's terms hold the word, PREFIX_SHARE when only another form, else 0."""
        if self.term in terms:
            return 1.0
        prefix = self.prefix
        if prefix is not None and any(t.startswith(prefix) for t in terms):
            return PREFIX_SHARE
        return 0.0


@dataclass(frozen=True, slots=True)
class MatchSyntax:
    """How a backend's full-text query language spells a term, a prefix, AND and OR (`{}` is the
    word). Index terms and prefixes are letters and digits only, so nothing needs escaping."""

    term: str
    prefix: str
    both: str
    either: str

    def any_term(self, terms: Sequence[str]) -> str:
        """A query matching the items that hold any of `terms` (`candidates`)."""
        return self.either.join(self.term.format(t) for t in terms)

    def words(self, words: Sequence[SearchWord], *, every: bool) -> str:
        """A query matching every word (`every`) or any, a word with a prefix in any of its forms
        (`search_candidates`)."""
        parts = [
            self.prefix.format(w.prefix) if w.prefix else self.term.format(w.term) for w in words
        ]
        return (self.both if every else self.either).join(parts)


@dataclass(frozen=True, slots=True)
class Candidate:
    """An item as the index returns it: its id and index text (to count the terms it holds). The
    item itself is read only when it passes the bar (most candidates do not)."""

    item_id: str
    body: str


class ArchiveBackend(Protocol):
    """Storage for an indexed archive (SQLite, PostgreSQL). Methods may be called from any thread."""

    def add(self, item: NewItem) -> str:
        """Store `item` and index it; returns its id. Raises `ArchiveBusy` when locked out."""
        ...

    def doc_freq(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """How many items hold each of `terms` (absent: none), and how many items there are."""
        ...

    def prefix_freq(self, prefixes: Sequence[str]) -> dict[str, int]:
        """For each prefix, how many items hold a term starting with it, at most (the sum of those
        terms' counts: an item holding two of them counts twice)."""
        ...

    def candidates(self, terms: Sequence[str], limit: int) -> list[Candidate]:
        """Up to `limit` items holding any of `terms`, best ranked first."""
        ...

    def search_candidates(
        self, words: Sequence[SearchWord], limit: int, *, every: bool
    ) -> list[Candidate]:
        """Up to `limit` items holding every word (`every`) or any of them, in any of its forms
        (a word with a prefix matches the terms starting with it), best ranked first."""
        ...

    def items(self, item_ids: Sequence[str]) -> list[RecallItem]:
        """The stored items with these ids, in the order given (missing ones left out)."""
        ...

    def containing(self, needle: str, limit: int) -> list[RecallItem]:
        """Items whose text contains `needle` (case-folded), newest first: the fallback for
        one-character CJK queries, which no index term matches."""
        ...

    def get(self, item_id: str) -> RecallItem | None: ...

    def list_items(self, limit: int, offset: int, kind: ItemKind | None) -> list[RecallItem]:
        """Items newest first."""
        ...

    def delete(self, item_id: str) -> bool:
        """Remove an item from the archive and its index; False when there is no such item."""
        ...

    def check(self) -> None:
        """Raise `ArchiveError` when the storage cannot be used (it is not created for that)."""
        ...

    def close(self) -> None: ...


def turn_text(user: str, reply: str | None) -> str:
    """How a turn reads in a prompt or a list."""
    return f"user: {user.strip()}\nassistant: {(reply or '').strip()}"


def memory_source(target: str | None, action: str | None) -> str:
    """The label of an entry taken out of curated memory."""
    name = FILE_NAMES.get(target or "", target or "memory")
    return f"removed from {name}" + (f" ({action})" if action else "")


def _clean(text: str) -> str:
    """Text safe to store: lone surrogates (half an emoji from a stream) replaced, length bounded."""
    safe = text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
    if len(safe) > MAX_FIELD_CHARS:
        return safe[:MAX_FIELD_CHARS] + _CUT.format(n=MAX_FIELD_CHARS)
    return safe


class IndexedArchiveProvider(MemoryProvider):
    """Archives finished turns and entries taken out of curated memory; recalls what is relevant.

    Turns of this provider's own session are never recalled into it (its history has them), but
    `search` finds them. A write that finds the archive locked by another process is kept in memory
    and retried with the next write and at shutdown, so a long-held lock delays but does not lose it.
    """

    def __init__(self, backend: ArchiveBackend, *, name: str, session_id: str | None) -> None:
        self.name = name
        self.backend = backend
        self.session_id = session_id
        self._pending: collections.deque[NewItem] = collections.deque(maxlen=MAX_PENDING)
        self._pending_lock = threading.Lock()

    # ---------------------------------------------------------------- writing

    def sync_turn(self, user: str, assistant: str) -> None:
        if not (user.strip() or assistant.strip()):
            return
        a, b = _clean(user), _clean(assistant)
        self._store(
            NewItem("turn", time.time(), self.session_id, a, b, None, None, index_text(a, b))
        )

    def on_memory_write(
        self, target: str, action: str, before: str | None, after: str | None
    ) -> None:
        if before is None or not before.strip():
            return  # an add takes nothing out of memory
        a = _clean(before)
        b = _clean(after) if after is not None else None
        self._store(
            NewItem("memory", time.time(), self.session_id, a, b, target, action, index_text(a))
        )

    def _store(self, item: NewItem) -> None:
        with self._pending_lock:
            self._pending.append(item)
            self._flush()

    def _flush(self) -> None:
        """Write what waits, oldest first. Only a busy archive keeps items waiting; any other
        failure drops the item it hit and raises (the manager reports it)."""
        while self._pending:
            try:
                item_id = self.backend.add(self._pending[0])
                self._after_add(item_id, self._pending[0])
            except ArchiveBusy:
                logger.warning(
                    "%s archive is locked by another process; %d item(s) kept for the next write",
                    self.name,
                    len(self._pending),
                )
                return
            except BaseException:
                self._pending.popleft()
                raise
            self._pending.popleft()

    def _after_add(self, item_id: str, item: NewItem) -> None:
        """Called once an item is stored (a subclass indexes it further, e.g. by meaning)."""

    @property
    def pending(self) -> int:
        """Items waiting for a lock another process holds."""
        return len(self._pending)

    # ---------------------------------------------------------------- reading

    def prefetch_items(self, query: str) -> list[RecallItem]:
        """The items that pass the relevance bar for `query` (usually none), best first."""
        terms = query_terms(query[:MAX_QUERY_CHARS])
        if not terms:
            return []
        doc_freq, items = self.backend.doc_freq(terms)
        weights = weigh(doc_freq, items)
        strong = weights.strong(PREFETCH_TERMS)
        if not strong or not passes(weights.total, weights):
            return []  # even an item holding every term would not pass: skip the index
        found = self.backend.candidates(strong, PREFETCH_CANDIDATES)
        scored: list[tuple[float, int, str]] = []
        for rank, candidate in enumerate(found):
            score = evidence(set(candidate.body.split()) & weights.by_term.keys(), weights)
            if passes(score, weights):
                scored.append((score, -rank, candidate.item_id))
        scored.sort(reverse=True)
        own = self.session_id
        others = [item for item in self._read(scored) if own is None or item.session != own]
        return others[:PREFETCH_ITEMS]

    def prefetch(self, query: str) -> str:
        return "\n\n".join(
            f"[{item.label}{' · ' + item.date if item.date else ''}]\n{item.text}"
            for item in self.prefetch_items(query)
        )

    def search(self, query: str, limit: int) -> list[SearchHit]:
        return [item.to_hit() for item in self.search_items(query, limit)]

    def search_items(self, query: str, limit: int) -> list[RecallItem]:
        """Items matching `query`, best first: those holding every word of it first (in any form:
        "tests" finds "test", "slow" finds "slowly"), then by how distinctive the words they hold
        are; no relevance bar."""
        return self.search_ranked(query, limit)[0]

    def search_ranked(self, query: str, limit: int) -> tuple[list[RecallItem], frozenset[str]]:
        """`search_items`, and the ids of the items that hold every word of the query (they come
        first; a ranking merged with another keeps them first)."""
        limit = max(1, min(int(limit), 100))
        query = query[:MAX_QUERY_CHARS]
        terms = query_terms(query, keep_stopwords=True)
        if not terms or all(is_cjk(t) and len(t) == 1 for t in terms):
            needle = query.strip()
            found = self.backend.containing(needle, limit) if needle else []
            return found, frozenset(item.id for item in found)
        ranked, complete = self._ranked(terms, limit)
        return self._read(ranked), complete

    def _ranked(
        self, terms: Sequence[str], limit: int
    ) -> tuple[list[tuple[float, int, str]], frozenset[str]]:
        """(score, -rank, id) of the best `limit` items for a search of `terms`, and the ids of
        those holding every word."""
        words = [SearchWord(term, search_prefix(term)) for term in terms]
        exact, items = self.backend.doc_freq(terms)
        by_prefix = self.backend.prefix_freq(sorted({w.prefix for w in words if w.prefix}))
        weights = weigh(
            {
                w.term: min(items, by_prefix.get(w.prefix, 0)) if w.prefix else exact.get(w.term, 0)
                for w in words
            },
            items,
        )
        present = [w for w in words if w.term in weights.by_term]
        present = sorted(present, key=lambda w: -weights.by_term[w.term])[:SEARCH_WORDS]
        if not present:
            return [], frozenset()
        pool = max(limit * 3, 20)
        found = self.backend.search_candidates(present, pool, every=True)
        if len(present) > 1 and len(found) < pool:  # then the items holding some of the words
            seen = {c.item_id for c in found}
            more = self.backend.search_candidates(present, pool, every=False)
            found += [c for c in more if c.item_id not in seen]
        ranked: list[tuple[int, float, int, str]] = []
        for rank, candidate in enumerate(found):
            held = frozenset(candidate.body.split())
            shares = [(w, w.found_in(held)) for w in present]
            matched = sum(1 for _, share in shares if share)
            score = sum(weights.by_term[w.term] * share for w, share in shares)
            ranked.append((matched, score, -rank, candidate.item_id))
        ranked.sort(reverse=True)
        best = ranked[:limit]
        complete = frozenset(item_id for matched, _, _, item_id in best if matched == len(present))
        return [(score, rank, item_id) for _, score, rank, item_id in best], complete

    def _read(self, scored: Sequence[tuple[float, int, str]]) -> list[RecallItem]:
        if not scored:
            return []
        score_of = {item_id: score for score, _, item_id in scored}
        found = self.backend.items([item_id for _, _, item_id in scored])
        return [with_score(item, score_of[item.id]) for item in found]

    # ---------------------------------------------------------------- the Recall view

    def get(self, item_id: str) -> RecallItem | None:
        return self.backend.get(item_id)

    def list_items(
        self, limit: int = 50, offset: int = 0, kind: ItemKind | None = None
    ) -> list[RecallItem]:
        return self.backend.list_items(max(1, min(limit, 1000)), max(0, offset), kind)

    def delete(self, item_id: str) -> bool:
        return self.backend.delete(item_id)

    def check(self) -> None:
        self.backend.check()

    def shutdown(self) -> None:
        with self._pending_lock:
            try:
                self._flush()
            except ArchiveError as exc:
                logger.error("%s archive: %s", self.name, exc)
            if self._pending:
                logger.error(
                    "%s archive stayed locked; %d item(s) were not archived",
                    self.name,
                    len(self._pending),
                )
        self.backend.close()


def with_score(item: RecallItem, score: float) -> RecallItem:
    """`item` with its relevance `score`."""
    return RecallItem(
        id=item.id,
        kind=item.kind,
        text=item.text,
        created=item.created,
        score=score,
        source=item.source,
        session=item.session,
    )


def parse_item_id(item_id: str) -> int | None:
    """A stored item's numeric id, or None for anything else (never an SQL error)."""
    text = str(item_id).strip()
    return int(text) if text.isdigit() and len(text) < 19 else None


def items_by_id(
    item_ids: Sequence[str], fetch: Callable[[list[int]], Sequence[Sequence[object]]]
) -> list[RecallItem]:
    """The stored items of `item_ids`, in that order (unknown and malformed ids skipped); `fetch`
    reads the rows of the valid numeric ids, in any order, in the backend's own SQL."""
    ids = [i for i in (parse_item_id(x) for x in item_ids) if i is not None]
    if not ids:
        return []
    by_id = {str(row[0]): item_from_row(row) for row in fetch(ids)}
    return [by_id[str(i)] for i in ids if str(i) in by_id]


def item_from_row(row: Sequence[object]) -> RecallItem:
    """A RecallItem from (id, kind, created, session, text_a, text_b, target, action)."""
    item_id, kind, created, session, a, b, target, action = row
    if kind == "turn":
        text, source = turn_text(str(a), None if b is None else str(b)), "turn"
    else:
        text = str(a)
        source = memory_source(
            None if target is None else str(target), None if action is None else str(action)
        )
    return RecallItem(
        id=str(item_id),
        kind="turn" if kind == "turn" else "memory" if kind == "memory" else "note",
        text=text,
        created=float(created) if isinstance(created, int | float) else 0.0,
        source=source,
        session=None if session is None else str(session),
    )
