"""Language-server latency through a real stdio connection (pygls client, spawned server).

Measures, for memory files of ~2 KB (a full MEMORY.md), 100 KB and 1 MB: the time from sending a
`textDocument/didChange` (one typed character, incremental sync) to receiving the matching
`textDocument/publishDiagnostics`, over many edits (p50 / p99 / max, and p50 per KB to show the
cost grows linearly); and cold start: spawn the server to the first diagnostics of an opened file.

    python bench/lsp.py [--edits 400] [--starts 5] [--quick]

Targets: full-size file p50 < 1.5 ms and p99 < 5 ms; 1 MB p50 < 60 ms; first diagnostics < 700 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
SERVER = [sys.executable, "-m", "my_agent_core", "serve"]
SERVER_COMMAND = list(SERVER)
PHRASE = "the project uses pytest and uv for envs deploys with docker prefers short answers"
PHRASE_2 = "用户 偏好 简洁 中文 回答 🎉 api keys live in vault ci runs on github actions"
WORDS = PHRASE.split(" ") + PHRASE_2.split(" ")


def memory_text(size: int, seed: int = 7) -> str:
    """A memory file of about `size` characters: numbered entries of 8-20 words, canonical form."""
    rng = random.Random(seed)
    entries: list[str] = []
    total = 0
    while total < size:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
        entry = f"{len(entries)}: {words}"
        if total + len(entry) + 3 > size and entries:
            break
        entries.append(entry)
        total += len(entry) + 3
    return "\n§\n".join(entries) + "\n"


class Bench:
    """A spawned server plus a pygls client that timestamps every publishDiagnostics."""

    def __init__(self) -> None:
        self.client = LanguageClient("bench", "1")
        self.arrived: dict[tuple[str, int | None], float] = {}
        self.waiters: dict[tuple[str, int | None], asyncio.Future[float]] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            now = time.perf_counter()
            key = (params.uri, params.version)
            self.arrived[key] = now
            waiter = self.waiters.pop(key, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(now)

    async def start(self, folder: Path) -> None:
        await self.client.start_io(*SERVER_COMMAND)
        caps = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=["utf-16"]),
            text_document=types.TextDocumentClientCapabilities(
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)
            ),
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=caps,
                root_uri=folder.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
            )
        )
        self.client.initialized(types.InitializedParams())

    def expect(self, uri: str, version: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if (uri, version) in self.arrived:
            future.set_result(self.arrived[(uri, version)])
        else:
            self.waiters[(uri, version)] = future
        return future

    async def open(self, uri: str, text: str) -> float:
        waiter = self.expect(uri, 1)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
        )
        return await asyncio.wait_for(waiter, 60)

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        finally:
            await self.client.stop()


def memory_uri(folder: Path) -> str:
    path = folder / ".my_agent_core" / "memory" / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.as_uri()


async def typing_latency(size: int, edits: int) -> dict[str, Any]:
    """Type `edits` characters (insert, then delete, alternating) into a file of `size` chars."""
    text = memory_text(size)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        uri = memory_uri(folder)
        bench = Bench()
        await bench.start(folder)
        await bench.open(uri, text)
        lines = text.split("\n")
        rng = random.Random(1)
        samples: list[float] = []
        version = 1
        for i in range(edits + 10):
            line = rng.randrange(len(lines))
            col = len(lines[line].encode("utf-16-le")) // 2
            version += 1
            if i % 2 == 0:
                change = types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(line, col), types.Position(line, col)),
                    text="x",
                )
                last = (line, col)
            else:  # delete the character typed just before: the file keeps its size
                line, col = last
                change = types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(line, col), types.Position(line, col + 1)),
                    text="",
                )
            waiter = bench.expect(uri, version)
            start = time.perf_counter()
            bench.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[change],
                )
            )
            arrived = await asyncio.wait_for(waiter, 60)
            if i >= 10:  # warm-up
                samples.append((arrived - start) * 1000)
        await bench.stop()
    samples.sort()
    return {
        "chars": len(text),
        "edits": len(samples),
        "p50": statistics.median(samples),
        "p99": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
        "max": samples[-1],
    }


async def protocol_floor(requests: int = 300) -> float:
    """p50 round trip of a request that does no work (hover outside memory files): the transport
    and pygls overhead every figure above includes (ms)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        bench = Bench()
        await bench.start(folder)
        doc = types.TextDocumentIdentifier(uri=(folder / "README.md").as_uri())
        samples = []
        for _ in range(requests):
            start = time.perf_counter()
            await bench.client.text_document_hover_async(
                types.HoverParams(doc, types.Position(0, 0))
            )
            samples.append((time.perf_counter() - start) * 1000)
        await bench.stop()
    return statistics.median(samples[20:])


async def cold_start() -> float:
    """Spawn to the first diagnostics of a full-size file (ms)."""
    text = memory_text(2200)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        uri = memory_uri(folder)
        bench = Bench()
        start = time.perf_counter()
        await bench.start(folder)
        arrived = await bench.open(uri, text)
        await bench.stop()
    return (arrived - start) * 1000


def imports_openai_at_start() -> bool:
    """Whether importing the server (what `serve` runs before answering) pulls in openai."""
    out = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import my_agent_core.cli, my_agent_core.lsp.server",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return any(line.split("|")[-1].strip() == "openai" for line in out.stderr.splitlines())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=400, help="edits of the full-size file")
    parser.add_argument("--starts", type=int, default=5, help="cold starts to time")
    parser.add_argument("--quick", action="store_true", help="fewer edits on the big files")
    parser.add_argument("--sizes", default="2200,100000,1000000", help="file sizes (chars) to time")
    parser.add_argument("--profile", metavar="PATH", help="run the server under cProfile into PATH")
    args = parser.parse_args()
    if args.profile:
        SERVER_COMMAND[:] = [sys.executable, "-m", "cProfile", "-o", args.profile, *SERVER[1:]]

    print(f"openai imported at server start: {imports_openai_at_start()}")
    starts = sorted([await cold_start() for _ in range(args.starts)])
    if starts:
        print(
            f"cold start (spawn -> first diagnostics): median {statistics.median(starts):.0f} ms, "
            f"max {starts[-1]:.0f} ms over {len(starts)} runs"
        )
    floor = await protocol_floor()
    print(f"protocol floor (a no-op request's round trip): p50 {floor:.2f} ms")
    print(
        f"{'file':>10} {'chars':>9} {'edits':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'p50/KB':>8} {'(p50-floor)/KB':>15}"
    )
    big = {100_000: 40 if args.quick else 100, 1_000_000: 10 if args.quick else 30}
    plan = [(int(s), big.get(int(s), args.edits)) for s in args.sizes.split(",")]
    for size, edits in plan:
        r = await typing_latency(size, edits)
        label = {2200: "full-size", 100_000: "100 KB", 1_000_000: "1 MB"}.get(size, f"{size:,}")
        kb = r["chars"] / 1000
        print(
            f"{label:>10} {r['chars']:>9,} {r['edits']:>6} {r['p50']:>8.2f} {r['p99']:>8.2f} "
            f"{r['max']:>8.2f} {r['p50'] / kb:>8.3f} {(r['p50'] - floor) / kb:>15.3f}"
        )


if __name__ == "__main__":
    gc.freeze()  # keep the harness's own import-time objects out of its GC pauses
    asyncio.run(main())
