"""Memory that travels, with real git: a clone whose `.gitattributes` names the merge driver but
whose config does not define it (git merges MEMORY.md as text), and the same merges with the driver
(an entry both sides changed: kept together, labelled, recorded, flagged by lint with "Keep this
one"). Every `my-agent` here is a process on the code under test, as a person would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from my_agent_core.memory.document import parse
from my_agent_core.memory.lint import DRIVER_NOT_SET_UP, MERGE_PAIR, DocumentLayout, apply_edits
from my_agent_core.memory.merge_pairs import PAIRS_FILE, read_pairs
from my_agent_core.team.git_setup import ATTRIBUTE_LINE, driver_status, git_setup
from tests.support.git_repo import MEMORY, GitRepo

SERVER = str(Path(__file__).resolve().parents[1] / "server")
BASE = [
    "Tests run with `uv run pytest -q`.",
    "The service deploys on Fridays from the release branch.",
    "Config lives in config/app.toml.",
]


def env_of(repo: GitRepo) -> dict[str, str]:
    return {**repo.env, "PYTHONPATH": SERVER}


def my_agent(repo: GitRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", *args],
        cwd=repo.path,
        env=env_of(repo),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


def driver_here() -> str:
    """The driver command on the code under test (git-setup's own uses isolated mode, which reads
    the installed package)."""
    return f"env PYTHONPATH={SERVER} {sys.executable} -m my_agent_core merge-driver %O %A %B %P"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process git calls (driver_status, git_setup) see the test's config only, as the
    processes do (tests/support/git_repo.py)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "gitconfig").touch()
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def clone(tmp_path: Path) -> GitRepo:
    """A repository whose committed .gitattributes routes MEMORY.md to the driver, as a teammate
    clones it: the attribute is there, the driver is not."""
    repo = GitRepo.create(tmp_path / "repo", tmp_path / "home")
    (repo.path / ".gitattributes").write_text(ATTRIBUTE_LINE + "\n", encoding="utf-8")
    repo.commit_memory(BASE, "base")
    return repo


def diverge(repo: GitRepo, ours: list[str], theirs: list[str]) -> None:
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit_memory(theirs, "theirs")
    repo.git("checkout", "-q", "main")
    repo.commit_memory(ours, "ours")


def lint_json(repo: GitRepo) -> tuple[int, list[dict[str, object]]]:
    done = my_agent(repo, "lint", "--format", "json")
    return done.returncode, json.loads(done.stdout)


def test_a_clone_without_the_driver_is_told_and_its_conflict_is_an_error(clone: GitRepo) -> None:
    status = driver_status(clone.path)
    assert status is not None and status.routed and not status.configured and status.needs_setup
    ours = [BASE[0], "The service deploys on Fridays from main.", BASE[2], "Tabs, not spaces."]
    theirs = [BASE[0], "The service deploys on Thursdays from main.", BASE[2]]
    diverge(clone, ours, theirs)
    assert clone.git("merge", "-q", "feature", check=False).returncode != 0
    assert "<<<<<<<" in clone.memory_path.read_text(encoding="utf-8")

    code, found = lint_json(clone)
    assert code == 1
    codes = [f["code"] for f in found]
    assert "conflict-marker" in codes and DRIVER_NOT_SET_UP in codes
    notice = next(f for f in found if f["code"] == DRIVER_NOT_SET_UP)
    assert "my-agent git-setup" in str(notice["message"]) and notice["severity"] == "warning"

    added = my_agent(clone, "memory", "add", "Written after the text merge.")
    assert added.returncode == 0, added.stderr
    assert "conflict" in added.stdout and "git-setup" in added.stdout
    text = clone.memory_path.read_text(encoding="utf-8")
    assert "<<<<<<<" not in text and "=======" not in text
    entries = parse(text).entry_texts
    assert set(ours) | set(theirs) | {"Written after the text merge."} == set(entries)

    git_setup(clone.path, command=driver_here())
    status = driver_status(clone.path)
    assert status is not None and status.configured and not status.needs_setup
    code, found = lint_json(clone)
    assert code == 0 and DRIVER_NOT_SET_UP not in [f["code"] for f in found]


def test_no_notice_without_the_attribute_or_with_a_global_driver(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "plain", tmp_path / "home")
    repo.commit_memory(BASE, "base")
    status = driver_status(repo.path)
    assert status is not None and not status.routed and not status.needs_setup
    _code, found = lint_json(repo)
    assert DRIVER_NOT_SET_UP not in [f["code"] for f in found]
    (repo.path / ".gitattributes").write_text(ATTRIBUTE_LINE + "\n", encoding="utf-8")
    repo.git("config", "--global", "merge.my-agent-memory.driver", driver_here())
    status = driver_status(repo.path)
    assert status is not None and status.configured and not status.needs_setup
    assert driver_status(tmp_path / "home") is None  # not a work tree: nothing to say


def test_redoing_the_merge_after_setup_uses_the_driver(clone: GitRepo) -> None:
    diverge(clone, [*BASE, "ours: tabs"], [*BASE, "theirs: changelog"])
    assert clone.git("merge", "-q", "feature", check=False).returncode != 0
    git_setup(clone.path, command=driver_here())
    clone.git("checkout", "-m", "--", str(MEMORY))
    assert clone.memory_entries() == [*BASE, "ours: tabs", "theirs: changelog"]


def test_both_sides_edit_one_entry_kept_together_labelled_and_flagged(clone: GitRepo) -> None:
    git_setup(clone.path, command=driver_here())
    ours_edit = "The service deploys on Thursdays from the release branch."
    theirs_edit = "Deploys: every Friday at 5pm via make publish-everything, after QA."
    # ours also moves the entry; theirs rewrites it beyond the similarity pairing
    ours = [BASE[0], BASE[2], ours_edit]
    theirs = [BASE[0], theirs_edit, BASE[2], "theirs: a new fact"]
    diverge(clone, ours, theirs)
    done = clone.git("merge", "--no-edit", "feature")
    entries = clone.memory_entries()
    assert entries.index(theirs_edit) == entries.index(ours_edit) + 1
    assert "changed on both sides" in done.stderr
    assert "one side changed and the other removed" not in done.stderr

    pairs = read_pairs(clone.memory_path.parent, "MEMORY.md")
    assert [(p.first, p.second) for p in pairs] == [(ours_edit, theirs_edit)]
    assert PAIRS_FILE not in clone.git("status", "--porcelain", "--ignored=no").stdout

    code, found = lint_json(clone)
    hints = [f for f in found if f["code"] == MERGE_PAIR]
    assert code == 0 and len(hints) == 2
    assert all(h["severity"] == "hint" and h["fixable"] for h in hints)

    from my_agent_core.memory.lint import merge_pair_findings

    text = clone.memory_path.read_text(encoding="utf-8")
    findings = merge_pair_findings(DocumentLayout(parse(text)), pairs)
    keep_theirs = next(f for f in findings if text[f.start : f.end] == theirs_edit)
    assert keep_theirs.fixes[0].title == "Keep this one"
    clone.memory_path.write_text(apply_edits(text, keep_theirs.fixes[0].edits), encoding="utf-8")
    assert ours_edit not in clone.memory_entries() and theirs_edit in clone.memory_entries()
    _code, found = lint_json(clone)
    assert MERGE_PAIR not in [f["code"] for f in found]


def test_a_recorded_pair_a_clone_planted_is_only_texts(clone: GitRepo) -> None:
    """merge-pairs.json is private and never trusted: a damaged or hostile one is no pairs."""
    folder = clone.memory_path.parent
    for payload in ('{"pairs": [' * 200, '{"pairs": [{"file": 1}]}', "not json"):
        (folder / PAIRS_FILE).write_text(payload, encoding="utf-8")
        assert read_pairs(folder) == []
    (folder / PAIRS_FILE).unlink()
    os.mkfifo(folder / PAIRS_FILE)
    assert read_pairs(folder) == []  # a FIFO is never opened for a blocking read
