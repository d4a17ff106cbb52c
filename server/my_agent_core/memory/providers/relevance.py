"""The relevance bar: when is an archived item worth recalling into a user message unasked?

Most turns should recall nothing, so the bar is evidence, not rank. Each query term weighs how
distinctive it is in this archive (1 for a term found in at most 1% of the items, or in one or two of a
small archive, less the more common it is, by the smoothed BM25 idf); an item's evidence is the sum of
the weights of the query terms it contains. An item is recalled when it shares at least one
distinctive term (weight >= `STRONG`), its evidence reaches `MIN_EVIDENCE` (two distinctive shared
terms) AND a share of the query's own weight (`MIN_SHARE`), so a long pasted log does not recall
everything that shares a few words with it. Only the strong terms are looked up in the index: ranking
every item that holds a common word is what makes a naive full-text query slow.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["MIN_EVIDENCE", "MIN_SHARE", "STRONG", "Weights", "evidence", "passes", "weigh"]

MIN_EVIDENCE = 2.0
MIN_SHARE = 0.25
STRONG = 0.5
_RARE_SHARE = 0.01  # a term in at most this share of the items counts fully


@dataclass(frozen=True, slots=True)
class Weights:
    """The query's terms that occur in the archive, each with its weight in (0, 1]."""

    by_term: Mapping[str, float]

    @property
    def total(self) -> float:
        return sum(self.by_term.values())

    def rarest(self, count: int) -> list[str]:
        """The `count` most distinctive terms."""
        return sorted(self.by_term, key=lambda term: -self.by_term[term])[:count]

    def strong(self, count: int) -> list[str]:
        """The `count` most distinctive terms of weight >= STRONG (what the index is asked for)."""
        return [term for term in self.rarest(count) if self.by_term[term] >= STRONG]


def _idf(items: int, df: int) -> float:
    return math.log(1.0 + (items - df + 0.5) / (df + 0.5))


def weigh(doc_freq: Mapping[str, int], items: int) -> Weights:
    """Weights of the terms found in `items` archived items (`doc_freq`: items holding each term;
    terms with no item are left out: they cannot match)."""
    if items <= 0:
        return Weights({})
    reference = _idf(items, min(items, max(2, math.ceil(items * _RARE_SHARE))))
    by_term = {}
    for term, df in doc_freq.items():
        if df <= 0:
            continue
        idf = _idf(items, min(df, items))
        by_term[term] = 1.0 if reference <= 0 else max(0.0, min(1.0, idf / reference))
    return Weights({t: w for t, w in by_term.items() if w > 0})


def evidence(matched: Iterable[str], weights: Weights) -> float:
    """How strongly an item holding the terms `matched` is about the query (0 when it shares no
    strong term)."""
    found = [weights.by_term.get(term, 0.0) for term in set(matched)]
    return sum(found) if any(w >= STRONG for w in found) else 0.0


def passes(score: float, weights: Weights) -> bool:
    """The bar: enough distinctive shared terms, and enough of what the query is about."""
    return score >= MIN_EVIDENCE and score >= MIN_SHARE * weights.total
