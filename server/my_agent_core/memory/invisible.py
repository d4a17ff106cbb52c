"""The hidden-character judgement: which invisible characters hide data (zero-width runs, bidi
controls, tag characters, C0/C1 controls) and which do a visible job (ZWJ in an emoji, ZWNJ in
Persian, ZWSP between Thai words, a variation selector on its base).

One judgement for the scanner (`safety.scan` reports these spans), the prompt renderer and the
terminal (`terminal_text` shows them as escapes). Kept apart from the phrase rules so the terminal
and the command line load it without compiling every rule.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

__all__ = [
    "INVISIBLE_CHAR",
    "INVISIBLE_RULES",
    "INVISIBLE_RUN",
    "INVISIBLE_TAGS",
    "HiddenSpan",
    "hidden_spans",
    "invisible_spans",
    "strip_invisible",
]


class HiddenSpan(NamedTuple):
    """Invisible characters at `[start, end)` that hide something, with the check that found them."""

    start: int
    end: int
    rule: str
    message: str


#: The ids of the hidden-character checks (they are not phrase rules): one character, a run, tags.
INVISIBLE_CHAR = "invisible-character"
INVISIBLE_RUN = "invisible-run"
INVISIBLE_TAGS = "invisible-tag-characters"
INVISIBLE_RULES = (INVISIBLE_CHAR, INVISIBLE_RUN, INVISIBLE_TAGS)

_CANDIDATES = re.compile(
    "[\u200b-\u200d\u2060-\u2064\ufeff\u180e\u202a-\u202e\u2066-\u2069"
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufe00-\ufe0f\u3164\uffa0"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]+"
)
_TAG_SPLIT = re.compile("[\U000e0000-\U000e007f]+|[^\U000e0000-\U000e007f]+")
_VS16_ZWJ = frozenset({"\ufe0f\u200d", "\ufe0e\u200d"})

_NAMES = {
    "\u200b": "ZERO WIDTH SPACE",
    "\u200c": "ZERO WIDTH NON-JOINER",
    "\u200d": "ZERO WIDTH JOINER",
    "\u2060": "WORD JOINER",
    "\ufeff": "ZERO WIDTH NO-BREAK SPACE",
    "\u180e": "MONGOLIAN VOWEL SEPARATOR",
}


def _name(ch: str) -> str:
    if ch in _NAMES:
        return _NAMES[ch]
    if "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069":
        return "bidirectional control"
    if ch < "\x20" or "\x7f" <= ch <= "\x9f":
        return "control character"
    return unicodedata.name(ch, "invisible character")


def _is_pictographic(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2B00 <= cp <= 0x2BFF
        or 0x2190 <= cp <= 0x21FF
        or 0x2300 <= cp <= 0x23FF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
    )


def _is_emoji_tail(ch: str) -> bool:
    """Characters that may stand between an emoji and a following ZWJ (VS16, skin tones, keycap)."""
    cp = ord(ch)
    return cp in (0xFE0F, 0xFE0E, 0x20E3) or 0x1F3FB <= cp <= 0x1F3FF


def _is_joining_script(ch: str) -> bool:
    """Scripts where ZWNJ/ZWJ shape words: Arabic (Persian, Urdu...), Syriac, Indic, Sinhala, Hebrew."""
    cp = ord(ch)
    return (
        0x0590 <= cp <= 0x08FF  # Hebrew, Arabic, Syriac, Thaana, NKo, Arabic ext.
        or 0x0900 <= cp <= 0x0DFF  # Devanagari .. Sinhala
        or 0x0F00 <= cp <= 0x0FFF  # Tibetan
        or 0x1000 <= cp <= 0x109F  # Myanmar
        or 0xFB1D <= cp <= 0xFDFF  # Hebrew / Arabic presentation forms
        or 0xFE70 <= cp <= 0xFEFC
    )


def _separates_words_with_zwsp(ch: str) -> bool:
    """Scripts written without spaces, where ZWSP marks word breaks: Thai, Lao, Khmer, Myanmar,
    Tibetan, Balinese, Javanese, Tai scripts, and Japanese / Chinese text."""
    cp = ord(ch)
    return (
        0x0E00 <= cp <= 0x0EFF  # Thai, Lao
        or 0x0F00 <= cp <= 0x0FFF  # Tibetan
        or 0x1000 <= cp <= 0x109F  # Myanmar
        or 0x1780 <= cp <= 0x17FF  # Khmer
        or 0x1950 <= cp <= 0x19FF  # Tai Le, New Tai Lue, Khmer symbols
        or 0x1A20 <= cp <= 0x1AAF  # Tai Tham
        or 0x1B00 <= cp <= 0x1B7F  # Balinese
        or 0xA980 <= cp <= 0xA9FF  # Javanese, Myanmar ext. B
        or 0xAA60 <= cp <= 0xAADF  # Myanmar ext. A, Tai Viet
        or 0x3000 <= cp <= 0x30FF  # CJK punctuation, Hiragana, Katakana
        or 0x31F0 <= cp <= 0x31FF
        or 0x3400 <= cp <= 0x4DBF
        or 0x4E00 <= cp <= 0x9FFF
        or 0xF900 <= cp <= 0xFAFF
        or 0xFF66 <= cp <= 0xFF9F
        or 0x20000 <= cp <= 0x3FFFF
    )


def _is_ideograph(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x3400 <= cp <= 0x4DBF
        or 0x4E00 <= cp <= 0x9FFF
        or 0xF900 <= cp <= 0xFAFF
        or (0x20000 <= cp <= 0x3FFFF)
    )


def _single_is_legitimate(text: str, i: int) -> bool:
    """Whether the one invisible character at `i` (not part of a longer run) does a visible job."""
    ch = text[i]
    prev = text[i - 1] if i > 0 else ""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if ch == "\u200b":
        return any(c and _separates_words_with_zwsp(c) for c in (prev, nxt))
    if ch in "\u200c\u200d":
        if (prev and _is_joining_script(prev)) or (nxt and _is_joining_script(nxt)):
            return True  # e.g. Persian ZWNJ, Malayalam chillu (virama + ZWJ) at a word's end
        if ch == "\u200d" and prev and nxt:
            j = i - 1
            while j > 0 and _is_emoji_tail(text[j]):
                j -= 1
            return _is_pictographic(text[j]) and _is_pictographic(nxt)
        return False
    if "\ufe00" <= ch <= "\ufe0f":
        return bool(prev) and not prev.isspace()  # a variation sequence needs its base
    if "\U000e0100" <= ch <= "\U000e01ef":
        return bool(prev) and _is_ideograph(prev)  # ideographic variation sequences
    return False


def _run_is_legitimate(text: str, start: int, end: int) -> bool:
    """A run of several invisibles: only VS + ZWJ inside an emoji sequence (❤️‍🔥) is normal."""
    run = text[start:end]
    if run not in _VS16_ZWJ or start == 0 or end >= len(text):
        return False
    return _is_pictographic(text[start - 1]) and _is_pictographic(text[end])


def _is_flag_tags(text: str, start: int, end: int) -> bool:
    """Tag characters spell hidden ASCII, except in a subdivision flag (🏴 + tags + CANCEL TAG)."""
    return start > 0 and text[start - 1] == "\U0001f3f4" and text[end - 1] == "\U000e007f"


def invisible_spans(text: str) -> list[HiddenSpan]:
    """Every run of invisible characters in `text` that does no visible job, in order."""
    found: list[HiddenSpan] = []
    for m in _CANDIDATES.finditer(text):
        # Tag characters form their own sub-runs; the rest is judged as one run.
        for sub in _TAG_SPLIT.finditer(m.group()):
            s, e = m.start() + sub.start(), m.start() + sub.end()
            if "\U000e0000" <= text[s] <= "\U000e007f":
                if not _is_flag_tags(text, s, e):
                    message = "contains invisible Unicode tag characters (hidden text)"
                    found.append(HiddenSpan(s, e, INVISIBLE_TAGS, message))
            elif e - s == 1:
                if not _single_is_legitimate(text, s):
                    ch = text[s]
                    message = f"contains an invisible character U+{ord(ch):04X} ({_name(ch)})"
                    found.append(HiddenSpan(s, e, INVISIBLE_CHAR, message))
            elif not _run_is_legitimate(text, s, e):
                message = f"contains a run of {e - s} invisible characters (hidden data)"
                found.append(HiddenSpan(s, e, INVISIBLE_RUN, message))
    return found


def hidden_spans(text: str) -> list[tuple[int, int]]:
    """The `[start, end)` spans of the invisible characters `scan` reports, legitimate joiners
    excepted (ZWJ in emoji, ZWNJ in Persian...): one judgement for the prompt and the terminal."""
    return [(span.start, span.end) for span in invisible_spans(text)]


def strip_invisible(text: str) -> str:
    """The text without the invisible characters `scan` reports (legitimate joiners are kept)."""
    spans = hidden_spans(text)
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in sorted(spans):
        if start >= last:
            out.append(text[last:start])
            last = end
    out.append(text[last:])
    return "".join(out)
