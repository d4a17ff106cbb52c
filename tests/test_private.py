"""Private folders (sessions, archive) beside the memory folder: git-ignored, never through a link."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from my_agent_core.paths import PathRefused
from my_agent_core.private import GITIGNORE_HEADER, PRIVATE_PATTERNS, private_dir


def test_private_dir_is_created_owner_only_and_git_ignored(tmp_path: Path) -> None:
    sessions = private_dir(tmp_path, "sessions")
    assert sessions == tmp_path / ".my_agent_core" / "sessions"
    assert sessions.stat().st_mode & 0o777 == 0o700
    private_dir(tmp_path, "archive")
    private_dir(tmp_path, "sessions")  # a second time adds nothing
    lines = (tmp_path / ".my_agent_core" / ".gitignore").read_text().splitlines()
    assert lines == [GITIGNORE_HEADER, *PRIVATE_PATTERNS]


def test_git_really_ignores_what_is_inside(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (private_dir(tmp_path, "sessions") / "s1.jsonl").write_text("{}\n")
    out = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "s1.jsonl" not in out
    assert ".my_agent_core/.gitignore" in out  # the ignore file itself is meant to be committed


def test_an_existing_gitignore_is_extended_not_rewritten(tmp_path: Path) -> None:
    base = tmp_path / ".my_agent_core"
    base.mkdir()
    (base / ".gitignore").write_text("custom-line")
    (base / ".gitignore").chmod(0o640)
    private_dir(tmp_path, "archive")
    patterns = "".join(f"{line}\n" for line in PRIVATE_PATTERNS)
    assert (base / ".gitignore").read_text() == f"custom-line\n{GITIGNORE_HEADER}\n{patterns}"
    assert (base / ".gitignore").stat().st_mode & 0o777 == 0o640  # its mode is kept


def test_linked_private_folders_are_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    (ws / ".my_agent_core").mkdir(parents=True)
    (ws / ".my_agent_core" / "sessions").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathRefused, match="link"):
        private_dir(ws, "sessions")
    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    (ws2 / ".my_agent_core").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathRefused, match="link"):
        private_dir(ws2, "archive")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("bad", ["", "memory", "..", "a/b"])
def test_bad_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError):
        private_dir(tmp_path, bad)
