"""Scanner for text that would steer, leak or hide things once it is in a prompt.

Memory is injected into every future session's system prompt, and a cloned repository can ship memory
files, so an entry is an attack surface; context files and recalled archive text are scanned the same
way. Two jobs, both reported at offsets into the ORIGINAL text:

- hidden characters (bidi controls, zero-width runs, tag characters, terminal escapes), judged on the
  original so legitimate uses stay: ZWJ in emoji, ZWNJ in Persian and Indic words, ZWSP as the word
  separator of Thai, Khmer, Lao, Myanmar and Japanese, a variation selector after its base;
- phrases aimed at the model (`safety_rules`), matched on the folded form (`normalize.fold`) so that
  fullwidth, look-alike, accented or zero-width-split disguises of an attack match as the attack.

A developer's note that documents a command (`curl ... | sh`, `crontab -e`, "add it to ~/.bashrc") is
not an attack; the approval gate of the workspace tools is what guards commands. An instruction to the
model to act without the user, to hide from the user, or to send data out, is.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import ahocorasick

from my_agent_core.memory.normalize import fold, fold_map, original_span
from my_agent_core.memory.safety_rules import PROMPTWARE, RULES, Rule
from my_agent_core.memory.safety_views import disguised_issues

__all__ = [
    "INVISIBLE_RULES",
    "RULE_IDS",
    "SafetyIssue",
    "describe",
    "describe_finding",
    "forget",
    "hidden_spans",
    "is_safe",
    "scan",
    "strip_invisible",
]


@dataclass(frozen=True, slots=True)
class SafetyIssue:
    """One finding at `[start, end)` of the original text, made by the rule named `rule` (an id of
    `RULE_IDS`, shown in refusals and diagnostics so a false positive can be traced to its rule).

    `kind`: injection, exfiltration, concealment, execution, persistence or invisible.
    """

    kind: str
    message: str
    start: int
    end: int
    rule: str = ""


# --- hidden characters ----------------------------------------------------------------------------

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


def _tag_run_issue(text: str, start: int, end: int) -> SafetyIssue | None:
    """Tag characters spell hidden ASCII, except in a subdivision flag (🏴 + tags + CANCEL TAG)."""
    if start > 0 and text[start - 1] == "\U0001f3f4" and text[end - 1] == "\U000e007f":
        return None
    return SafetyIssue(
        "invisible",
        "contains invisible Unicode tag characters (hidden text)",
        start,
        end,
        INVISIBLE_TAGS,
    )


def _invisible_issues(text: str) -> list[SafetyIssue]:
    issues: list[SafetyIssue] = []
    for m in _CANDIDATES.finditer(text):
        # Tag characters form their own sub-runs; the rest is judged as one run.
        for sub in _TAG_SPLIT.finditer(m.group()):
            s, e = m.start() + sub.start(), m.start() + sub.end()
            if "\U000e0000" <= text[s] <= "\U000e007f":
                issue = _tag_run_issue(text, s, e)
                if issue is not None:
                    issues.append(issue)
            elif e - s == 1:
                if not _single_is_legitimate(text, s):
                    ch = text[s]
                    message = f"contains an invisible character U+{ord(ch):04X} ({_name(ch)})"
                    issues.append(SafetyIssue("invisible", message, s, e, INVISIBLE_CHAR))
            elif not _run_is_legitimate(text, s, e):
                message = f"contains a run of {e - s} invisible characters (hidden data)"
                issues.append(SafetyIssue("invisible", message, s, e, INVISIBLE_RUN))
    return issues


# --- phrases --------------------------------------------------------------------------------------

_NEGATION = re.compile(r"\b(?:never|not|n't|dont|avoid|no|nor)\s+(?:(?!forget\b|fail\b)\w+\s+)?$")
_ALL_RULES: tuple[Rule, ...] = RULES + PROMPTWARE
_BY_ID: dict[str, Rule] = {rule.id: rule for rule in _ALL_RULES}
#: Every rule's id: the phrase rules, then the hidden-character checks.
RULE_IDS: tuple[str, ...] = (*_BY_ID, *INVISIBLE_RULES)
# Below this size a text is searched whole: windows would cost more than they save.
_WINDOWED_FROM = 4096

Span = tuple[int, int, bool]  # start, end, in folded coordinates


def _trigger_automaton() -> ahocorasick.Automaton:
    """Every trigger of every rule -> the rules it opens, found in one pass over the text."""
    by_trigger: dict[str, list[int]] = {}
    for index, rule in enumerate(_ALL_RULES):
        for trigger in rule.triggers:
            by_trigger.setdefault(trigger, []).append(index)
    automaton = ahocorasick.Automaton()
    for trigger, indices in by_trigger.items():
        automaton.add_word(trigger, (len(trigger), tuple(indices)))
    automaton.make_automaton()
    return automaton


_AUTOMATON = _trigger_automaton()


def _windows(folded: str) -> dict[int, list[tuple[int, int]]]:
    """Per triggered rule, the merged stretches of `folded` it must search.

    A stretch runs from `reach` before a trigger to the end of the line `reach` after it (a
    search may start anywhere, `^` and look-behinds still see the text before it, but it must
    end at a line end for `$` to mean what it means in the whole text); reach 0: the whole text.
    """
    n = len(folded)
    found: dict[int, list[tuple[int, int]]] = {}
    for end, (length, indices) in _AUTOMATON.iter(folded):
        at = end + 1 - length
        for index in indices:
            reach = _ALL_RULES[index].reach
            spans = found.setdefault(index, [])
            if reach == 0:
                if not spans:
                    spans.append((0, n))
                continue
            if spans and at - reach <= spans[-1][1]:
                if end + reach >= spans[-1][1]:
                    spans[-1] = (spans[-1][0], _line_end(folded, end + reach))
                continue
            spans.append((max(0, at - reach), _line_end(folded, end + reach)))
    return found


def _line_end(folded: str, at: int) -> int:
    if at >= len(folded):
        return len(folded)
    stop = folded.find("\n", at)
    return len(folded) if stop < 0 else stop


def _negated(folded: str, start: int) -> bool:
    """ "Never send tokens to ..." is advice; "do not forget to send tokens to ..." is not."""
    return bool(_NEGATION.search(folded, max(0, start - 30), start))


def _rule_spans(rule: Rule, text: str, folded: str, stretches: list[tuple[int, int]]) -> list[Span]:
    if rule.on_original:
        return [(s, e, False) for s, e in rule.find(text, 0, len(text))]
    spans: set[Span] = set()
    for start, stop in stretches:
        for s, e in rule.find(folded, start, stop):
            if not (rule.negatable and _negated(folded, s)):
                spans.add((s, e, True))
    return sorted(spans)


def _triggered(folded: str, gate: bool) -> dict[int, list[tuple[int, int]]]:
    """Rule index -> stretches to search, for the rules whose triggers occur (all, ungated)."""
    whole = [(0, len(folded))]
    if not gate:
        return {index: whole for index in range(len(_ALL_RULES))}
    if len(folded) >= _WINDOWED_FROM:
        return _windows(folded)
    return {index: whole for _, (_, indices) in _AUTOMATON.iter(folded) for index in indices}


def phrase_issues(text: str, *, gate: bool = True) -> list[SafetyIssue]:
    """The phrase findings alone; `gate=False` runs every rule on the whole text whatever its
    triggers say (the gate and the windows are a pure speed-up; tests prove they change nothing).
    """
    folded = fold(text)
    found: list[tuple[Rule, list[Span]]] = []
    signals: list[tuple[Rule, list[Span]]] = []
    for index, stretches in _triggered(folded, gate).items():
        rule = _ALL_RULES[index]
        spans = _rule_spans(rule, text, folded, stretches)
        if spans:
            (signals if rule.group else found).append((rule, spans))
    if len(signals) >= 2:
        found += signals
    if not found:
        return []
    offsets = fold_map(text)[1]
    issues: list[SafetyIssue] = []
    for rule, spans in found:
        for s, e, in_folded in spans:
            start, end = original_span(offsets, s, e) if in_folded else (s, e)
            if end > start:
                issues.append(SafetyIssue(rule.kind, rule.message, start, end, rule.id))
    return issues


# --- the API --------------------------------------------------------------------------------------


#: Texts up to this long have their findings remembered (an entry is far shorter), at most
#: `MEMO_SIZE` of them, the least recently used forgotten first.
MEMO_CHARS = 4096
MEMO_SIZE = 512


def scan(text: str) -> list[SafetyIssue]:
    """Every unsafe span in `text`, in order of position (offsets into `text`): hidden characters,
    the phrase rules, and the phrase rules on the text's disguises decoded (`safety_views`).

    Remembered per exact text (`_Memo`): an edit scans its new text, then quotes the entry it
    replaces or removes, which was scanned when it was added or loaded; a reviewed edit runs its
    rules twice. A remembered finding is only ever one of the same text under the same rules."""
    if len(text) > MEMO_CHARS:
        return _scan(text)
    return list(_MEMO.findings(text))


def _scan(text: str) -> list[SafetyIssue]:
    issues = set(_invisible_issues(text)) | set(phrase_issues(text))
    for rule_id, start, end in disguised_issues(text, _phrase_spans):
        rule = _BY_ID[rule_id]
        issues.add(SafetyIssue(rule.kind, rule.message, start, end, rule_id))
    return sorted(issues, key=lambda i: (i.start, i.end, i.kind, i.message, i.rule))


def _phrase_spans(view: str) -> list[tuple[str, int, int]]:
    return [(i.rule, i.start, i.end) for i in phrase_issues(view)]


def _rules_in_force() -> tuple[object, ...]:
    """What a scan's findings depend on besides the text: the rules and the checks that apply
    them (a rule set or a check swapped at run time, as a test may do, is another key)."""
    return (_ALL_RULES, _BY_ID, _AUTOMATON, _invisible_issues, phrase_issues, disguised_issues)


class _Memo:
    """The findings of the texts scanned last, each valid only for its exact text under the rules
    it was scanned with: when `_rules_in_force` changes, everything remembered is forgotten.
    Shared by threads (the language server scans on several): `lru_cache` is thread-safe, and a
    change of rules is recorded under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules = _rules_in_force()
        self._cached = functools.lru_cache(maxsize=MEMO_SIZE)(_scan_tuple)

    def findings(self, text: str) -> tuple[SafetyIssue, ...]:
        rules = _rules_in_force()
        if rules != self._rules:
            with self._lock:
                if rules != self._rules:
                    self._cached.cache_clear()
                    self._rules = rules
        return self._cached(text)

    def clear(self) -> None:
        """Forget every remembered finding."""
        self._cached.cache_clear()


