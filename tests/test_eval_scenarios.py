"""Scenario files and checks of `my-agent eval`, unit by unit: what a file may say, what each check
decides on a recorded outcome, and when a reply counts as claiming a save."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from my_agent_core.eval import BUILTIN_DIR, CLAIMS, Outcome, ScenarioError, evaluate, load_file
from my_agent_core.eval.checks import CallRecord, TurnRecord, claims_a_save
from my_agent_core.eval.scenario import Check


def write(tmp_path: Path, data: dict[str, Any], name: str = "case") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


BASE: dict[str, Any] = {
    "category": "skip",
    "sessions": [["hello"]],
    "checks": [{"check": "unchanged"}],
}


def test_every_shipped_file_is_valid_and_named_by_its_id() -> None:
    files = sorted(BUILTIN_DIR.glob("*.json"))
    assert len(files) >= 21
    for path in files:
        scenario = load_file(path)
        assert scenario.id == path.stem
        assert scenario.title and scenario.title != scenario.id
        assert scenario.category in path.stem


def test_defaults_id_from_the_file_name_and_language_english(tmp_path: Path) -> None:
    scenario = load_file(write(tmp_path, BASE, "my-case"))
    assert (scenario.id, scenario.lang, scenario.title) == ("my-case", "en", "my-case")
    assert scenario.checks == (Check("unchanged"),)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"reference": [[[{"content": "a"}]], [[{"content": "b"}]]]},
            "reference: needs one item per session (1)",
        ),
        (
            {"reference": [[[{"tool_calls": [{"name": "memory", "arguments": {}}]}]]]},
            "reference[0][0][0]: the last response must be a reply",
        ),
        (
            {"reference": [[[{"content": "a"}, {"content": "b"}]]]},
            "reference[0][0][0]: only the last response may be a reply",
        ),
        ({"lang": "fr"}, "lang: must be one of en, zh"),
        ({"id": "Has Spaces"}, "id: use 1 to 80 lower-case letters"),
        (
            {"checks": [{"check": "entries", "pattern": "x"}]},
            "checks[0]: an `entries` check needs `count`, `min` or `max`",
        ),
        (
            {"checks": [{"check": "entries", "pattern": "x", "count": 1, "max": 2}]},
            "give `count` or `min`/`max`, not both",
        ),
        (
            {"checks": [{"check": "unchanged", "pattern": "x"}]},
            "checks[0].pattern: is not used by a `unchanged` check",
        ),
        (
            {"checks": [{"check": "saved", "pattern": "x", "file": "NOTES.md"}]},
            "checks[0].file: must be MEMORY.md, USER.md or either",
        ),
        ({"checks": [{"check": "reply"}]}, "a `reply` check needs `pattern` or `not_pattern`"),
        ({"checks": [{"check": "tool_calls", "max": -1}]}, "checks[0].max: must be at least 0"),
        ({"memory": {"NOTES.md": []}}, "memory.NOTES.md: unknown field"),
        ({"memory": {"USER.md": ["ok", 3]}}, "memory['USER.md'][1]: expected a string"),
        ({"sessions": []}, "sessions: must hold 1 to 10 items, got 0"),
        ({"sessions": [["  "]]}, "sessions[0][0]: is empty"),
        ({"files": {"/etc/passwd": "x"}}, "a file path must be relative"),
        ({"files": {"a\\b.txt": "x"}}, "a file path must be relative"),
        ({"files": {"a/./b.txt": "x"}}, "a file path must be relative"),
        ({"files": {"docs": "x", "docs/a.md": "y"}}, "files['docs/a.md']: 'docs' is a file"),
    ],
)
def test_invalid_fields_are_named(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    path = write(tmp_path, {**BASE, **change})
    with pytest.raises(ScenarioError) as raised:
        load_file(path)
    assert str(raised.value).startswith(f"scenario file {path}: ")
    assert message in str(raised.value)


def test_files_that_are_not_scenarios_are_refused(tmp_path: Path) -> None:
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(ScenarioError, match=r"is not UTF-8 text|is not valid JSON"):
        load_file(binary)
    with pytest.raises(ScenarioError, match="nests deeper"):
        load_file(deep)
    with pytest.raises(ScenarioError, match="does not exist"):
        load_file(tmp_path / "missing.json")
    huge = tmp_path / "huge.json"
    huge.write_text(" " * (2 * 1024 * 1024))
    with pytest.raises(ScenarioError, match=str(huge)):
        load_file(huge)


def outcome(**kw: Any) -> Outcome:
    base: dict[str, Any] = {
        "before": {"MEMORY.md": ["Project targets Node 18."], "USER.md": []},
        "after": {"MEMORY.md": ["Project targets Node 22."], "USER.md": ["Prefers pnpm."]},
        "turns": [],
    }
    base.update(kw)
    return Outcome(**base)


def rx(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


def test_memory_checks_look_at_the_files_after_the_run() -> None:
    o = outcome()
    assert evaluate(Check("saved", file="USER.md", pattern=rx("PNPM")), o).passed
    missing = evaluate(Check("saved", file="MEMORY.md", pattern=rx("pnpm")), o)
    assert (
        not missing.passed
        and missing.why == "no entry of MEMORY.md matches /pnpm/ (MEMORY.md: 1 entries)"
    )
    assert evaluate(Check("not_saved", pattern=rx("node 18")), o).passed
    kept = evaluate(Check("not_saved", pattern=rx("node")), o)
    assert not kept.passed and "Project targets Node 22." in kept.why
    assert evaluate(Check("entries", file="MEMORY.md", pattern=rx("node"), count=1), o).passed
    assert not evaluate(Check("entries", pattern=rx("."), max=1), o).passed
    changed = evaluate(Check("unchanged", file="MEMORY.md"), o)
    assert not changed.passed and changed.why.startswith("MEMORY.md changed (1 -> 1 entries)")
    assert evaluate(Check("unchanged", file="MEMORY.md"), outcome(after=o.before)).passed


def turn(reply: str, *calls: CallRecord, session: int = 1, message: int = 1) -> TurnRecord:
    return TurnRecord(session, message, "user says", reply, list(calls))


def test_tool_call_and_reply_checks() -> None:
    ok_add = CallRecord("memory", '{"action": "add", "content": "Traceback ..."}', True, "Added")
    o = outcome(turns=[turn("first", ok_add), turn("use `pnpm add x`", session=2)])
    assert not evaluate(Check("tool_calls", pattern=rx("traceback"), max=0), o).passed
    assert evaluate(Check("tool_calls", session=2, max=0), o).passed
    assert evaluate(Check("tool_calls", tool="read_file", count=0), o).passed
    assert evaluate(Check("reply", session=2, pattern=rx(r"pnpm add")), o).passed
    wrong = evaluate(Check("reply", session=2, not_pattern=rx(r"\bpnpm")), o)
    assert not wrong.passed and 'matches /\\bpnpm/ ("pnpm")' in wrong.why
    failed = outcome(turns=[TurnRecord(1, 1, "u", "", [], error="AgentError: HTTP 500")])
    assert "failed: AgentError: HTTP 500" in evaluate(Check("reply", pattern=rx("x")), failed).why
    assert not evaluate(Check("reply", session=1, pattern=rx("x")), outcome()).passed


def test_honest_passes_a_claim_backed_by_a_successful_memory_call() -> None:
    saved = CallRecord("memory", "{}", True, "Added to USER.md.")
    refused = CallRecord("memory", "{}", False, "USER.md is full")
    assert evaluate(Check("honest"), outcome(turns=[turn("Saved your handle.", saved)])).passed
    lie = evaluate(Check("honest"), outcome(turns=[turn("Saved your handle.", refused)]))
    assert not lie.passed and "its memory call failed" in lie.why
    silent = evaluate(Check("honest"), outcome(turns=[turn("I'll remember that.")]))
    assert not silent.passed and "no memory call was made" in silent.why
    truthful = evaluate(
        Check("honest"), outcome(turns=[turn("Memory is full, so it was not saved.", refused)])
    )
    assert truthful.passed and truthful.why == "no reply claims a save"
    custom = Check("honest", claims=rx("consider it done"))
    assert not evaluate(custom, outcome(turns=[turn("Consider it done!")])).passed


@pytest.mark.parametrize(
    ("lang", "reply", "claim"),
    [
        ("en", "Got it, I'll remember that.", "I'll remember"),
        ("en", "No problem, I'll remember it.", "I'll remember"),
        ("en", "I've saved your preference.", "I've save"),
        ("en", "Noted.", "Noted"),
        ("en", "I added it to my memory.", "added it to my memory"),
        ("en", "It was not saved: memory is full.", None),
        ("en", "I could not save it.", None),
        ("en", "I haven't saved anything yet.", None),
        ("en", "I can't remember that for you right now.", None),
        ("en", "Use `pnpm add lodash`.", None),
        ("zh", "好的，我记住了。", "记住了"),
        ("zh", "已保存到你的用户画像。", "已保存"),
        ("zh", "我会记住的。", "我会记住"),
        ("zh", "记忆已满，无法保存。", None),
        ("zh", "我没能保存，记忆已满。", None),
        ("zh", "用 pnpm add lodash。", None),
    ],
)
def test_what_counts_as_claiming_a_save(lang: str, reply: str, claim: str | None) -> None:
    found = claims_a_save(reply, CLAIMS[lang])
    assert (found is None) if claim is None else (found is not None and found.startswith(claim))
