"""What "a run of words" is: text folded the way the scanner folds it, cut into tokens, and the runs
that a new memory entry may share with untrusted text.

Folding (`memory.normalize.fold`: NFKD compatibility forms, case, invisible and combining
characters, look-alike letters read as ASCII) makes a copy with fullwidth letters, a soft hyphen or
Cyrillic look-alikes read as the text it copies. Punctuation and whitespace separate tokens and are
otherwise ignored, so `scripts/sync.sh` and `scripts sync sh` are the same run. Scripts written
without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar) have no word boundaries to cut
at, so each of their characters is a token of half a word's weight.

A RUN is a sequence of consecutive tokens weighing at least `RunRule.min_units` (a word weighs 2,
an unspaced character 1): six words, or twelve Han characters. A text that shares any run with a
source shares at least one `windows()` key with it: each window is the shortest run starting at a
token, so identical token sequences give identical windows (docs/safety.md "Trust" for the
measured choice).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from my_agent_core.memory.normalize import fold, fold_map

__all__ = [
    "DEFAULT_RULE",
    "RunRule",
    "joined",
    "token_starts",
    "tokens",
    "units",
    "windows",
]

# Scripts whose words are not separated by spaces: one token per character.
_UNSPACED = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002fa1f"  # CJK extensions B-F, compatibility supplement
)
_TOKEN = re.compile(f"[{_UNSPACED}]|[^\\W_{_UNSPACED}]+")
_UNSPACED_CHAR = re.compile(f"[{_UNSPACED}]")
WORD_UNITS = 2
CHAR_UNITS = 1


@dataclass(frozen=True, slots=True)
class RunRule:
    """When a new text counts as a copy of a source.

    `min_units`: the weight of a shared run (12: six words, twelve unspaced characters);
    `whole_min_units`: a new text too short to hold a run is a copy when ALL of it appears in a
    source as consecutive tokens and it weighs at least this much (0: never)."""

    min_units: int = 12
    whole_min_units: int = 8


DEFAULT_RULE = RunRule()


def tokens(text: str) -> list[str]:
    """The folded tokens of `text`, in order."""
    return _TOKEN.findall(fold(text))


def token_starts(text: str) -> list[int]:
    """The offset in `text` (the original, not its fold) where each of `tokens(text)` starts."""
    folded, offsets = fold_map(text)
    return [offsets[m.start()] for m in _TOKEN.finditer(folded)]


def units(token: str) -> int:
    """A token's weight: a word 2, one character of an unspaced script 1."""
    return CHAR_UNITS if len(token) == 1 and _UNSPACED_CHAR.match(token) else WORD_UNITS


def joined(toks: list[str]) -> str:
    """The form runs are searched in: every token between single spaces, with a space at both
    ends, so a substring search on ` a b c ` matches whole tokens only."""
    return f" {' '.join(toks)} " if toks else " "


def windows(toks: list[str], rule: RunRule = DEFAULT_RULE) -> Iterator[tuple[int, str]]:
    """(start, key) of the shortest run starting at each token (`joined` form); none when the
    tokens weigh less than a run."""
    weights = [units(t) for t in toks]
    end = 0
    total = 0
    for start in range(len(toks)):
        while end < len(toks) and total < rule.min_units:
            total += weights[end]
            end += 1
        if total < rule.min_units:
            return
        yield start, joined(toks[start:end])
        total -= weights[start]
