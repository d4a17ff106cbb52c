"""`stale-reference` for task commands written in prose, not only in backticks: "Release builds go
through make publish-everything on Fridays", "just lint-the-world". English near misses stay quiet
("make sure", "just like", "make it work", "npm run" in a sentence about npm), as does a target the
task file defines; the prose regex meets long hostile lines in linear time."""

from __future__ import annotations

from pathlib import Path

import pytest

from my_agent_core.context.index import WorkspaceIndex
from my_agent_core.context.references import extract
from my_agent_core.context.rules import STALE_REFERENCE, WorkspaceRules
from my_agent_core.memory.document import ENTRY_DELIMITER, parse


def touch(folder: Path, name: str, text: str = "") -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def rules(tmp_path: Path) -> WorkspaceRules:
    folder = tmp_path / "repo"
    touch(folder, "Makefile", ".PHONY: test\ntest:\n\tpytest\npublish-all:\n\t./publish\n")
    touch(folder, "justfile", "lint-all:\n    ruff check .\ndeploy env:\n    ./deploy {{env}}\n")
    touch(folder, "package.json", '{"scripts": {"build": "tsc", "test": "vitest"}}')
    return WorkspaceRules(WorkspaceIndex.build(folder))


def stale(rules: WorkspaceRules, *entries: str) -> list[str]:
    doc = parse(ENTRY_DELIMITER.join(entries))
    return [doc.text[f.start : f.end] for f in rules.lint(doc) if f.code == STALE_REFERENCE]


@pytest.mark.parametrize(
    ("entry", "flagged"),
    [
        ("Release builds go through make publish-everything on Fridays", "publish-everything"),
        ("just lint-the-world", "lint-the-world"),
        ("Before a release, run make release-notes.", "release-notes"),
        ("Deploys go via just ship-it", "ship-it"),
        ("Run make deploy before pushing", "deploy"),  # a plain word, but "run" says a command
        ("Built with make docs_html", "docs_html"),
    ],
)
def test_a_command_in_prose_that_the_task_file_lacks(
    rules: WorkspaceRules, entry: str, flagged: str
) -> None:
    assert stale(rules, entry) == [flagged]


@pytest.mark.parametrize(
    "entry",
    [
        "Make sure the tests pass; just like before, make it work",
        "We make releases and just ship",
        "Use make to build, or just run the script",
        "make well-formed JSON and up-to-date docs",  # English compounds
        "we just re-run the job",
        "Release builds go through make publish-all on Fridays",  # the target exists
        "just lint-all before pushing; run make test",  # they exist
        "npm run executes the scripts of package.json",  # a sentence about npm itself
        "Use npm run to list the scripts, and npm run with no name does the same",
        "cd docs && make html-pages",  # runs in another folder
        "cmake and automake are not make: automake --add-missing",
        "The make-it-work branch and just-in-time builds",  # no blank after the tool
    ],
)
def test_near_misses_stay_quiet(rules: WorkspaceRules, entry: str) -> None:
    assert stale(rules, entry) == []


def test_code_still_counts_every_target_and_prose_the_first_only(rules: WorkspaceRules) -> None:
    assert stale(rules, "Run `make test lint-x docs`") == ["lint-x", "docs"]
    assert stale(rules, "Run make test-x and more words") == ["test-x"]


def test_no_task_file_means_no_finding(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    touch(folder, "main.go")
    rules = WorkspaceRules(WorkspaceIndex.build(folder))
    assert stale(rules, "Release builds go through make publish-everything") == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "entry",
    [
        "make " + "x-" * 100_000,
        "make" + " " * 200_000 + "x",
        "run make " * 40_000,
        ("just " * 50_000) + "lint-the-world",
        "a" * 100_000 + " make-x " * 20_000,
        "npm run " * 50_000,
    ],
)
def test_a_long_hostile_line_is_linear(entry: str) -> None:
    refs = extract(entry)
    assert isinstance(refs.commands, tuple)


def test_the_benign_twin_of_a_hostile_line() -> None:
    names = [c.name for c in extract("run make " * 3 + "deploy-all").commands]
    assert names == ["deploy-all"]
