"""Ignore rules from a hostile clone and globs from the model: no backtracking, invalid lines skipped
as ripgrep and git skip them, and the same files as `rg --files` on randomised patterns.

A hang fails these tests by pytest-timeout (no timed assertions)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from my_agent_core.coding_tools.gitglob import RuleSet, compile_rules, parse_line
from my_agent_core.coding_tools.ignore import GlobFilter, walk_files
from tests.test_coding_tools_helpers import *  # noqa: F403
from tests.test_coding_tools_helpers import RG, Workspace, random_tree, rg_files

HOSTILE = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
LONG_NAME = "a" * 250


def listed(text: str) -> list[str]:
    return text.splitlines()[1:]


def git_listing(root: Path) -> list[str]:
    """What git shows of an untracked tree with its exclude rules (`-z`: no quoting)."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(p for p in out.split("\0") if p)


@pytest.mark.timeout(60)
def test_a_backtracking_gitignore_glob_against_a_long_name(workspace: Workspace) -> None:
    workspace.write(".gitignore", HOSTILE + "\n")
    workspace.write(LONG_NAME, "x\n")
    workspace.write("a" * 200 + "b", "ignored\n")  # the benign twin: the glob still matches
    workspace.write("keep.txt", "x\n")
    assert listed(workspace.ok("list_files")) == [".gitignore", LONG_NAME, "keep.txt"]
    text = workspace.ok("search_text", query="x")
    assert {line.split(":")[0] for line in listed(text)} == {LONG_NAME, "keep.txt"}


@pytest.mark.timeout(60)
def test_a_backtracking_list_files_glob_from_the_model(workspace: Workspace) -> None:
    workspace.write(LONG_NAME, "x\n")
    workspace.write("xaxaxb", "x\n")
    text = workspace.ok("list_files", glob=HOSTILE)
    assert text.startswith("No files")
    assert listed(workspace.ok("list_files", glob="*a*a*b")) == ["xaxaxb"]  # benign twin
    deep = "/".join(["a"] * 300) + "/f.txt"
    workspace.write(deep, "x\n")
    assert listed(workspace.ok("list_files", glob="**/" + "a*" * 40 + "/f.txt")) == []
    assert listed(workspace.ok("list_files", glob="**/a/f.txt")) == [deep]


def test_a_glob_that_expands_too_far_is_a_clear_error(workspace: Workspace) -> None:
    workspace.write("ab.py", "x\n")
    error = workspace.fails("list_files", glob="{a,b}" * 100)
    assert "cannot be expanded" in error and "fewer {a,b} alternatives" in error
    assert listed(workspace.ok("list_files", glob="{a,b}{a,b}.py")) == ["ab.py"]  # benign twin


def test_regexes_are_linear_on_the_worst_names() -> None:
    """Every piece of a pattern commits to one place: these would take minutes with the
    regexes a backtracking translation makes (nested `[^/]*` runs)."""
    rules = compile_rules([HOSTILE, "**/" + "*x" * 30 + "/**/y", "a/**/" + "*b" * 20 + "/c"])
    for path in (
        "a" * 250,
        "x" * 250,
        "/".join(["x" * 200] * 20),
        "a/" + "/".join(["b" * 200] * 20),
    ):
        for is_dir in (False, True):
            assert rules.matches(path, is_dir) is False
    assert rules.matches("a" * 249 + "b", False)
    assert rules.matches("x" * 31 + "/y", False)
    assert rules.matches("a/" + "b" * 21 + "/c", False)


INVALID = ["\\", "[z-a]", "!", "[abc", "a\\", "x{", "{a,{b,c}}", "!/", "/"]


@pytest.mark.parametrize("line", INVALID)
def test_invalid_lines_are_skipped_not_raised(line: str) -> None:
    rules = compile_rules(["*.log", line, "!keep.log"])
    assert rules.matches("debug.log", False) and not rules.verdict("keep.log", 0, 0, False)
    assert rules.verdict("debug.log", 0, 0, False) is True


