"""Benchmark the agent loop against a zero-latency local endpoint (tests/support/fake_openai.py).

Why: the agent's own cost per model step (stream assembly, worker thread, events, history) must stay
small next to a bare SDK call of the same request, and every request of a long session with memory
writes must extend the previous one byte for byte (prefix-cache stability, target 100%).

Run: .venv/bin/python bench/agent.py [--rounds N] [--turns N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "server")]

import openai  # noqa: E402
from tests.support.fake_openai import FakeOpenAI, prefix_extension_problem  # noqa: E402

from my_agent_core.agent import Agent  # noqa: E402
from my_agent_core.tools import tool  # noqa: E402

REPLY = "The tests run with vitest; the CI job is defined in .github/workflows/ci.yml. " * 3


@tool
def read_file(path: str) -> str:
    """Read a file (benchmark stub)."""
    return f"contents of {path}"


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"p50 {p50 * 1e3:.3f} ms, p90 {p90 * 1e3:.3f} ms"


@contextlib.contextmanager
def _server_process(script: dict[str, Any]) -> Iterator[str]:
    """The fake endpoint in its own process (a real endpoint never shares our GIL)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/support/fake_openai.py"), "--script", str(path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            yield process.stdout.readline().strip()
        finally:
            process.terminate()
            process.wait(10)


def _server_times(base_url: str) -> list[float]:
    root = base_url.removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/_fake/requests") as answer:
        records = json.load(answer)
    return [r["handled_seconds"] or 0.0 for r in records if r["path"].endswith("/chat/completions")]


def bench_overhead(rounds: int, in_process: bool) -> dict[str, float]:
    """Per-step wall time of agent.run vs a bare streaming SDK call of the same request."""
    script = {"default": {"content": REPLY}}
    with contextlib.ExitStack() as stack:
        if in_process:
            fake = stack.enter_context(FakeOpenAI(script))
            base_url = fake.base_url
        else:
            base_url = stack.enter_context(_server_process(script))
        client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
        events: list[dict[str, Any]] = []
        agent = Agent(
            model="m", client=client, memory_dir=False, tools=[read_file], on_event=events.append
        )
        kwargs: dict[str, Any] = {
            "model": "m",
            "messages": [
                {"role": "system", "content": agent.system_prompt},
                {"role": "user", "content": "How do the tests run?"},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": [t.schema for t in agent.tools],
        }

        def bare() -> None:
            text = []
            for chunk in client.chat.completions.create(**kwargs):
                if chunk.choices and chunk.choices[0].delta.content:
                    text.append(chunk.choices[0].delta.content)
            assert "".join(text) == REPLY

        def with_agent() -> None:
            agent.reset()
            events.clear()
            assert agent.run("How do the tests run?") == REPLY

        warmup = 20
        for _ in range(warmup):  # connections, imports, caches
            bare()
            with_agent()
        walls: dict[str, list[float]] = {"bare": [], "agent": []}
        cpu: dict[str, list[float]] = {"bare": [], "agent": []}
        for _ in range(rounds):  # interleaved, so drift affects both equally
            for name, fn in (("bare", bare), ("agent", with_agent)):
                start, start_cpu = time.perf_counter(), time.process_time()
                fn()
                walls[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
        server = _server_times(base_url)[2 * warmup :]
    client_side = {
        "bare": [w - s for w, s in zip(walls["bare"], server[0::2], strict=False)],
        "agent": [w - s for w, s in zip(walls["agent"], server[1::2], strict=False)],
    }
    bare_p50 = statistics.median(walls["bare"])
    agent_p50 = statistics.median(walls["agent"])
    where = "in-process server" if in_process else "server in its own process"
    print(
        f"== per-step overhead, {where} ({rounds} rounds, {len(REPLY)}-char reply, 8-char deltas)"
    )
    print(f"bare SDK stream         : {_percentiles(walls['bare'])}")
    print(f"agent.run (1 step)      : {_percentiles(walls['agent'])}")
    print(
        f"wall minus server time  : bare {statistics.median(client_side['bare']) * 1e3:.3f} ms, "
        f"agent {statistics.median(client_side['agent']) * 1e3:.3f} ms"
    )
    if not in_process:  # process CPU time = client-side work only (robust to scheduling noise)
        bare_cpu, agent_cpu = statistics.mean(cpu["bare"]), statistics.mean(cpu["agent"])
        print(
            f"client CPU time (mean)  : bare {bare_cpu * 1e3:.3f} ms, agent {agent_cpu * 1e3:.3f} ms "
            f"(+{(agent_cpu - bare_cpu) * 1e3:.3f} ms, ratio {agent_cpu / bare_cpu:.2f})"
        )
    overhead = agent_p50 - bare_p50
    print(
        f"agent overhead per step : {overhead * 1e3:.3f} ms; ratio agent/bare = "
        f"{agent_p50 / bare_p50:.2f}"
    )
    return {"bare_p50": bare_p50, "agent_p50": agent_p50, "ratio": agent_p50 / bare_p50}


def bench_prefix_stability(turns: int) -> float:
    """Share of consecutive requests in a long session that extend the previous one byte for byte."""
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        agent = Agent(model="m", client=client, memory_dir=Path(tmp) / "mem", tools=[read_file])
        for turn in range(turns):
            fake.add(
                {
                    "tool_calls": [
                        {
                            "name": "memory",
                            "arguments": {
                                "target": "memory" if turn % 2 else "user",
                                "action": "add",
                                "content": f"Fact {turn}: the build uses make target t{turn} — ok ✓",
                            },
                        },
                        {"name": "read_file", "arguments": {"path": f"src/m{turn}.py"}},
                    ]
                },
                {"content": f"Turn {turn} done."},
            )
            if turn % 7 == 6:  # a failing memory call now and then (old_text not found)
                fake.add(
                    {
                        "tool_calls": [
                            {
                                "name": "memory",
                                "arguments": {
                                    "target": "memory",
                                    "action": "remove",
                                    "old_text": "nope",
                                },
                            }
                        ]
                    },
                    {"content": "Could not remove it."},
                )
            agent.run(f"turn {turn}")
            if turn % 7 == 6:
                agent.run(f"remove something {turn}")
        bodies = [r.body for r in fake.completion_requests]
        pairs = len(bodies) - 1
        good = sum(
            prefix_extension_problem(bodies[i - 1], bodies[i]) is None
            for i in range(1, len(bodies))
        )
        usage = agent.usage
        print(f"== prefix stability ({turns} turns with memory writes, {len(bodies)} requests)")
        print(
            f"requests extending the previous one byte for byte: {good}/{pairs} = {good / pairs:.1%}"
        )
        print(
            f"fake-provider cache hit rate (cached/prompt tokens): {usage.cache_hit_rate:.1%} "
            f"({usage.cached_tokens}/{usage.prompt_tokens})"
        )
        print(f"system prompt unchanged all session: {bodies[0][:2000] == bodies[-1][:2000]}")
        return good / pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    bench_overhead(args.rounds, in_process=False)
    bench_overhead(args.rounds, in_process=True)
    ratio = bench_prefix_stability(args.turns)
    return 0 if ratio == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
