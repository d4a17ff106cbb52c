"""`my-agent git-setup`: attributes, driver config and ignore rules, checked with real git."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from my_agent_core.memory import MemoryStore
from my_agent_core.private import GITIGNORE_HEADER, SESSIONS_DIR, private_dir
from my_agent_core.team.git_setup import (
    ATTRIBUTE_LINE,
    PRIVATE_PATTERNS,
    GitSetupError,
    driver_command,
    git_setup,
)
from tests.support.git_repo import MEMORY, GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo.create(tmp_path / "repo", tmp_path / "home")


def cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", "git-setup", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )


def merge_attribute(repo: GitRepo, path: str = MEMORY.as_posix()) -> str:
    return repo.git("check-attr", "merge", "--", path).stdout.strip().rsplit(": ", 1)[-1]


def test_setup_registers_the_driver_and_is_idempotent(repo: GitRepo) -> None:
    result = cli(repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    assert "added" in result.stdout and "merge.my-agent-memory.driver" in result.stdout
    assert (repo.path / ".gitattributes").read_text() == ATTRIBUTE_LINE + "\n"
    assert merge_attribute(repo) == "my-agent-memory"
    driver = repo.git("config", "--get", "merge.my-agent-memory.driver").stdout.strip()
    assert driver == driver_command()
    assert driver.startswith(sys.executable) and " -I -m my_agent_core merge-driver " in driver
    assert repo.git("config", "--get", "merge.my-agent-memory.name").returncode == 0

    snapshot = {
        p: p.read_bytes() for p in repo.path.rglob("*") if p.is_file() and ".git/" not in str(p)
    }
    again = cli(repo.path, env=repo.env)
    assert again.returncode == 0
    assert "already uses merge=my-agent-memory" in again.stdout
    assert "already set" in again.stdout and "already kept out" in again.stdout
    assert {p: p.read_bytes() for p in snapshot} == snapshot


def test_existing_attributes_are_kept_and_line_ends_followed(repo: GitRepo) -> None:
    attributes = repo.path / ".gitattributes"
    attributes.write_bytes(b"*.png binary\r\n*.sh text eol=lf")
    git_setup(repo.path)
    assert attributes.read_bytes() == (
        b"*.png binary\r\n*.sh text eol=lf\r\n" + ATTRIBUTE_LINE.encode() + b"\r\n"
    )
    assert repo.git("check-attr", "binary", "--", "x.png").stdout.strip().endswith("set")


def test_an_overriding_attribute_is_reported(repo: GitRepo) -> None:
    deeper = repo.path / ".my_agent_core" / "memory"
    deeper.mkdir(parents=True)
    (deeper / ".gitattributes").write_text("MEMORY.md merge=union\n")
    report = git_setup(repo.path)
    assert any("overrides it" in note and "'union'" in note for note in report.notes)


def test_a_changed_driver_command_is_updated_and_the_old_one_shown(repo: GitRepo) -> None:
    repo.git("config", "merge.my-agent-memory.driver", "old-command %O %A %B")
    report = git_setup(repo.path, command="new-command %O %A %B %P")
    assert any("(was: old-command %O %A %B)" in line for line in report.done)
    assert repo.git("config", "--get", "merge.my-agent-memory.driver").stdout.strip() == (
        "new-command %O %A %B %P"
    )


def test_private_files_are_ignored_and_memory_md_is_not(repo: GitRepo) -> None:
    private_dir(repo.path, SESSIONS_DIR)  # an earlier chat session already wrote the ignore file
    git_setup(repo.path)
    lines = (repo.path / ".my_agent_core" / ".gitignore").read_text().splitlines()
    assert lines == [GITIGNORE_HEADER, *PRIVATE_PATTERNS]  # complete already: nothing added twice

    store = MemoryStore(repo.path / ".my_agent_core" / "memory", author="test")
    store.add("memory", "The team builds with make.")
    store.add("user", "Prefers short answers.")
    store.close()
    backups = repo.path / ".my_agent_core" / "memory" / ".backups"
    backups.mkdir()
    (backups / "MEMORY.md.1.bak").write_text("old\n")
    (repo.path / ".my_agent_core" / "memory" / ".MEMORY.md.abc.tmp").write_text("partial")
    (repo.path / ".my_agent_core" / "archive").mkdir()
    (repo.path / ".my_agent_core" / "archive" / "index.sqlite").write_text("db")
    (repo.path / ".my_agent_core" / "sessions" / "s1.jsonl").write_text("{}\n")
    status = repo.git("status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    assert sorted(line[3:] for line in status) == [
        ".gitattributes",
        ".my_agent_core/.gitignore",
        MEMORY.as_posix(),
    ]


def test_committed_private_files_are_untracked_only_when_asked(repo: GitRepo) -> None:
    mem = repo.path / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("shared fact\n")
    (mem / "USER.md").write_text("my private profile\n")
    (mem / "history.jsonl").write_text("{}\n")
    repo.commit_all("oops: everything committed")

    report = git_setup(repo.path)
    assert any(
        "already committed" in note
        and ".my_agent_core/memory/USER.md" in note
        and "--untrack" in note
        for note in report.notes
    )
    assert "USER.md" in repo.git("ls-files").stdout

    result = cli(repo.path, "--untrack", env=repo.env)
    assert result.returncode == 0, result.stderr
    assert "untracked (kept on disk)" in result.stdout and "history.jsonl" in result.stdout
    tracked = repo.git("ls-files").stdout.split()
    assert MEMORY.as_posix() in tracked
    assert ".my_agent_core/memory/USER.md" not in tracked
    assert ".my_agent_core/memory/history.jsonl" not in tracked
    assert (mem / "USER.md").read_text() == "my private profile\n"
    assert "already committed" not in "\n".join(git_setup(repo.path).notes)


def test_a_workspace_folder_inside_a_larger_repository(repo: GitRepo) -> None:
    folder = repo.path / "services" / "api"
    folder.mkdir(parents=True)
    report = git_setup(folder)
    assert report.repository == repo.path.resolve()
    assert (folder / ".gitattributes").read_text() == ATTRIBUTE_LINE + "\n"
    assert merge_attribute(repo, "services/api/" + MEMORY.as_posix()) == "my-agent-memory"
    assert merge_attribute(repo, MEMORY.as_posix()) == "unspecified"


def test_not_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = GitRepo.create(tmp_path / "unused", tmp_path / "home").env
    result = cli(plain, env={**env, "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert result.returncode == 2
    assert "not inside a git work tree" in result.stderr and "git init" in result.stderr
    assert not (plain / ".gitattributes").exists()


def test_links_planted_by_a_repository_are_refused(repo: GitRepo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / ".my_agent_core").symlink_to(outside, target_is_directory=True)
    with pytest.raises(GitSetupError, match="link"):
        git_setup(repo.path)
    assert list(outside.iterdir()) == []

    (repo.path / ".my_agent_core").unlink()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (repo.path / ".gitattributes").symlink_to(victim)
    with pytest.raises(GitSetupError, match="symbolic link"):
        git_setup(repo.path)
    assert victim.read_text() == "precious\n"
