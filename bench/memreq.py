"""The agent-facing memory requests over the real language server, beside the bare calls of the run.

- `myAgent/memory/tool` (the VS Code language-model tool's path): an add and a remove through the
  server (`python -m my_agent_core serve`, real stdio) beside the same `make_memory_tool(...).execute`
  in this process on a twin folder. The difference of the medians is what the request adds: JSON-RPC
  over two pipes, a thread hop, the `memory/state` of the answer, the `memory/changed`
  announcement, and for a remove the archiving of the entry it took out. Target: under 3 ms.
- `myAgent/recall/search` (the Recall view): a query over a folder's archive of `--items` turns,
  through the server, beside `open_archive(folder).search_items` of the same query in this
  process. Target: the request within 2 ms of the bare search.

Calls alternate between the two paths so machine noise hits both alike; the first rounds warm up.
The bench's client keeps the answers as parsed JSON, as the editor's `JSON.parse` does: pygls' own
client would also turn every object of an answer into a Python object, about 2 ms for a 25-item
search, which is the client's cost, not the server's.

Run: .venv/bin/python bench/memreq.py [--rounds 200] [--items 5000] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCResponseMessage

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

import quick  # noqa: E402
from my_agent_core.memory import make_memory_tool, open_store  # noqa: E402
from my_agent_core.memory.providers.archive import open_archive  # noqa: E402

SERVER = [sys.executable, "-m", "my_agent_core", "serve"]
TOOL_TARGET_MS = 3.0
SEARCH_TARGET_MS = 2.0
WARMUP = 5
ENTRIES = [
    f"Fact {i}: `pkg/mod{i}.py` is tested by `uv run pytest tests/test_mod{i}.py -q`."
    for i in range(16)
]
EXTRA = "The user prefers short answers with code first and explanations after."
TOPICS = [
    "billing",
    "search",
    "deploy",
    "kafka",
    "postgres",
    "redis",
    "auth",
    "cache",
    "queue",
    "invoices",
    "schema",
    "ci",
]
QUERIES = ["kafka billing queue", "postgres schema migration", "deploy cache redis", "auth ci"]


def workspace(root: Path, name: str) -> Path:
    folder = root / name
    store = open_store(folder)
    for entry in ENTRIES:
        store.add("memory", entry)
    store.close()
    return folder


def fill_archive(folder: Path, items: int) -> None:
    rng = random.Random(7)
    archive = open_archive(folder)
    for n in range(items):
        words = " ".join(rng.choice(TOPICS) for _ in range(12))
        archive.sync_turn(f"question {n} about {words}", f"answer {n}: {words} done")
    archive.shutdown()


def keep_answers_as_json(client: LanguageClient) -> None:
    """Answers reach the caller as plain JSON (dicts and lists), errors as pygls raises them."""
    structure = client.protocol.structure_message

    def raw(data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and "id" in data and "result" in data and "method" not in data:
            client.protocol._result_types.pop(data["id"], None)
            return JsonRPCResponseMessage(
                id=data["id"], jsonrpc=data["jsonrpc"], result=data["result"]
            )
        return structure(data)

    client.protocol.structure_message = raw  # type: ignore[method-assign]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(rounds: int, items: int, tmp: Path) -> dict[str, list[float]]:
    served, twin = workspace(tmp, "served"), workspace(tmp, "twin")
    fill_archive(served, items)
    bare_tool = make_memory_tool(open_store(twin, author="bench"))
    bare_archive = open_archive(served)
    client = LanguageClient("bench", "1")
    announced: list[object] = []

    @client.feature("myAgent/memory/changed")
    def changed(params: Any) -> None:  # every write is announced
        announced.append(params)

    await client.start_io(*SERVER)
    keep_answers_as_json(client)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=served.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=served.as_uri(), name=served.name)],
        )
    )
    client.initialized(types.InitializedParams())
    add = {"target": "memory", "action": "add", "content": EXTRA}
    remove = {"target": "memory", "action": "remove", "old_text": "short answers"}
    timings: dict[str, list[float]] = {
        k: []
        for k in (
            "tool add",
            "bare add",
            "tool remove",
            "bare remove",
            "recall search",
            "bare search",
        )
    }

    async def call(method: str, params: dict[str, Any]) -> Any:
        return await client.protocol.send_request_async(method, params)

    try:
        for n in range(rounds + WARMUP):
            keep = n >= WARMUP
            for name, arguments in (("add", add), ("remove", remove)):
                t0 = time.perf_counter()
                result = await call(
                    "myAgent/memory/tool", {"folder": served.as_uri(), "arguments": arguments}
                )
                t1 = time.perf_counter()
                assert result["ok"], result
                assert bare_tool.execute(arguments).ok
                t2 = time.perf_counter()
                if keep:
                    timings[f"tool {name}"].append((t1 - t0) * 1000)
                    timings[f"bare {name}"].append((t2 - t1) * 1000)
            query = QUERIES[n % len(QUERIES)]
            t0 = time.perf_counter()
            found = await call("myAgent/recall/search", {"folder": served.as_uri(), "query": query})
            t1 = time.perf_counter()
            bare = bare_archive.search_items(query, 25)
            t2 = time.perf_counter()
            assert len(found["items"]) == len(bare) > 0, (len(found["items"]), len(bare))
            if keep:
                timings["recall search"].append((t1 - t0) * 1000)
                timings["bare search"].append((t2 - t1) * 1000)
        assert len(announced) >= 2 * rounds, len(announced)
    finally:
        bare_archive.shutdown()
        await asyncio.wait_for(client.shutdown_async(None), 10)
        client.exit(None)
        await client.stop()
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--items", type=int, default=5000, help="archived turns searched")
    args = quick.parse(parser, {"rounds": 10, "items": 200})
    with tempfile.TemporaryDirectory(prefix="bench-memreq-") as tmp:
        timings = asyncio.run(measure(args.rounds, args.items, Path(tmp)))
    medians = {k: statistics.median(v) for k, v in timings.items()}
    print(f"{args.rounds} rounds, {args.items} archived turns (ms: p50 / p90)")
    for key, values in timings.items():
        print(f"  {key:<14} {medians[key]:7.2f} / {pct(values, 0.9):7.2f}")
    ok = True
    for request, bare, target in (
        ("tool add", "bare add", TOOL_TARGET_MS),
        ("tool remove", "bare remove", TOOL_TARGET_MS),
        ("recall search", "bare search", SEARCH_TARGET_MS),
    ):
        extra = medians[request] - medians[bare]
        ratio = medians[request] / medians[bare] if medians[bare] else float("inf")
        verdict = "ok" if extra < target else "OVER"
        ok = ok and extra < target
        print(
            f"{request}: +{extra:.2f} ms over the bare call ({ratio:.2f}x; target < {target:.0f} ms"
            f" extra, {extra / target:.2f}x of it) {verdict}"
        )
    return 0 if ok or args.quick else 1  # a quick run's times say nothing about the targets


if __name__ == "__main__":
    sys.exit(main())
