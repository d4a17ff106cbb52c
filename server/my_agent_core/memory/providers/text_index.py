"""Text -> index terms, the same way for what is archived and for what is asked.

The archive does its own tokenising, so SQLite FTS5 (and PostgreSQL) index exactly the terms this
module produces and the relevance bar can count them: words of letters and digits (case and accents
folded), and for CJK text, which has no spaces, overlapping character pairs ("数据库" -> 数据, 据库), the
classic bigram indexing that makes Chinese, Japanese and Korean searchable without a dictionary. A
lone CJK character stays a term of its own, so one- and two-character queries work too.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

__all__ = [
    "MAX_TERM_CHARS",
    "fold",
    "index_text",
    "is_cjk",
    "query_terms",
    "search_prefix",
    "terms",
]

MAX_TERM_CHARS = 64  # longer runs (hashes, base64) are noise in an index of conversation

_WORD = re.compile(r"[^\W_]+")
_CJK_CLASS = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\U00020000-\U0003134f"  # CJK extensions B..G
)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_IS_CJK = re.compile(f"[{_CJK_CLASS}]")
_MARKS = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")

# Words that carry no topic: a message sharing only these with an archived turn is not about it.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down during
    each else etc ever every few for from further get gets getting give go goes going gone got had hadn
    has hasn have haven having he her here hers herself him himself his how however i if in into is
    isn it its itself just let lets like ll make makes me might more most much must my myself need
    needs no nor not now of off on once one only or other our ours ourselves out over own please re
    really same shall she should shouldn so some something still such sure take than thank thanks that
    the their theirs them themselves then there these they thing things this those though through to
    too try under until up us use used using ve very want wants was wasn way we well were weren what
    when where which while who whom why will with won would wouldn yes yet you your yours yourself
    yourselves hi hello hey ok okay know think tell see look new
    one two also maybe right good great fine work works working done again
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Chinese function words and fillers, as the character pairs the index holds.
_CJK_STOP_TEXT = """
    我们 你们 他们 她们 它们 这个 那个 这些 那些 什么 怎么 怎样 为什 可以 一个 一下 没有 就是 不是 还是
    因为 所以 如果 已经 现在 然后 但是 而且 或者 以及 的是 是的 了吗 好的 谢谢 请问 帮我 一些 这里 那里
    哪里 时候 知道 觉得 需要 应该 能够 我的 你的 他的 她的 的话 吗我 是什 么时
"""
_CJK_STOP = frozenset(_CJK_STOP_TEXT.split())
# A pair holding a particle or a pronoun is a seam between words ("的测" in "我们的测试"), not a word.
_CJK_PARTICLES = frozenset("的了吗呢吧啊们我你他她它")


def fold(text: str) -> str:
    """Case-folded, accents removed (café -> cafe), width-normalised; CJK and Hangul kept whole."""
    folded = text.casefold()
    if folded.isascii():
        return folded
    decomposed = unicodedata.normalize("NFKD", folded)
    return unicodedata.normalize("NFC", _MARKS.sub("", decomposed))


def is_cjk(term: str) -> bool:
    """True for a term made of CJK characters (a pair or a lone character)."""
    return bool(_IS_CJK.match(term))


def terms(text: str) -> Iterator[str]:
    """Every index term of `text`, in order, repeats included."""
    for match in _WORD.finditer(fold(text)):
        word = match.group()
        if word.isascii():
            if len(word) <= MAX_TERM_CHARS:
                yield word
            continue
        last = 0
        for run in _CJK_RUN.finditer(word):
            if run.start() > last and run.start() - last <= MAX_TERM_CHARS:
                yield word[last : run.start()]
            chars = run.group()
            if len(chars) == 1:
                yield chars
            else:
                for i in range(len(chars) - 1):
                    yield chars[i : i + 2]
            last = run.end()
        if last < len(word) and len(word) - last <= MAX_TERM_CHARS:
            yield word[last:]


def index_text(*parts: str | None) -> str:
    """What the full-text index stores for an item: its terms joined by spaces."""
    return " ".join(term for part in parts if part for term in terms(part))


def query_terms(text: str, *, keep_stopwords: bool = False, limit: int = 64) -> list[str]:
    """The distinct terms of a query worth looking up, in order of first appearance.

    Stopwords, one-letter words and lone CJK characters are dropped (they match everything), unless
    `keep_stopwords` is set and nothing else is left (a person searching for "the" gets "the").
    """
    seen: dict[str, None] = {}
    weak: dict[str, None] = {}
    for term in terms(text):
        if term in seen:
            continue
        if _is_weak(term):
            weak.setdefault(term, None)
        else:
            seen[term] = None
        if len(seen) >= limit:
            break
    if not seen and keep_stopwords:
        return list(weak)[:limit]
    return list(seen)


def _is_weak(term: str) -> bool:
    if is_cjk(term):
        return len(term) < 2 or term in _CJK_STOP or any(ch in _CJK_PARTICLES for ch in term)
    return len(term) < 2 or term in _STOPWORDS


# Endings a person's search word drops to match the other forms of the same word: (ending, the
# shortest stem it may leave). "tests" -> test*, "slowly" -> slow*, "queries" -> quer*, "matches" ->
# match*; "string" stays string* (str* would match everything that starts with "str").
_ENDINGS = (("ies", 4), ("ing", 4), ("ed", 4), ("ly", 4), ("es", 3), ("s", 3))
_SIBILANT = ("s", "x", "z", "ch", "sh")
MIN_PREFIX = 3


def search_prefix(term: str) -> str | None:
    """The prefix a search word matches index terms by, or None when it is matched exactly.

    Searching is for a person (or a model) who remembers a word, not its form: "slow" must find
    "slower", "tests" must find "test". Only words of ASCII letters of 3+ characters get a prefix;
    numbers ("6543"), mixed tokens ("v2") and CJK pairs are matched exactly. The ending is dropped
    by a few English rules (no dictionary): a plural, -ing, -ed, -ly.
    """
    if len(term) < MIN_PREFIX or not (term.isascii() and term.isalpha()):
        return None
    for ending, shortest in _ENDINGS:
        if not term.endswith(ending) or len(term) - len(ending) < shortest:
            continue
        stem = term[: -len(ending)]
        if ending == "es" and not stem.endswith(_SIBILANT):
            continue  # "files" -> file*, not fil*
        if ending == "s" and stem.endswith("s"):
            continue  # "class" is not a plural
        return stem
    return term
