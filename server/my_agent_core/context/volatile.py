"""Words that make an entry go stale by nature: "today", "currently", "right now", 目前, 14:30.

Memory is put into every FUTURE prompt. "The build is currently broken" was true on the day it was
written and is a false fact in every session after; "today" and a bare time of day name a moment
that has passed by the time anyone reads them. Such text belongs in the conversation, or in memory
as the lasting fact ("the nightly build needs VPN access") or with a date. Matched outside code
(a code span may hold `HH:MM` or `now()`), on whole words, case-insensitively.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["VolatileSpan", "volatile_spans"]

_EN = (
    r"today|tonight|yesterday|tomorrow|currently|right\s+now|at\s+the\s+moment|for\s+now"
    r"|as\s+of\s+(?:now|today|this\s+week)|these\s+days|just\s+now"
    r"|this\s+(?:morning|afternoon|evening|week|weekend|month|sprint)"
    r"|(?:last|next)\s+(?:night|week|weekend|month)|at\s+the\s+time\s+of\s+writing"
)
_TIME = (
    r"(?<![\d:.\w])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s*[ap]\.?m\.?)?(?![\d:\w])"
    r"|(?<![\d\w.])(?:1[0-2]|0?[1-9])\s?(?:[ap]\.m\.|[ap]m)(?![\w])"
)
# 当前 ("current", as in 当前目录 the current directory) is technical, not a moment: left out.
_ZH = r"今天|今日|今晚|今早|昨天|明天|目前|现在|本周|这周|这个月|本月|上周|下周|刚才|最近"
_VOLATILE = re.compile(rf"\b(?:{_EN})\b|{_TIME}|{_ZH}", re.IGNORECASE)
_DATE_BEFORE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]$")  # `2026-12-01 10:42`: dated, so it stays true
# A code span opens at a whole run of backticks (look-behind): retrying from inside a long run of
# them made this quadratic on a cloned or pasted entry.
_CODE = re.compile(
    r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)|^[ \t]{0,3}(```|~~~).*?^[ \t]{0,3}\2", re.S | re.M
)


@dataclass(frozen=True, slots=True)
class VolatileSpan:
    """`text[start:end]` is a word that ties the entry to a moment; `kind` says which kind."""

    start: int
    end: int
    word: str
    kind: str  # "moment" (today, currently, 目前) or "time" (a bare time of day)


def volatile_spans(text: str) -> list[VolatileSpan]:
    """Every stale-by-nature word of an entry, outside code."""
    code = [(m.start(), m.end()) for m in _CODE.finditer(text)]
    found: list[VolatileSpan] = []
    for match in _VOLATILE.finditer(text):
        if any(start <= match.start() < end for start, end in code):
            continue
        word = match.group(0)
        kind = "time" if word[:1].isdigit() else "moment"
        if kind == "time" and _DATE_BEFORE.search(text, max(0, match.start() - 11), match.start()):
            continue
        found.append(VolatileSpan(match.start(), match.end(), word, kind))
    return found
