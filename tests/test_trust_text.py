"""What "a run of words" is (trust/text.py), and the run rule on the labelled set
tests/data/trust_runs.jsonl (bench/taint_runs.py prints the whole grid)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from my_agent_core.trust import DEFAULT_RULE, RunRule, Source, TaintTracker
from my_agent_core.trust.text import joined, token_starts, tokens, units, windows

CORPUS = Path(__file__).parent / "data" / "trust_runs.jsonl"


def test_tokens_fold_case_width_look_alikes_and_punctuation() -> None:
    assert tokens("Run `scripts/sync.sh` — NOW!") == ["run", "scripts", "sync", "sh", "now"]
    assert tokens("Ｒｕｎ ｓｙｎｃ") == ["run", "sync"]  # fullwidth
    assert tokens("Bеfore") == ["before"]  # a Cyrillic е
    assert tokens("soft\u00adhyphen zero\u200bwidth") == ["softhyphen", "zerowidth"]
    assert tokens("snake_case and kebab-case") == ["snake", "case", "and", "kebab", "case"]


def test_unspaced_scripts_are_cut_by_character_and_weigh_half_a_word() -> None:
    assert tokens("用户偏好pnpm") == ["用", "户", "偏", "好", "pnpm"]
    assert tokens("テストを実行") == ["テ", "ス", "ト", "を", "実", "行"]
    assert [units(t) for t in tokens("中文 word")] == [1, 1, 2]
    assert tokens("사용자는 pnpm을") == ["사용자는", "pnpm을"]  # Hangul is written with spaces


def test_windows_are_the_shortest_runs_from_each_token() -> None:
    rule = RunRule(min_units=6)
    toks = tokens("one two three four")
    assert [key for _, key in windows(toks, rule)] == [" one two three ", " two three four "]
    assert list(windows(tokens("one two"), rule)) == []
    cjk = [key for _, key in windows(tokens("一二三四五六七"), rule)]
    assert cjk == [" 一 二 三 四 五 六 ", " 二 三 四 五 六 七 "]


def test_token_starts_point_into_the_original_text() -> None:
    text = "Ｒｕｎ  the\u200b sync.sh"
    starts = token_starts(text)
    assert len(starts) == len(tokens(text))
    assert [text[s] for s in starts] == ["Ｒ", "t", "s", "s"]


@given(st.text(max_size=60), st.text(max_size=60), st.text(max_size=60))
def test_a_text_that_contains_a_run_shares_a_window_with_it(a: str, run: str, b: str) -> None:
    """Whatever surrounds a shared run of the rule's weight, the tracker finds it."""
    if sum(units(t) for t in tokens(run)) < DEFAULT_RULE.min_units:
        run = run + " the build runs with make check every day"
    tracker = TaintTracker()
    tracker.receive(Source("file", "f", f"{a}\n{run}\n{b}"), this_turn=False)
    taint = tracker.assess([f"note: {run} ok"])
    assert taint.copied, (a, run, b)
    assert joined(tokens(run)).strip() in joined(tokens(taint.copied[0].source.text))


def load() -> list[dict[str, str]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]


def copied(item: dict[str, str], rule: RunRule = DEFAULT_RULE) -> bool:
    tracker = TaintTracker(rule=rule)
    tracker.receive(Source("file", "README.md", item["source"]), this_turn=False)
    return bool(tracker.assess([item["entry"]]).copied)


def test_the_chosen_rule_on_the_labelled_set() -> None:
    """Every copy is caught; of the user's own words only the one that repeats seven words of a
    file's boilerplate is flagged (docs/safety.md "Trust" gives the grid)."""
    items = load()
    assert len({i["lang"] for i in items}) >= 8
    copies = [i for i in items if i["kind"] == "copy"]
    own = [i for i in items if i["kind"] == "own"]
    assert len(copies) >= 25 and len(own) >= 25
    assert [i["note"] for i in copies if not copied(i)] == []
    assert [i["note"] for i in own if copied(i)] == [
        "shares 7 words of boilerplate ('the latest version of the tool installed')"
    ]
    # a longer run misses a copy of a clause's tail; a shorter one flags paraphrases
    assert any(not copied(i, RunRule(16, 8)) for i in copies)
    assert sum(copied(i, RunRule(8, 8)) for i in own) > 1
