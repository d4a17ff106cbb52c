"""Near-duplicate entries: is a new entry another wording (or an update) of one already saved?

Bounded memory bloats when the model adds "Project uses pnpm (never npm)" beside "Package manager
is pnpm" instead of replacing it. An add that looks like an existing entry still succeeds (a false
alarm must cost nothing), and its success message names the entry and suggests `replace`.

The check is lexical and deterministic: both texts are folded as the safety scanner folds them
(`tokens`, shared with the context-file check in context/similarity.py), Latin-script words and
numbers are tokens, a run of Chinese, Japanese or Korean characters gives its character bigrams,
and function words are dropped. The score is the Jaccard overlap of the two token sets; in text
with CJK characters, the Latin-script terms (pnpm, Redis, 8443) carry most of an entry's identity,
so their own overlap counts half. `SIMILAR_THRESHOLD` was measured on the labelled pairs of
tests/data/near_duplicates.jsonl (bench/near_duplicates.py reports precision and recall).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import NamedTuple

from my_agent_core.memory.normalize import fold
from my_agent_core.memory.render import preview
from my_agent_core.memory.safety import scan

__all__ = [
    "SIMILAR_THRESHOLD",
    "Similar",
    "most_similar",
    "near_duplicate_note",
    "ranked",
    "similarity",
    "tokens",
]

#: Scores at or above this name the entry in the add's success message (see the module docstring).
SIMILAR_THRESHOLD = 0.30
#: Entries longer than this are not compared (a pasted block is not "another wording" of a note).
MAX_COMPARED_CHARS = 4000

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[a-z0-9]+|[{_CJK}]")
_IS_CJK = re.compile(rf"[{_CJK}]")
#: Words that say nothing about which fact an entry holds (memory entries are full of them).
_STOP = frozenset(
    {
        *("a", "an", "the", "is", "are", "was", "were", "be", "been", "to", "of", "in", "on"),
        *("for", "with", "and", "or", "not", "no", "it", "its", "this", "that", "as", "at", "by"),
        *("from", "use", "uses", "used", "using", "run", "runs", "user", "users", "project", "s"),
    }
)
#: The same for Chinese: particles, and the bigrams nearly every entry has.
_STOP_CJK = frozenset(
    {"的", "是", "在", "用", "了", "和", "与", "要", "不", "这", "个", "里", "用户", "项目", "使用"}
)


def tokens(text: str) -> list[str]:
    """The words of a text as compared here: folded, lower case, punctuation dropped, each CJK
    character a token of its own."""
    return _TOKEN.findall(fold(text).lower())


class _Features(NamedTuple):
    """What one entry is compared by: its features, the Latin-script ones alone, and whether its
    text has CJK characters (then the Latin-script overlap counts half)."""

    all: frozenset[str]
    latin: frozenset[str]
    cjk: bool


@lru_cache(maxsize=2048)
def _features(text: str) -> _Features:
    """Latin words and CJK bigrams (a lone CJK character stands for itself), without stop words.
    Cached: a session compares each new entry with the same existing ones again and again."""
    if text.isascii():  # no CJK token: the words alone (most entries)
        found = frozenset(_TOKEN.findall(text.lower())) - _STOP
        return _Features(found, found, False)
    folded = fold(text).lower()
    if _IS_CJK.search(folded) is None:
        found = frozenset(_TOKEN.findall(folded)) - _STOP
        return _Features(found, found, _IS_CJK.search(text) is not None)
    collected: set[str] = set()
    run: list[str] = []
    end = -1

    def close_run() -> None:
        if len(run) == 1:
            collected.add(run[0])
        collected.update(a + b for a, b in pairwise(run))
        run.clear()

    for match in _TOKEN.finditer(folded):
        token = match.group()
        if _IS_CJK.match(token):
            if match.start() != end:
                close_run()
            run.append(token)
            end = match.end()
            continue
        close_run()
        collected.add(token)
    close_run()
    found = frozenset(t for t in collected if t not in _STOP and t not in _STOP_CJK)
    latin = frozenset(t for t in found if not _IS_CJK.match(t))
    return _Features(found, latin, _IS_CJK.search(text) is not None)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


def similarity(a: str, b: str) -> float:
    """How alike two entries are, from 0 (nothing shared) to 1 (the same words)."""
    return _score(_features(a), _features(b))


def _score(fa: _Features, fb: _Features) -> float:
    score = _jaccard(fa.all, fb.all)
    if (fa.cjk or fb.cjk) and fa.latin and fb.latin:
        score = (score + _jaccard(fa.latin, fb.latin)) / 2
    return score


@dataclass(frozen=True, slots=True)
class Similar:
    """The existing entry most like a new one: its index in the list, its text and the score."""

    index: int
    entry: str
    score: float


def ranked(entries: Sequence[str], new: str, threshold: float = SIMILAR_THRESHOLD) -> list[Similar]:
    """The entries of `entries` at or above `threshold` of likeness to `new`, most alike first
    (equal texts excluded: the store already treats an exact repeat as nothing to add)."""
    if len(new) > MAX_COMPARED_CHARS:
        return []
    compared = _features(new)
    words, size = compared.all, len(compared.all)
    found = []
    for index, entry in enumerate(entries):
        if entry == new or len(entry) > MAX_COMPARED_CHARS:
            continue
        features = _features(entry)
        if features.cjk or compared.cjk:
            score = _score(features, compared)
        elif words and features.all:  # `_score` inline: an add compares with every entry
            shared = len(features.all & words)
            score = shared / (len(features.all) + size - shared)
        else:
            score = 0.0
        if score >= threshold:
            found.append(Similar(index, entry, score))
    return sorted(found, key=lambda s: (-s.score, s.index))


def most_similar(
    entries: Sequence[str], new: str, threshold: float = SIMILAR_THRESHOLD
) -> Similar | None:
    """The entry of `entries` most like `new` at or above `threshold`, or None."""
    found = ranked(entries, new, threshold)
    return found[0] if found else None


def near_duplicate_note(entries: Sequence[str], new: str, name: str) -> str:
    """What an add's success message says when `new` looks like an entry already in `name` ("" when
    none does). A blocked entry is never named: the model does not see it, so cannot replace it."""
    found = next((s for s in ranked(entries, new) if not scan(s.entry)), None)
    if found is None:
        return ""
    return (
        f' It may restate entry {found.index + 1} of {name} ("{preview(found.entry)}"): if both '
        "say the same thing, or the new one updates it, keep one: replace that entry with the "
        "merged text and remove the one just added (one call with `operations`)."
    )