def _scan_tuple(text: str) -> tuple[SafetyIssue, ...]:
    return tuple(_scan(text))


_MEMO = _Memo()


def forget() -> None:
    """Forget every remembered finding: the next scan of any text scans it (a bench that times
    the scanner itself, or a text's first rendering, starts from here)."""
    _MEMO.clear()


def is_safe(text: str) -> bool:
    """True when `scan` finds nothing."""
    return not scan(text)


_DESCRIBED = 4


def describe(issues: list[SafetyIssue]) -> str:
    """A short, non-quoting summary of what was found, each finding with the ids of the rules that
    made it ("tells the model to ignore its instructions (rule override-instructions)"): safe to
    show to the model, and traceable by the user."""
    rules: dict[str, list[str]] = {}
    for issue in issues:
        named = rules.setdefault(issue.message, [])
        if issue.rule and issue.rule not in named:
            named.append(issue.rule)
    seen = [describe_finding(message, named) for message, named in rules.items()]
    if len(seen) > _DESCRIBED:
        return "; ".join(seen[:_DESCRIBED]) + f"; and {len(seen) - _DESCRIBED} more findings"
    return "; ".join(seen)


def hidden_spans(text: str) -> list[tuple[int, int]]:
    """The `[start, end)` spans of the invisible characters `scan` reports, legitimate joiners
    excepted (ZWJ in emoji, ZWNJ in Persian...): one judgement for the prompt and the terminal."""
    return [(i.start, i.end) for i in _invisible_issues(text)]


def describe_finding(message: str, rules: Sequence[str]) -> str:
    """One finding's message with the ids of the rules that made it."""
    rules = [rule for rule in rules if rule]
    if not rules:
        return message
    return f"{message} ({'rule' if len(rules) == 1 else 'rules'} {', '.join(rules)})"


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