@pytest.mark.skipif(RG is None, reason="ripgrep is not installed")
@pytest.mark.parametrize("line", INVALID)
def test_invalid_lines_list_what_ripgrep_and_git_list(tmp_path: Path, line: str) -> None:
    """list_files does not fail on a line git and ripgrep skip; it lists what they list. They
    disagree on two: `[z-a]` (git matches `z`, ripgrep refuses the line: ripgrep is the reference
    of the tools) and a lone `!` (ripgrep 13 re-includes everything, git skips it: so do we)."""
    root = tmp_path.resolve()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for name in ("a", "z", "b.log", "keep.log", "[abc", "src/x.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    (root / ".gitignore").write_text(f"*.log\n{line}\n!keep.log\n")
    walked = sorted(walk_files(root, root))
    if line != "!":
        assert walked == rg_files(root, None)
    if line != "[z-a]":
        assert walked == git_listing(root)
    assert "b.log" not in walked and "keep.log" in walked and "a" in walked


def test_lint_of_a_folder_with_invalid_ignore_lines_does_not_crash(tmp_path: Path) -> None:
    import os
    import sys

    root = tmp_path / "repo"
    (root / ".my_agent_core" / "memory").mkdir(parents=True)
    (root / ".gitignore").write_text("\\\n[z-a]\n!\n[abc\nbuild/\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("x")
    (root / ".my_agent_core" / "memory" / "MEMORY.md").write_text(
        "See build/out.js and src/missing.py\n", encoding="utf-8"
    )
    (root / "src").mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "server")}
    done = subprocess.run(
        [sys.executable, "-m", "my_agent_core", "lint", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert "src/missing.py" in done.stdout and "build/out.js" not in done.stdout


def test_parse_line_follows_ripgrep() -> None:
    assert parse_line("# comment") is None and parse_line("   ") is None
    assert parse_line("\\#x") == parse_line("#x".replace("#", "\\#"))
    pattern = parse_line("build/  ")
    assert pattern is not None and pattern.only_dir and pattern.glob == "**/build"
    pattern = parse_line("x\\ ")
    assert pattern is not None and pattern.glob == "**/x\\ "
    pattern = parse_line("!/a/**")
    assert pattern is not None and pattern.negated and pattern.glob == "a/**/*"


VOCAB = [
    "*.log", "!keep.log", "build/", "/build", "src/*.py", "**/deep/**", "lib", "*.txt", "!y.txt",
    "/a/b", "a/**", "*/", "**/x.py", "!src/", "deep/", "*.py", "!*.py", "/*.txt", "[a-c]*",
    "[!a-c]*.py", "*.{py,txt}", "{a,b}/x.py", "?.py", "*a*b*", "d**", "**/a/*/x.py", "\\!keep.log",
    "x.py ", "[abc", "\\", "[z-a]", "a/**/b", "*[0-9]*", "**", "src/**/", "{lib,deep}",
]  # fmt: skip


@pytest.mark.skipif(RG is None, reason="ripgrep is not installed")
def test_the_walker_lists_what_ripgrep_lists_on_random_patterns(tmp_path: Path) -> None:
    names = ["a", "b", "src", "lib", "build", "x.py", "y.txt", "z.log", "keep.log", "deep", "1.py",
             "ab", "cab.txt", "!keep.log", "d9"]  # fmt: skip
    for seed in range(80):
        rnd = random.Random(seed)
        root = (tmp_path / f"t{seed}").resolve()
        kinds = (".gitignore", ".gitignore", ".ignore", ".rgignore")
        random_tree(root, rnd, names, VOCAB, paths=30, lines=6, ignore_files=kinds)
        for glob in (None, "*.py", "!*.log", "src/**", "*.{txt,log}", "[a-b]*"):
            walked = sorted(walk_files(root, root, glob=GlobFilter(glob) if glob else None))
            assert rg_files(root, glob) == walked, (seed, glob)
        shutil.rmtree(root)


def test_rule_sets_say_which_line_decided() -> None:
    rules = RuleSet(["*.py", "!keep.py", "keep.py"])
    assert rules.verdict("src/keep.py", 0, 4, False) is True
    rules = RuleSet(["*.py", "!keep.py"])
    assert rules.verdict("src/keep.py", 0, 4, False) is False
    assert rules.verdict("src/keep.txt", 0, 4, False) is None
