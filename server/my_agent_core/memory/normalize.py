"""The folded form of text that attacks are matched on, with a map back to the original offsets.

Disguises (fullwidth letters, Cyrillic look-alikes, soft hyphens, zero-width characters, combining
marks, variation selectors, tag characters) make an instruction read the same to a model while no
plain pattern matches it. Folding undoes them so one pattern covers every disguise; findings are then
reported at offsets into the ORIGINAL text (the linter underlines them there).

Each character is folded on its own (NFKD, casefold, invisible and combining characters dropped,
look-alikes read as ASCII, NFC), so the result maps back character by character and the fold of each
distinct character is computed once per process and then served from a translation table.
"""

from __future__ import annotations

import re
import unicodedata

from my_agent_core.memory.confusables_data import CONFUSABLES

__all__ = ["fold", "fold_map", "original_span"]

# Characters with no visible form of their own besides the Cf / Mn / Me categories: Hangul fillers
# (category Lo, but Default_Ignorable and used to pad smuggled text).
_IGNORABLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0")
_DROPPED_CATEGORIES = frozenset({"Cf", "Mn", "Me"})


def _drop(ch: str) -> bool:
    """Invisible or combining: gone in the folded form (ZWSP, soft hyphen, bidi, VS, tags, marks)."""
    return ch in _IGNORABLE_LETTERS or unicodedata.category(ch) in _DROPPED_CATEGORIES


def _fold_char(ch: str) -> str:
    """The folded form of one character (possibly empty, possibly several ASCII characters).

    A look-alike is read as the ASCII it looks like before casefolding (Greek capital B reads `b`;
    its small form, a beta, does not look like `b`); a character with a compatibility or accented
    decomposition is read through its parts (the ligature IJ reads `ij`).
    """
    compat = unicodedata.normalize("NFKD", ch)
    if compat == ch and ord(ch) in CONFUSABLES:
        return CONFUSABLES[ord(ch)]
    decomposed = unicodedata.normalize("NFKD", compat.casefold())
    kept = unicodedata.normalize("NFC", "".join(c for c in decomposed if not _drop(c)))
    return "".join(CONFUSABLES.get(ord(c), c) for c in kept)


class _FoldTable(dict[int, str | None]):
    """A `str.translate` table that computes (and keeps) the fold of a character on first sight."""

    def __missing__(self, cp: int) -> str | None:
        folded = _fold_char(chr(cp))
        value = folded if folded else None  # None deletes the character in str.translate
        self[cp] = value
        return value


_TABLE = _FoldTable()
for _cp in range(0x80):
    _TABLE[_cp] = chr(_cp).lower()
del _cp


def fold(text: str) -> str:
    """The form attacks are matched on: NFKC-like, casefolded, invisibles and marks gone, ASCII-read."""
    if text.isascii():
        return text.lower()
    return text.translate(_TABLE)


def _irregular(text: str) -> str:
    """The distinct characters of `text` whose fold is not exactly one character."""
    odd = []
    for ch in set(text):
        value = _TABLE[ord(ch)]
        if value is None or len(value) != 1:
            odd.append(ch)
    return "".join(odd)


def fold_map(text: str) -> tuple[str, list[int]]:
    """`fold(text)` and, per folded character, the offset of the original character it came from.

    The list has one more entry than the folded text: `len(text)`, so a span that ends at the end of
    the folded text maps to the end of the original.
    """
    folded = fold(text)
    odd = _irregular(text) if not text.isascii() else ""
    if not odd:
        offsets = list(range(len(text) + 1))
        return folded, offsets
    offsets = []
    last = 0
    for m in re.finditer("[" + re.escape(odd) + "]", text):
        i = m.start()
        offsets.extend(range(last, i))
        value = _TABLE[ord(text[i])]
        if value:
            offsets.extend([i] * len(value))
        last = i + 1
    offsets.extend(range(last, len(text) + 1))
    return folded, offsets


def original_span(offsets: list[int], start: int, end: int) -> tuple[int, int]:
    """The span of the original text that the folded span `[start, end)` came from.

    The end is one past the original character of the last folded character, so characters dropped
    right after a match (a trailing zero-width space) are not part of it, and a character that folded
    to several (a ligature) is covered whole.
    """
    if end <= start:
        return offsets[start], offsets[start]
    return offsets[start], offsets[end - 1] + 1
