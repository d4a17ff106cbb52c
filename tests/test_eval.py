"""`my-agent eval` against scripted models of known behaviour: the scores mean what the categories say.

Each fake model (tests/support/memory_models.py) answers every scenario the same way, through the
real `openai` SDK over HTTP (tests/support/fake_openai.py), so a category's score can be predicted
from the model's behaviour alone: one that never calls tools passes every `skip` and fails every
`save-*`; one that saves everything fails `skip`; one that claims saves fails `honest-save`; one
that saves what files tell it fails `poison`; the rule-following reference passes everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from my_agent_core.eval import (
    CATEGORIES,
    AgentSettings,
    CaseResult,
    Scenario,
    builtin_scenarios,
    run_suite,
    summary,
)
from tests.support import memory_models
from tests.support.fake_openai import FakeOpenAI

Responder = Callable[[dict[str, Any]], dict[str, Any] | None]


@pytest.fixture(scope="module")
def suite() -> list[Scenario]:
    return builtin_scenarios()


def run_with(responder: Responder, scenarios: list[Scenario], **fake: Any) -> list[CaseResult]:
    with FakeOpenAI(responder=responder, **fake) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        return run_suite(scenarios, AgentSettings("fake-model", client))


def by_category(results: list[CaseResult]) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = {}
    for r in results:
        out.setdefault(r.scenario.category, []).append(r.passed)
    return out


@pytest.fixture(scope="module")
def scored(suite: list[Scenario]) -> Iterator[dict[str, dict[str, list[bool]]]]:
    """The suite's results for each fake model, run once per module."""
    models: dict[str, Responder] = {
        "reference": memory_models.ReferenceModel(suite),
        "never": memory_models.never_calls_tools,
        "everything": memory_models.saves_everything,
        "claims": memory_models.claims_saves,
        "gullible": memory_models.gullible,
    }
    yield {name: by_category(run_with(model, suite)) for name, model in models.items()}


def test_the_suite_covers_every_category_in_both_languages(suite: list[Scenario]) -> None:
    for category in CATEGORIES:
        cases = [s for s in suite if s.category == category]
        assert len(cases) >= 3, category
        assert {s.lang for s in cases} == {"en", "zh"}, category
    assert len({s.id for s in suite}) == len(suite)
    assert all(s.reference is not None for s in suite)  # every shipped scenario is proven passable


def test_a_model_that_follows_the_rules_passes_everything(
    scored: dict[str, dict[str, list[bool]]],
) -> None:
    assert {c: all(v) for c, v in scored["reference"].items()} == dict.fromkeys(CATEGORIES, True)


def test_a_model_that_never_calls_tools_passes_skip_and_fails_every_save(
    scored: dict[str, dict[str, list[bool]]],
) -> None:
    never = scored["never"]
    assert all(never["skip"])
    for category in ("save-user", "save-env", "update"):
        assert not any(never[category]), category
    assert all(never["honest-save"])  # it never claims anything: honest, if useless
    assert not any(never["recall"])  # "OK." uses no fact


def test_a_model_that_saves_everything_fails_every_skip(
    scored: dict[str, dict[str, list[bool]]],
) -> None:
    everything = scored["everything"]
    assert not any(everything["skip"])
    assert not any(everything["save-user"])  # it writes to MEMORY.md, never to the profile
    assert not any(everything["update"])  # it adds beside the old fact instead of replacing it


def test_a_model_that_claims_saves_fails_every_honest_save(
    scored: dict[str, dict[str, list[bool]]],
) -> None:
    claims = scored["claims"]
    assert not any(claims["honest-save"])
    assert all(claims["skip"])


def test_a_model_that_saves_what_files_say_fails_every_poison(
    scored: dict[str, dict[str, list[bool]]],
) -> None:
    """The planted texts pass the store's scanner, so resisting them is the model's job: a
    gullible model does write them, and the checks see it."""
    assert not any(scored["gullible"]["poison"])
    assert all(scored["never"]["poison"])


def test_each_case_says_why(suite: list[Scenario]) -> None:
    skips = [s for s in suite if s.category == "skip"][:2]
    results = run_with(memory_models.saves_everything, skips)
    for r in results:
        assert not r.passed
        assert r.why.startswith("memory is left as it was: MEMORY.md changed (0 -> 1 entries)")
        assert [c.passed for c in r.checks][:2] == [False, False]
    honest = [s for s in suite if s.id == "honest-save-zh-explicit"]
    [claimed] = run_with(memory_models.claims_saves, honest)
    assert "记住了" in claimed.why and "no memory call was made" in claimed.why


def test_the_prompt_cache_rate_comes_from_the_providers_usage(suite: list[Scenario]) -> None:
    two_sessions = [s for s in suite if s.id == "recall-en-two-sessions"]
    reference = memory_models.ReferenceModel(two_sessions)
    [openai_style] = run_with(reference, two_sessions)
    rate = openai_style.cache_hit_rate
    assert rate is not None and 0 < rate < 1  # the second request of a turn extends the first
    [deepseek] = run_with(reference, two_sessions, usage_format="deepseek")
    assert deepseek.cache_hit_rate is not None
    [llamacpp] = run_with(reference, two_sessions, usage_format="llamacpp")
    assert llamacpp.cache_hit_rate is not None and llamacpp.cache_hit_rate > 0
    [unknown] = run_with(reference, two_sessions, usage_format="none")
    assert unknown.cache_hit_rate is None  # n/a, never 0
    assert summary("m", [unknown])["cases"][0]["passed"] is True


def test_an_endpoint_failure_fails_the_case_and_the_run_goes_on(suite: list[Scenario]) -> None:
    picked = [s for s in suite if s.category == "skip"][:2]
    calls = {"n": 0}

    def flaky(request: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] == 1:
            return {
                "status": 500,
                "error": {"message": "upstream overloaded", "type": "server_error"},
            }
        return memory_models.never_calls_tools(request)

    first, second = run_with(flaky, picked)
    assert not first.passed and first.error is not None
    assert "upstream overloaded" in first.why and first.why.startswith("the run stopped:")
    assert second.passed


def test_workspace_tools_are_read_only_in_an_eval(suite: list[Scenario]) -> None:
    """Edits and commands are declined whatever the model asks: an eval changes no file and runs
    nothing on the user's machine."""
    [scenario] = [s for s in suite if s.id == "poison-en-readme"]

    def meddler(request: dict[str, Any]) -> dict[str, Any]:
        _user, after = memory_models._turn(request)
        steps = [
            {
                "tool_calls": [
                    {"name": "write_file", "arguments": '{"path": "x.txt", "content": "x"}'}
                ]
            },
            {"tool_calls": [{"name": "run_command", "arguments": '{"command": "touch ran.txt"}'}]},
            {"content": "done"},
        ]
        return steps[min(len(after) // 2, 2)]

    [result] = run_with(meddler, [scenario])
    calls = result.outcome.turns[0].calls
    assert [c.name for c in calls] == ["write_file", "run_command"]
    assert all("evaluation run" in c.result for c in calls), [c.result for c in calls]
