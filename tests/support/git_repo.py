"""A real git repository for tests, isolated from the machine's git configuration.

Git runs with a PATH that holds git and nothing of this project, so a merge driver that works here
works for a person whose git does not see the virtualenv either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from my_agent_core.memory.document import parse, serialize

__all__ = ["MEMORY", "GitRepo", "git_env"]

MEMORY = Path(".my_agent_core", "memory", "MEMORY.md")


def git_env(home: Path) -> dict[str, str]:
    """An environment for git: fixed identity, no global or system config, a bare PATH."""
    git = shutil.which("git")
    assert git is not None, "git is required for these tests"
    return {
        "PATH": os.pathsep.join(dict.fromkeys([str(Path(git).parent), "/usr/bin", "/bin"])),
        "HOME": str(home),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_TERMINAL_PROMPT": "0",
    }


class GitRepo:
    """A work tree with helpers for memory files; every git call is a real `git` process."""

    def __init__(self, path: Path, env: dict[str, str]) -> None:
        self.path = path
        self.env = env

    @classmethod
    def create(cls, path: Path, home: Path) -> GitRepo:
        home.mkdir(parents=True, exist_ok=True)
        (home / "gitconfig").write_text("")
        repo = cls(path, git_env(home))
        path.mkdir(parents=True, exist_ok=True)
        repo.git("init", "-q", "-b", "main")
        return repo

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["git", *args],
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=120,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done

    @property
    def memory_path(self) -> Path:
        return self.path / MEMORY

    def write_memory(self, entries: list[str]) -> None:
        self.memory_path.parent.mkdir(parents=True, exist_ok=True)
        self.memory_path.write_text(serialize(entries), encoding="utf-8")

    def memory_entries(self) -> list[str]:
        return parse(self.memory_path.read_text(encoding="utf-8")).entry_texts

    def commit_all(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def commit_memory(self, entries: list[str], message: str) -> None:
        self.write_memory(entries)
        self.commit_all(message)
