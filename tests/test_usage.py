"""The cache meter tells the truth: every provider's usage fields (OpenAI, DeepSeek, llama.cpp, none)
over real HTTP, `None` (never 0) when nothing is reported, and why a cached share dropped:
a compaction, a model change, a resume after the cache expired, a resume on a cold cache."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import openai
import pytest

from my_agent_core.agent import Agent, CachePolicy, SessionStore
from my_agent_core.agent.usage import CacheMeter, LastRequest, RequestUsage, Usage, read_usage
from tests.support.fake_openai import FakeOpenAI, prompt_bytes
from tests.support.fixtures import *  # noqa: F403
from tests.test_compaction import PAD, Model

POLICY = CachePolicy(min_tokens=0)


def usages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "usage"]


def _shared(a: bytes, b: bytes) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))


def provider_cache(bodies: list[bytes], number: int) -> int:
    """What the fake provider caches for request `number`: its longest common prompt prefix with
    an earlier request, in tokens (see fake_openai.py)."""
    prompt = prompt_bytes(bodies[number])
    common = max((_shared(prompt, prompt_bytes(b)) for b in bodies[:number]), default=0)
    return min(common // 4, math.ceil(len(prompt) / 4))


@pytest.mark.parametrize("flavour", ["openai", "deepseek", "llamacpp", "none"])
def test_every_usage_flavour_reaches_the_meter(fake, client, events, flavour) -> None:
    fake.usage_format = flavour
    fake.responder = Model()
    agent = Agent(
        model="m", client=client, memory_dir=False, on_event=events.append, cache_policy=POLICY
    )
    for number in range(3):
        agent.run(f"turn {number}: {PAD}")
    bodies = [r.body for r in fake.completion_requests]
    reported = usages(events)
    assert [e["prompt_tokens"] for e in reported] == [fake.prompt_tokens(b) for b in bodies]
    cached = [e["cached_tokens"] for e in reported]
    truth = [provider_cache(bodies, n) for n in range(len(bodies))]
    if flavour == "none":
        assert cached == [None, None, None]
        assert agent.usage.cached_tokens is None and agent.usage.cache_hit_rate is None
        done = events[-1]["usage"]
        assert done["cached_tokens"] is None and done["cache_hit_rate"] is None
        return
    expected = [t // 64 * 64 for t in truth] if flavour == "deepseek" else truth
    assert cached == expected and cached[2] > 0
    assert agent.usage.cached_tokens == sum(expected)
    assert agent.usage.cache_hit_rate == sum(expected) / sum(e["prompt_tokens"] for e in reported)
    assert not any("cache_drop" in e for e in reported)  # a steady session drops nothing
    assert events[-1]["usage"]["cache_hit_rate"] == agent.usage.cache_hit_rate


def test_no_usage_at_all_counts_requests_and_knows_nothing(fake, client, events) -> None:
    fake.add({"content": "a", "usage": None})
    agent = Agent(model="m", client=client, memory_dir=False, on_event=events.append)
    agent.run("hi")
    assert usages(events) == []
    assert agent.usage.requests == 1 and agent.usage.cached_tokens is None
    assert events[-1]["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": None,
        "requests": 1,
        "cache_hit_rate": None,
    }


def test_read_usage_takes_whatever_the_provider_filled() -> None:
    assert read_usage(None) is None
    openai_usage = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 64},
    }
    assert read_usage(openai_usage) == RequestUsage(100, 5, 64, "openai")
    deepseek = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 36,
    }
    assert read_usage(deepseek) == RequestUsage(100, 5, 64, "deepseek")
    no_total = {
        "completion_tokens": 5,
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 36,
    }
    assert read_usage(no_total) == RequestUsage(100, 5, 64, "deepseek")
    plain = {"prompt_tokens": 100, "completion_tokens": 5}
    assert read_usage(plain, {"cache_n": 80, "prompt_n": 20}) == RequestUsage(
        100, 5, 80, "llamacpp"
    )
    assert read_usage(None, {"cache_n": 80, "prompt_n": 20}) == RequestUsage(100, 0, 80, "llamacpp")
    assert read_usage(plain) == RequestUsage(100, 5, None, "none")
    # Junk from a provider never becomes a figure.
    junk = {
        "prompt_tokens": True,
        "completion_tokens": "5",
        "prompt_tokens_details": {"cached_tokens": -3},
    }
    assert read_usage(junk) == RequestUsage(0, 0, 0, "openai")
    assert (
        read_usage(
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 99}}
        ).cached_tokens
        == 10
    )


def test_the_meter_explains_drops() -> None:
    policy = CachePolicy(ttl_s=300, min_tokens=1024)
    meter = CacheMeter(policy)
    assert meter.observe(RequestUsage(5000, 1, 0, "openai"), "m", 0.0) is None  # cold start
    assert (
        meter.observe(RequestUsage(5200, 1, 4992, "openai"), "m", 10.0) is None
    )  # 128-token blocks
    drop = meter.observe(RequestUsage(5400, 1, 0, "openai"), "m", 20.0)
    assert drop is not None and (drop.reason, drop.expected, drop.got) == ("unknown", 5200, 0)
    assert meter.observe(RequestUsage(5600, 1, 0, "openai"), "m", 400.0).reason == "expired"
    assert (
        meter.observe(RequestUsage(5800, 1, 0, "openai"), "other", 410.0).reason == "model_change"
    )
    meter.note_compaction()
    assert (
        meter.observe(RequestUsage(2000, 1, 900, "openai"), "other", 420.0).reason == "compaction"
    )
    assert meter.observe(RequestUsage(2100, 1, None, "none"), "other", 430.0) is None  # unknown
    small = CacheMeter(policy, LastRequest(0.0, 800, "m"), resumed=True)
    assert (
        small.observe(RequestUsage(900, 1, 0, "openai"), "m", 1.0) is None
    )  # below OpenAI's floor
    resumed = CacheMeter(policy, LastRequest(0.0, 3000, "m"), resumed=True)
    assert resumed.observe(RequestUsage(3100, 1, 0, "openai"), "m", 60.0).reason == "resume"


def test_a_compaction_shows_as_a_cache_drop(fake, client, events) -> None:
    fake.responder = Model()
    agent = Agent(
        model="m", client=client, memory_dir=False, on_event=events.append, cache_policy=POLICY
    )
    for number in range(4):
        agent.run(f"turn {number}: {PAD}")
    agent.compact()
    agent.run("after")
    drops = [e["cache_drop"] for e in usages(events) if "cache_drop" in e]
    assert [d["reason"] for d in drops] == ["compaction"]
    assert drops[0]["got"] < drops[0]["expected"]
    assert agent.usage.cache_drops[0].reason == "compaction"


def _session(fake: FakeOpenAI, folder: Path, clock: list[float]) -> tuple[SessionStore, str]:
    client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    store = SessionStore(folder)
    fake.responder = Model()
    agent = Agent(
        model="m",
        client=client,
        memory_dir=False,
        sessions=store,
        cache_policy=POLICY,
        clock=lambda: clock[0],
    )
    for number in range(3):
        agent.run(f"turn {number}: {PAD}")
    agent.close()
    return store, agent.session_id


@pytest.mark.parametrize(
    ("elapsed", "model", "reason"),
    [(3600.0, "m", "expired"), (30.0, "m", "resume"), (30.0, "bigger-model", "model_change")],
)
def test_a_resume_on_a_cold_cache_says_why(fake, tmp_path, elapsed, model, reason) -> None:
    clock = [1_800_000_000.0]
    store, session_id = _session(fake, tmp_path, clock)
    before = Usage.from_totals(store.load(session_id).usage)
    clock[0] += elapsed
    events: list[dict[str, Any]] = []
    with FakeOpenAI(responder=Model()) as restarted:  # another process: its cache is empty
        client = openai.OpenAI(base_url=restarted.base_url, api_key="k", max_retries=0)
        resumed = Agent.resume(
            store.load(session_id),
            sessions=store,
            client=client,
            model=model,
            on_event=events.append,
            cache_policy=POLICY,
            clock=lambda: clock[0],
        )
        resumed.run("after the restart")
        resumed.run("and once more")
    first, second = usages(events)
    assert first["cache_drop"]["reason"] == reason and first["cache_drop"]["got"] == 0
    assert "cache_drop" not in second  # warm again
    # The meter continues the session's totals across the restart.
    assert resumed.usage.requests == before.requests + 2
    assert (
        resumed.usage.prompt_tokens
        == before.prompt_tokens + first["prompt_tokens"] + second["prompt_tokens"]
    )


def test_a_resume_on_the_same_warm_provider_drops_nothing(fake, tmp_path) -> None:
    clock = [1_800_000_000.0]
    store, session_id = _session(fake, tmp_path, clock)
    clock[0] += 30
    events: list[dict[str, Any]] = []
    client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
    resumed = Agent.resume(
        store.load(session_id),
        sessions=store,
        client=client,
        on_event=events.append,
        cache_policy=POLICY,
        clock=lambda: clock[0],
    )
    resumed.run("after the reload")
    (usage,) = usages(events)
    assert "cache_drop" not in usage and usage["cached_tokens"] > 0
