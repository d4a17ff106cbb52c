"""Speed of the workspace tools against the tools a person would run, in the same run.

Builds a deterministic synthetic repository (default 20,000 files, ~200 MB, a .gitignore that
excludes part of it, `git add`ed so `git ls-files` works), then measures interleaved medians:

- search_text (ripgrep backend) vs `rg` run directly on the same query: target <= 1.5x;
  the pure-Python fallback is measured beside it (no target: it is the slow path);
- list_files (whole repository, .gitignore honoured) vs `git ls-files`: target <= 1.5x. A session
  lists again and again: listings are kept while no folder or ignore file changed, so the repeated
  call is what that target measures;
- the first list_files of a session (a full walk of the tree, a fresh toolset each time, built
  outside the timing) vs `git ls-files --cached --others --exclude-standard`, which walks the tree
  with the same semantics: target <= 1.5x; `rg --files` with the tools' flags is shown beside it;
- read_file of a 1 MB file open in an editor buffer: p50 target < 5 ms.

Run: .venv/bin/python bench/workspace.py [--files N] [--mb M] [--rounds R] [--keep DIR] [--quick]
(`--quick`: 2,000 files, 4 MB, 3 rounds: seconds, the same code path.)

Exit 1 only when the two search backends disagree (a correctness fault). A figure over its target
is printed OVER and never changes the exit code: timings belong in a report, not in a gate that a
loaded machine fails.
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

import quick
from my_agent_core.coding_tools import (
    ApprovalRequest,
    Decision,
    DiskApplier,
    WorkspaceSettings,
    find_ripgrep,
    make_workspace_tools,
)
from my_agent_core.coding_tools.ripgrep import BASE_FLAGS

NEEDLE = "needle_token_7f3a"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "value",
    "result",
    "config",
    "handler",
    "request",
    "response",
    "parse",
    "render",
    "store",
    "index",
    "cache",
    "token",
    "stream",
    "buffer",
    "window",
    "line",
    "path",
    "folder",
    "commit",
    "branch",
    "merge",
    "query",
    "search",
    "return",
    "import",
    "class",
    "def",
    "self",
    "yield",
    "async",
    "await",
    "lambda",
    "print",
    "error",
    "warning",
    "debug",
    "info",
]


class Refuse:
    def approve(self, request: ApprovalRequest) -> Decision:
        return Decision.deny("user")


class OneBuffer:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def text_of(self, path: Path) -> str | None:
        return self.text if path == self.path else None

    def open_paths(self) -> list[Path]:
        return [self.path]


def build_repo(root: Path, files: int, megabytes: int, seed: int = 7) -> None:
    """Deterministic tree: 100 files per folder, ~10% under ignored build/ folders or *.log."""
    rnd = random.Random(seed)
    pool = [
        " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 14))) + "\n" for _ in range(4000)
    ]
    per_file = max(1, megabytes * 1024 * 1024 // files)
    (root / ".gitignore").write_text("build/\n*.log\n__pycache__/\n")
    needles = set(rnd.sample(range(files), min(files, 60)))
    for n in range(files):
        folder = root / f"pkg{n // 1000:02d}" / f"mod{(n // 100) % 10}"
        if n % 10 == 9:
            folder = folder / "build"
        name = f"file{n:05d}.log" if n % 25 == 3 else f"file{n:05d}.py"
        folder.mkdir(parents=True, exist_ok=True)
        chunks: list[str] = []
        size = 0
        while size < per_file:
            line = pool[rnd.randrange(len(pool))]
            chunks.append(line)
            size += len(line)
        if n in needles:
            chunks.insert(rnd.randrange(len(chunks)), f"    x = {NEEDLE}()\n")
        (folder / name).write_text("".join(chunks))
    git = ["git", "-c", "core.fsmonitor=false", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class Prepared:
    """An action with an untimed setup run before each timing (`run(setup())` is timed)."""

    def __init__(self, setup: Callable[[], object], run: Callable[[object], object]) -> None:
        self.setup = setup
        self.run = run


def interleaved(
    actions: dict[str, Callable[[], object] | Prepared], rounds: int
) -> dict[str, list[float]]:
    """Each round runs every action once, so load spikes hit all of them alike."""
    timings: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(rounds + 1):  # the first round warms the page cache and imports
        for name, action in actions.items():
            if isinstance(action, Prepared):
                prepared = action.setup()
                t0 = time.perf_counter()
                action.run(prepared)
            else:
                t0 = time.perf_counter()
                action()
            timings[name].append(time.perf_counter() - t0)
    return {name: values[1:] for name, values in timings.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="build (or reuse) the repository here")
    args = quick.parse(parser, {"files": 2000, "mb": 4, "rounds": 3})

    rg = find_ripgrep()
    if rg is None:
        print("ripgrep (rg) is not installed: the ratios against rg cannot be measured.")
        return 2
    temp = None
    if args.keep is not None:
        root = args.keep.resolve()
        if not (root / ".gitignore").exists():
            root.mkdir(parents=True, exist_ok=True)
            build_repo(root, args.files, args.mb)
    else:
        temp = tempfile.mkdtemp(prefix="bench-workspace-")
        root = Path(temp)
        t0 = time.perf_counter()
        build_repo(root, args.files, args.mb)
        print(f"built {args.files:,} files / ~{args.mb} MB in {time.perf_counter() - t0:.1f} s")
    try:
        return measure(root, rg, args.rounds)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def measure(root: Path, rg: str, rounds: int) -> int:
    big = root / "open_buffer.py"
    buffer_text = "".join(f"line {n}: " + "x" * 40 + "\n" for n in range(1024 * 1024 // 50))

    def tools(use_rg: bool) -> dict[str, object]:
        built = make_workspace_tools(
            root,
            approver=Refuse(),
            applier=DiskApplier(),
            buffers=OneBuffer(big.resolve(), buffer_text),
            settings=WorkspaceSettings(use_ripgrep=use_rg),
        )
        return {t.name: t for t in built}

    fast, slow = tools(True), tools(False)

    def run(tool: object, args: dict[str, object]) -> Callable[[], object]:
        def call() -> object:
            result = tool.execute(args)  # type: ignore[attr-defined]
            assert result.ok, result.error
            return result

        return call

    def proc(argv: list[str]) -> Callable[[], object]:
        return lambda: subprocess.run(argv, cwd=root, capture_output=True, check=False)

    rg_direct = [rg, "-n", *BASE_FLAGS, "--glob", "!.git", "--fixed-strings", "--regexp", NEEDLE]
    git = ["git", "-c", "core.fsmonitor=false"]
    timings = interleaved(
        {
            "rg": proc(rg_direct),
            "search_text": run(fast["search_text"], {"query": NEEDLE}),
            "git ls-files": proc([*git, "ls-files"]),
            "git ls-files -co --exclude-standard": proc(
                [*git, "ls-files", "--cached", "--others", "--exclude-standard"]
            ),
            "rg --files": proc([rg, "--files", *BASE_FLAGS, "--glob", "!.git"]),
            "list_files": run(fast["list_files"], {}),
            "list_files (first call)": Prepared(
                lambda: tools(True)["list_files"],
                lambda tool: run(tool, {})(),
            ),
        },
        rounds,
    )
    slow_timings = interleaved(
        {
            "search_text (python)": run(slow["search_text"], {"query": NEEDLE}),
        },
        max(1, rounds // 3),
    )
    reads = interleaved(
        {"read_file (1 MB buffer)": run(fast["read_file"], {"path": big.name})}, 200
    )

    hits = fast["search_text"].execute({"query": NEEDLE}).content.splitlines()[0]  # type: ignore[attr-defined]
    same = (
        fast["search_text"].execute({"query": NEEDLE}).content  # type: ignore[attr-defined]
        == slow["search_text"].execute({"query": NEEDLE}).content  # type: ignore[attr-defined]
    )
    print(f"search: {hits}  (both backends identical: {same})")
    m = {name: median_ms(v) for name, v in {**timings, **slow_timings}.items()}
    p50_read = median_ms(reads["read_file (1 MB buffer)"])
    print(f"{'measure':<40}{'median ms':>12}")
    for name, value in m.items():
        print(f"{name:<40}{value:>12.1f}")
    print(f"{'read_file (1 MB buffer) p50':<40}{p50_read:>12.2f}")
    ratios = [
        ("search_text / rg", m["search_text"] / m["rg"], 1.5),
        ("list_files / git ls-files", m["list_files"] / m["git ls-files"], 1.5),
    ]
    print()
    print(
        f"list_files (kept listing) / git ls-files -co --exclude-standard: "
        f"{m['list_files'] / m['git ls-files -co --exclude-standard']:.2f}x"
    )
    print(
        f"python search / rg: {m['search_text (python)'] / m['rg']:.1f}x (the fallback, no target)"
    )
    cold = m["list_files (first call)"]
    walk_floor = m["git ls-files -co --exclude-standard"]
    print(f"list_files first call / git ls-files: {cold / m['git ls-files']:.1f}x (a full walk)")
    print(f"rg --files / git ls-files -co --exclude-standard: {m['rg --files'] / walk_floor:.2f}x")
    ratios.append(
        ("list_files first call / git ls-files -co --exclude-standard", cold / walk_floor, 1.5)
    )
    for name, ratio, target in ratios:
        verdict = "ok" if ratio <= target else "OVER"
        print(f"{name}: {ratio:.2f}x (target <= {target}x) {verdict}")
    verdict = "ok" if p50_read < 5 else "OVER"
    print(f"read_file 1 MB buffer p50: {p50_read:.2f} ms (target < 5 ms) {verdict}")
    if not same:
        print("the ripgrep and pure-Python searches disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
