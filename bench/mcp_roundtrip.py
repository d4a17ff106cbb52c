"""`memory` add over MCP stdio, round trip, beside the bare store add of the same run.

The MCP server (`my-agent mcp`, a separate process, the official SDK's client) and a bare
`MemoryStore.add` in this process do the same work on the same kind of folder: lock, re-read,
parse, scan, atomic write, journal. The difference of the medians is what the protocol costs
(JSON-RPC over two pipes, the SDK's dispatch, a thread hop). Target: under 2 ms. Adds and removes
alternate, interleaved between the two, so machine noise hits both alike.

Run: .venv/bin/python bench/mcp_roundtrip.py [--rounds N] [--quick]
(Not `bench/mcp.py`: a script of that name would shadow the SDK's `mcp` package for itself, ruff
and mypy.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

import quick
from my_agent_core.memory import MemoryStore

TARGET_OVERHEAD_MS = 2.0
ENTRIES = [
    f"Fact {i}: `pkg/mod{i}.py` is tested by `uv run pytest tests/test_mod{i}.py -q`."
    for i in range(16)
]
EXTRA = "The user prefers short answers with code first and explanations after."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(rounds: int, tmp: Path) -> dict[str, list[float]]:
    served, bare_dir = tmp / "served", tmp / "bare"
    for folder in (served, bare_dir):
        seed = MemoryStore(folder)
        for entry in ENTRIES:
            seed.add("memory", entry)
        seed.close()
    bare = MemoryStore(bare_dir, author="bench")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "my_agent_core", "mcp", "--dir", str(served)]
    )
    timings: dict[str, list[float]] = {"mcp add": [], "store add": []}
    add = {"target": "memory", "action": "add", "content": EXTRA}
    remove = {"target": "memory", "action": "remove", "old_text": "short answers"}
    async with Client(params, client_info=Implementation(name="bench", version="1")) as client:
        for n in range(rounds + 5):  # the first rounds warm both paths up
            t0 = time.perf_counter()
            result = await client.call_tool("memory", add)
            t1 = time.perf_counter()
            assert not result.is_error, result
            bare.add("memory", EXTRA)
            t2 = time.perf_counter()
            await client.call_tool("memory", remove)
            bare.remove("memory", "short answers")
            if n >= 5:
                timings["mcp add"].append(t1 - t0)
                timings["store add"].append(t2 - t1)
    bare.close()
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = quick.parse(parser, {"rounds": 15})
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        timings = anyio.run(measure, args.rounds, Path(tmp))
    print(f"{'operation':<12}{'median ms':>11}{'p90 ms':>9}{'p99 ms':>9}")
    for name, values in timings.items():
        print(
            f"{name:<12}{statistics.median(values) * 1000:>11.3f}{pct(values, 0.9) * 1000:>9.3f}"
            f"{pct(values, 0.99) * 1000:>9.3f}"
        )
    mcp_ms = statistics.median(timings["mcp add"]) * 1000
    store_ms = statistics.median(timings["store add"]) * 1000
    overhead = mcp_ms - store_ms
    print(
        f"protocol overhead (median mcp - median store): {overhead:.3f} ms = "
        f"{overhead / TARGET_OVERHEAD_MS:.2f}x the {TARGET_OVERHEAD_MS:.0f} ms target; "
        f"mcp/store = {mcp_ms / store_ms:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
