"""Cost of rendering prompt text structurally (render.py) against floors measured in the same run.

- snapshot: `render_memory_section` of a full MEMORY.md and USER.md against the round-1 renderer's
  work on the same entries (scan each entry, join): what neutralising adds on top of scanning.
- context file: `neutralize` of an 8,000-char AGENTS.md-like document against one `fold_map` of it
  (the fold any disguise-proof matcher must do at least once).
- over-budget listing: `render_listing` of a 1 MB hand-overfilled file (bounded output) against
  parsing that file, which every edit does anyway.
- session start with memory on: what a new chat session pays to freeze its snapshot
  (`MemoryStore.load_from_disk` + `format_all_for_system_prompt` of the folder's store) when the
  files did not change
  since the last session of the process (their sections are cached by text, `memory/snapshot.py`),
  and when they are rendered for the first time, against reading the two files (the floor: a
  session start must at least read them).

Runs are interleaved so machine noise hits both sides alike; figures are medians.
Run: .venv/bin/python bench/render.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.memory import ENTRY_DELIMITER, MemoryStore, parse, serialize, snapshot
from my_agent_core.memory.normalize import fold_map
from my_agent_core.memory.render import (
    MemorySection,
    neutralize,
    render_listing,
    render_memory_section,
)
from my_agent_core.memory.safety import forget, scan
from my_agent_core.paths import read_regular

MEMORY = [
    f"Project fact {i}: `svc-{i}` builds with `uv run pytest -k svc{i}`; config in config/svc{i}.toml"
    for i in range(20)
] + [
    "用户偏好简洁的回答，先给代码再解释",
    "Types: Promise<Context>, List<User>; see [docs](docs/a.md)",
]
USER = [f"User preference {i}: short answers, tabs, 100-char lines, no emoji" for i in range(18)]
DOCUMENT = (
    "# AGENTS.md\n\n## Build\nRun `make check` before committing.\n- lint: `ruff check`\n"
    "- test: `pytest -q`\n\n```bash\nuv sync && uv run pytest\n```\n\n## Style\n"
    "Prefer small modules; type hints everywhere; <b>never</b> commit secrets.\n"
) * 30
HUGE = [f"hand-written fact {n}: " + "lorem ipsum " * 8 for n in range(10_000)]


def old_render(entries: list[str]) -> str:
    """What the round-1 renderer did per section: scan each entry, join the safe ones."""
    return "\n§\n".join("[BLOCKED]" if scan(entry) else entry for entry in entries)


def median_pair(
    rounds: int, subject: Callable[[], object], floor: Callable[[], object]
) -> tuple[float, float]:
    """Median wall time of `subject` and of `floor`, run alternately."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        subject()
        a.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        floor()
        b.append(time.perf_counter() - t0)
    return statistics.median(a), statistics.median(b)


def report(name: str, subject: float, floor: float, floor_name: str) -> None:
    print(
        f"{name:<22} {subject * 1e3:8.3f} ms   {floor_name:<26} {floor * 1e3:8.3f} ms   "
        f"ratio {subject / floor:5.2f}x"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = quick.parse(parser, {"rounds": 10})
    memory_section = MemorySection("MEMORY.md", "agent notes", MEMORY, 2200)
    user_section = MemorySection("USER.md", "user profile", USER, 1375)
    huge_text = ENTRY_DELIMITER.join(HUGE)
    print(
        f"snapshot: {len(ENTRY_DELIMITER.join(MEMORY))} + {len(ENTRY_DELIMITER.join(USER))} chars; "
        f"document: {len(DOCUMENT):,} chars; huge file: {len(huge_text):,} chars"
    )

    # Both sides scan every entry for real (the scanner remembers texts it has seen).
    subject, floor = median_pair(
        args.rounds,
        lambda: (
            forget(),
            render_memory_section(memory_section),
            render_memory_section(user_section),
        ),
        lambda: (forget(), old_render(MEMORY), old_render(USER)),
    )
    report("snapshot", subject, floor, "scan + join (the first renderer)")

    subject, floor = median_pair(
        args.rounds, lambda: neutralize(DOCUMENT), lambda: fold_map(DOCUMENT)
    )
    report("context file", subject, floor, "fold_map of the text")

    rounds = max(5, args.rounds // 20)
    subject, floor = median_pair(
        rounds,
        lambda: render_listing(HUGE, name="MEMORY.md", limit=2200),
        lambda: parse(huge_text),
    )
    report("over-budget listing", subject, floor, "parse of the 1 MB file")
    session_start(args.rounds)
    return 0


def session_start(rounds: int) -> None:
    """A new session's snapshot of two unchanged files (cached), and of files never rendered in
    this process, against reading both files."""
    with tempfile.TemporaryDirectory(prefix="bench-render-") as tmp:
        folder = Path(tmp) / "ws" / ".my_agent_core" / "memory"
        folder.mkdir(parents=True)
        (folder / "MEMORY.md").write_text(serialize(MEMORY[:-1]), encoding="utf-8")
        (folder / "USER.md").write_text(serialize(USER), encoding="utf-8")
        store = MemoryStore(folder)  # one per folder, as the agent and the server keep it
        store.add("memory", MEMORY[-1])  # a folder in use: its lock and history are there

        def start() -> str:
            store.load_from_disk()
            return store.format_all_for_system_prompt()

        def first() -> str:
            snapshot.forget()
            forget()  # nor are its entries' scans remembered
            return start()

        def read_both() -> None:
            for name in ("MEMORY.md", "USER.md"):
                read_regular(folder / name, max_bytes=1 << 20)

        assert first() == start()  # the cached snapshot is the rendered one, byte for byte
        cached, floor = median_pair(rounds, start, read_both)
        uncached, _ = median_pair(max(5, rounds // 4), first, read_both)
        store.close()
    report("session start (cached)", cached, floor, "read MEMORY.md + USER.md")
    report("session start (first)", uncached, floor, "read MEMORY.md + USER.md")


if __name__ == "__main__":
    sys.exit(main())
