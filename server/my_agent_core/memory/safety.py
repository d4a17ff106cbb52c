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
from collections.abc import Sequence
from dataclasses import dataclass

import ahocorasick

from my_agent_core.memory.invisible import (
    INVISIBLE_RULES,
    hidden_spans,
    invisible_spans,
    strip_invisible,
)
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


def _invisible_issues(text: str) -> list[SafetyIssue]:
    return [
        SafetyIssue("invisible", span.message, span.start, span.end, span.rule)
        for span in invisible_spans(text)
    ]


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


def describe_finding(message: str, rules: Sequence[str]) -> str:
    """One finding's message with the ids of the rules that made it."""
    rules = [rule for rule in rules if rule]
    if not rules:
        return message
    return f"{message} ({'rule' if len(rules) == 1 else 'rules'} {', '.join(rules)})"
