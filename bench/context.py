"""Cost of the workspace index and of the lint rules that check memory against the workspace.

Builds a deterministic repository (default 20,000 files in 200 folders, a .gitignore excluding
part of it, `git add`ed), then prints interleaved medians and their ratios, measured in the same
run so machine load hits both sides alike:

- index build (`WorkspaceIndex.build`, the tools' walker, and with ripgrep when there is one) vs
  `git ls-files` of the same tree (git only reads its index file: a floor, not a peer), and vs
  `git ls-files --cached --others --exclude-standard` (which also walks the tree, as we must);
- one file event applied (create + delete) vs the build: what keeping it current costs;
- the index's memory (tracemalloc, bytes per file);
- the workspace rules on a full-size memory file (2,200 chars) vs the base lint (`memory.lint`)
  of the same file: cold (a new rules object: nothing cached) and per keystroke (one entry edited,
  the others cached), which is what the editor pays on `didChange`.

Run: .venv/bin/python bench/context.py [--files N] [--rounds R] [--keep DIR] [--quick]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.coding_tools.ripgrep import find_ripgrep
from my_agent_core.context.index import FileEvent, WorkspaceIndex
from my_agent_core.context.rules import WorkspaceRules
from my_agent_core.memory.document import ENTRY_DELIMITER, parse
from my_agent_core.memory.lint import LintCache, lint

GIT = ["git", "-c", "core.fsmonitor=false"]


def build_repo(root: Path, files: int) -> None:
    """`pkgNNN/modM/fileNNNNN.py`, 100 files a folder; every 10th folder is an ignored build/."""
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "package.json").write_text('{"scripts": {"build": "tsc", "test": "vitest"}}\n')
    (root / "Makefile").write_text("test:\n\tpytest\nlint:\n\truff check .\n")
    (root / "AGENTS.md").write_text(
        "# Agents\n\n- Run the unit tests with `make test` before every commit.\n"
        "- Never edit generated files under build/ by hand.\n"
    )
    for n in range(files):
        folder = root / f"pkg{n // 1000:03d}" / f"mod{(n // 100) % 10}"
        if (n // 100) % 10 == 9:
            folder = folder / "build"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{n:05d}.py").write_bytes(b"x = 1\n")
    subprocess.run([*GIT, "-C", str(root), "init", "-q"], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "-A"], check=True)


def memory_file(files: int, limit: int = 2200, seed: int = 3) -> str:
    """A full-size MEMORY.md of realistic entries: paths that exist and some that do not, task
    commands, prose with slashes, dates and URLs, Chinese notes."""
    rnd = random.Random(seed)
    templates = [
        "Helpers for module {m} live in pkg{p:03d}/mod{m}/file{f:05d}.py; keep them small.",
        "Old entry point was pkg{p:03d}/legacy/main{f}.py (moved last spring).",
        "Run `make test` before pushing; `npm run build` for the bundle.",
        "Docs at https://example.com/pkg{p}/guide.html, and/or ask in #dev.",
        "User prefers 2-space indents and short commit subjects (~50 chars).",
        "构建脚本在 pkg{p:03d}/mod{m}/file{f:05d}.py 里，测试用 `make test`。",
        "Release notes go in CHANGELOG.md, dated 2024/05/{d:02d}.",
        "Config is read from settings{f}.toml at start-up.",
    ]
    entries: list[str] = []
    while True:
        n = rnd.randrange(files)
        entry = rnd.choice(templates).format(
            p=n // 1000, m=(n // 100) % 10 % 9, f=n, d=rnd.randint(1, 28)
        )
        if entry in entries:
            continue
        if len(ENTRY_DELIMITER.join([*entries, entry])) > limit:
            break
        entries.append(entry)
    return ENTRY_DELIMITER.join(entries) + "\n"


def interleaved(actions: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Each round runs every action once (after one warm-up each), so load spikes hit all alike."""
    timings: dict[str, list[float]] = {name: [] for name in actions}
    for action in actions.values():
        action()
    for _ in range(rounds):
        for name, action in actions.items():
            t0 = time.perf_counter()
            action()
            timings[name].append(time.perf_counter() - t0)
    return timings


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def measure_index(root: Path, rounds: int) -> WorkspaceIndex:
    rg = find_ripgrep()

    def git_ls() -> object:
        return subprocess.run([*GIT, "-C", str(root), "ls-files"], capture_output=True, check=True)

    def git_walk() -> object:
        return subprocess.run(
            [*GIT, "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        )

    actions: dict[str, Callable[[], object]] = {
        "git ls-files": git_ls,
        "git ls-files --others --exclude-standard": git_walk,
        "index build (walker)": lambda: WorkspaceIndex.build(root),
    }
    if rg is not None:
        actions["index build (ripgrep)"] = lambda: WorkspaceIndex.build(root, ripgrep=rg)
    timings = interleaved(actions, rounds)
    floor = median(timings["git ls-files"])
    walk = median(timings["git ls-files --others --exclude-standard"])
    print(f"index of {root} ({rounds} rounds, medians)")
    for name, samples in timings.items():
        value = median(samples)
        print(
            f"  {name:<42} {ms(value):>10}   {value / floor:6.1f}x git ls-files   "
            f"{value / walk:5.2f}x git walk"
        )

    index = WorkspaceIndex.build(root, ripgrep=rg)
    probe = root / "pkg000" / "mod0" / "probe.py"
    event_times: list[float] = []
    for _ in range(max(rounds, 5)):
        probe.write_bytes(b"")
        t0 = time.perf_counter()
        index.apply([FileEvent("created", str(probe))])
        probe.unlink()
        index.apply([FileEvent("deleted", str(probe))])
        event_times.append(time.perf_counter() - t0)
    build = median(timings["index build (walker)"])
    event = median(event_times)
    print(f"  one create + one delete event           {ms(event):>10}   {event / build:.5f}x build")

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = WorkspaceIndex.build(root)
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    size = after - before
    print(
        f"  memory: {size / 1e6:.1f} MB for {len(kept):,} files ({size / max(len(kept), 1):.0f} "
        "bytes a file)"
    )
    return index


def measure_rules(index: WorkspaceIndex, files: int, rounds: int) -> None:
    text = memory_file(files)
    doc = parse(text)
    warm = WorkspaceRules(index)
    findings = warm.lint(doc)
    base_cache = LintCache()
    print(
        f"\nrules on a full-size memory file ({len(text):,} chars, {len(doc.entries)} entries, "
        f"{len(findings)} workspace findings)"
    )
    # A keystroke: one entry changes (a different character each time), the rest stay cached.
    counter = [0]

    def edited() -> str:
        counter[0] += 1
        entries = [e.text for e in doc.entries]
        entries[len(entries) // 2] += f" v{counter[0]}"
        return ENTRY_DELIMITER.join(entries)

    actions: dict[str, Callable[[], object]] = {
        "base lint (cold)": lambda: lint(parse(text), limit=2200),
        "workspace rules (cold)": lambda: WorkspaceRules(index).lint(parse(text)),
        "base lint (keystroke, cached)": lambda: lint(
            parse(edited()), limit=2200, cache=base_cache
        ),
        "workspace rules (keystroke, cached)": lambda: warm.lint(parse(edited())),
    }
    timings = interleaved(actions, rounds * 20)
    cold = median(timings["base lint (cold)"])
    hot = median(timings["base lint (keystroke, cached)"])
    for name, samples in timings.items():
        value = median(samples)
        against = cold if "cold" in name else hot
        print(f"  {name:<38} {ms(value):>10}   {value / against:5.2f}x base lint of the same kind")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it")
    args = quick.parse(parser, {"files": 400, "rounds": 1})
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-context-"))
    try:
        if not (root / ".git").exists():
            root.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            build_repo(root, args.files)
            print(f"built {args.files:,} files in {time.perf_counter() - t0:.1f} s")
        index = measure_index(root, args.rounds)
        measure_rules(index, args.files, args.rounds)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
