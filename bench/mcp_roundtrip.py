"""`memory` add over MCP stdio, round trip, beside the bare store add of the same run.

The MCP server (`my-agent mcp`, a separate process, the official SDK's client) and a bare
`MemoryStore.add` in this process do the same work on the same kind of folder: lock, re-read,
parse, scan, atomic write, journal, and the archive of what a remove takes out. The difference of the medians is what the protocol costs
(JSON-RPC over two pipes, the SDK's dispatch; the tool runs inline on the server's event loop, no
thread hop). Target: at most 1 ms. Adds and removes alternate, interleaved between the two, so
machine noise hits both alike. The served folder is a workspace's, with the default archive
provider, as a client configures it.

On a loaded machine the wall-clock medians carry the scheduler's and the disk's noise (two processes
must each get a core per call; an fsync waits on other jobs' writes), so two more figures are
printed: the same comparison for a call that does the store's work without the disk (a remove whose
text matches no entry: lock, read, parse, match, the listing in the error), and the CPU time per
write of the client and the server (from `/proc`) beside the bare store's.

Run: .venv/bin/python bench/mcp_roundtrip.py [--rounds N] [--quick]
(Not `bench/mcp.py`: a script of that name would shadow the SDK's `mcp` package for itself, ruff
and mypy.)
"""

from __future__ import annotations

import argparse
import os
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
from my_agent_core.memory import MemoryStore, make_memory_tool
from my_agent_core.memory.providers import ProviderContext, build_manager

TARGET_OVERHEAD_MS = 1.0
SERVER_DIR = Path(__file__).resolve().parents[1] / "server"
ENTRIES = [
    f"Fact {i}: `pkg/mod{i}.py` is tested by `uv run pytest tests/test_mod{i}.py -q`."
    for i in range(16)
]
EXTRA = "The user prefers short answers with code first and explanations after."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux `/proc/PID/stat`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _server_pid() -> int | None:
    """The MCP server: this process's child (the SDK does not expose it)."""
    for task in Path("/proc/self/task").iterdir():
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    return None


async def measure(rounds: int, tmp: Path) -> tuple[dict[str, list[float]], dict[str, float]]:
    served = tmp / "ws" / ".my_agent_core" / "memory"
    bare_dir = tmp / "bare" / ".my_agent_core" / "memory"
    for folder in (served, bare_dir):
        seed = MemoryStore(folder)
        for entry in ENTRIES:
            seed.add("memory", entry)
        seed.close()
    # the bare store archives what a remove takes out, as the served one does
    archive = build_manager(ProviderContext(bare_dir.parent.parent))
    bare = MemoryStore(bare_dir, author="bench", on_write=archive.memory_write_listener())
    params = StdioServerParameters(  # the server imports this checkout, as the bench does
        command=sys.executable,
        args=["-m", "my_agent_core", "mcp", "--dir", str(served)],
        env={
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(SERVER_DIR), os.environ.get("PYTHONPATH")])
            )
        },
    )
    timings: dict[str, list[float]] = {
        "mcp add": [],
        "store add": [],
        "mcp miss": [],
        "store miss": [],
    }
    miss = {"target": "memory", "action": "remove", "old_text": "no entry says this"}
    bare_tool = make_memory_tool(bare)
    cpu = {"client": 0.0, "bare": 0.0, "server": 0.0}
    add = {"target": "memory", "action": "add", "content": EXTRA}
    remove = {"target": "memory", "action": "remove", "old_text": "short answers"}
    async with Client(params, client_info=Implementation(name="bench", version="1")) as client:
        server = _server_pid()
        server_start = 0.0
        for n in range(rounds + 5):  # the first rounds warm both paths up
            if n == 5 and server is not None:
                server_start = _cpu_seconds(server)
            c0 = time.process_time()
            t0 = time.perf_counter()
            result = await client.call_tool("memory", add)
            t1 = time.perf_counter()
            c1 = time.process_time()
            assert not result.is_error, result
            bare.add("memory", EXTRA)
            t2 = time.perf_counter()
            c2 = time.process_time()
            await client.call_tool("memory", remove)
            c3 = time.process_time()
            bare.remove("memory", "short answers")
            c4 = time.process_time()
            t3 = time.perf_counter()
            refused = await client.call_tool("memory", miss)
            t4 = time.perf_counter()
            c5 = time.process_time()
            assert refused.is_error
            bare_tool.execute(miss)
            t5 = time.perf_counter()
            c6 = time.process_time()
            if n >= 5:
                timings["mcp miss"].append(t4 - t3)
                timings["store miss"].append(t5 - t4)
                timings["mcp add"].append(t1 - t0)
                timings["store add"].append(t2 - t1)
                cpu["client"] += (c1 - c0) + (c3 - c2) + (c5 - c4)
                cpu["bare"] += (c2 - c1) + (c4 - c3) + (c6 - c5)
        if server is not None:
            cpu["server"] = _cpu_seconds(server) - server_start
    bare.close()
    archive.shutdown()
    return timings, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = quick.parse(parser, {"rounds": 20})
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        timings, cpu = anyio.run(measure, args.rounds, Path(tmp))
    print(f"{'operation':<12}{'median ms':>11}{'p90 ms':>9}{'p99 ms':>9}")
    for name, values in timings.items():
        print(
            f"{name:<12}{statistics.median(values) * 1000:>11.3f}{pct(values, 0.9) * 1000:>9.3f}"
            f"{pct(values, 0.99) * 1000:>9.3f}"
        )
    miss_overhead = (
        statistics.median(timings["mcp miss"]) - statistics.median(timings["store miss"])
    ) * 1000
    print(f"MCP call overhead without the disk (a remove matching nothing): {miss_overhead:.3f} ms")
    mcp_ms = statistics.median(timings["mcp add"]) * 1000
    store_ms = statistics.median(timings["store add"]) * 1000
    overhead = mcp_ms - store_ms
    print(
        f"MCP write overhead (median mcp - median store): {overhead:.3f} ms "
        f"(goal <= {TARGET_OVERHEAD_MS:.0f} ms: {'met' if overhead <= TARGET_OVERHEAD_MS else 'NOT met'}); "
        f"mcp/store = {mcp_ms / store_ms:.2f}x"
    )
    calls = 3 * args.rounds  # an add, a remove and a refused remove per round
    if cpu["server"] > 0:
        mcp_cpu = (cpu["client"] + cpu["server"]) / calls * 1000
        bare_cpu = cpu["bare"] / calls * 1000
        print(
            f"CPU per call: mcp {mcp_cpu:.3f} ms (client {cpu['client'] / calls * 1000:.3f} + "
            f"server {cpu['server'] / calls * 1000:.3f}), store {bare_cpu:.3f} ms; "
            f"protocol CPU overhead {mcp_cpu - bare_cpu:.3f} ms (server clock ticks: "
            f"{1000 / os.sysconf('SC_CLK_TCK'):.0f} ms, summed over {calls} calls)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
