"""Private files are out of git from the very first write, whichever front end writes first, and a
FIFO (or a link, or a device) planted at `.my_agent_core/.gitignore` never blocks that write.

Checked with real git: after one first write by the command line (`memory add`, `--target user`),
an MCP tool call through the official SDK client, the terminal chat, a session, the store and the
archive, `git status` offers MEMORY.md and `.my_agent_core/.gitignore` and nothing else.
"""

from __future__ import annotations

import argparse
import io
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from my_agent_core import chat_cli
from my_agent_core.agent.sessions import SessionHeader, SessionStore
from my_agent_core.memory import MemoryStore
from my_agent_core.memory.providers.archive import ArchiveProvider
from my_agent_core.private import GITIGNORE_HEADER, PRIVATE_PATTERNS, private_dir
from my_agent_core.team.git_setup import GitSetupError, git_setup
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import tool_call
from tests.support.git_repo import GitRepo

GITIGNORE = ".my_agent_core/.gitignore"
MEMORY_MD = ".my_agent_core/memory/MEMORY.md"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo.create(tmp_path / "ws", tmp_path / "home")


def offered(repo: GitRepo) -> set[str]:
    """What `git status` offers for commit."""
    out = repo.git("status", "--porcelain", "--untracked-files=all").stdout
    return {line[3:] for line in out.splitlines()}


def every_file(repo: GitRepo) -> set[str]:
    root = repo.path / ".my_agent_core"
    return {p.relative_to(repo.path).as_posix() for p in root.rglob("*") if p.is_file()}


def cli(repo: GitRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", *args],
        cwd=repo.path,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


# ------------------------------------------------------------------------ each front end, first


def by_cli(repo: GitRepo) -> None:
    done = cli(repo, "memory", "add", "The team builds with make.")
    assert done.returncode == 0, done.stderr


def by_cli_user(repo: GitRepo) -> None:
    done = cli(repo, "memory", "add", "Prefers short answers.", "--target", "user")
    assert done.returncode == 0, done.stderr


async def by_mcp(repo: GitRepo) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "my_agent_core", "mcp", "--dir", str(repo.path / ".my_agent_core" / "memory")],
        cwd=str(repo.path),
        env=dict(os.environ),  # this worktree's package (PYTHONPATH), this run's state folder
    )
    async with Client(
        params, client_info=Implementation(name="pytest", version="1"), read_timeout_seconds=60
    ) as client:
        for target, content in (("memory", "Builds with make."), ("user", "Likes tea.")):
            result = await client.call_tool(
                "memory", {"target": target, "action": "add", "content": content}
            )
            assert not result.is_error, result


def by_store(repo: GitRepo) -> None:  # what the editor and the Python API write through
    store = MemoryStore(repo.path / ".my_agent_core" / "memory", author="editor")
    store.add("memory", "The team builds with make.")
    store.add("user", "Prefers short answers.")
    store.remove("user", "short answers")  # a backup-free remove, and a journal record
    store.close()


def by_session(repo: GitRepo) -> None:
    header = SessionHeader("firstwrite", str(repo.path), "m", "You help.", [], 1.0)
    SessionStore(repo.path).create(header).close()


def by_archive(repo: GitRepo) -> None:
    archive = ArchiveProvider(repo.path)
    archive.sync_turn("How do we build?", "With make.")
    archive.shutdown()


FRONT_ENDS: dict[str, tuple[Callable[[GitRepo], object], set[str]]] = {
    "cli memory add": (by_cli, {MEMORY_MD, GITIGNORE}),
    "cli memory add --target user": (by_cli_user, {GITIGNORE}),
    "the store (editor, Python API)": (by_store, {MEMORY_MD, GITIGNORE}),
    "a session": (by_session, {GITIGNORE}),
    "the archive": (by_archive, {GITIGNORE}),
}


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_after_the_first_write_git_offers_only_memory_md_and_the_ignore_file(
    repo: GitRepo, front_end: str
) -> None:
    write, expected = FRONT_ENDS[front_end]
    write(repo)
    assert offered(repo) == expected
    assert every_file(repo) - expected, "the private files exist; git just does not offer them"


async def test_the_first_write_through_an_mcp_client(repo: GitRepo) -> None:
    await by_mcp(repo)
    assert offered(repo) == {MEMORY_MD, GITIGNORE}
    assert ".my_agent_core/memory/USER.md" in every_file(repo)


def test_the_first_write_of_a_terminal_chat(repo: GitRepo, fake, monkeypatch) -> None:
    monkeypatch.chdir(repo.path)
    fake.add(
        {
            "tool_calls": [
                tool_call("memory", {"target": "user", "action": "add", "content": "Tea"})
            ]
        },
        {"content": "Noted."},
    )
    parser = argparse.ArgumentParser(prog="my-agent chat")
    chat_cli.add_arguments(parser)
    args = parser.parse_args(["--model", "fake-model", "--base-url", fake.base_url, "--no-tools"])
    out = io.StringIO()
    assert chat_cli.run(args, stdin=io.StringIO("I like tea\n"), stdout=out) == 0
    assert offered(repo) == {GITIGNORE}
    assert {".my_agent_core/memory/USER.md", ".my_agent_core/memory/history.jsonl"} <= every_file(
        repo
    )
    assert any(p.startswith(".my_agent_core/sessions/") for p in every_file(repo))


def test_an_older_ignore_file_is_completed_by_the_next_write(repo: GitRepo) -> None:
    base = repo.path / ".my_agent_core"
    base.mkdir()
    (base / ".gitignore").write_text("# my-agent-core: private\narchive/\nmy-own-line\n")
    by_cli_user(repo)
    lines = (base / ".gitignore").read_text().splitlines()
    assert lines[:3] == ["# my-agent-core: private", "archive/", "my-own-line"]  # kept as it was
    assert lines[3:] == [GITIGNORE_HEADER, *PRIVATE_PATTERNS]
    assert offered(repo) == {GITIGNORE}
    git_setup(repo.path, command="true %O %A %B %P")  # adds nothing more
    assert (base / ".gitignore").read_text().splitlines() == lines


# ------------------------------------------------------------------ a FIFO at .gitignore


def finishes(work: Callable[[], object], seconds: float = 30) -> object:
    """Run `work` in a thread; fail (instead of hanging the suite) when it blocks."""
    result: list[object] = []

    def run() -> None:
        try:
            result.append(work())
        except Exception as exc:
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked on the planted FIFO"
    return result[0]


@pytest.fixture
def fifo(repo: GitRepo) -> Path:
    path = repo.path / ".my_agent_core" / ".gitignore"
    path.parent.mkdir()
    os.mkfifo(path)
    return path


def test_a_fifo_at_the_ignore_file_never_blocks_the_cli(repo: GitRepo, fifo: Path) -> None:
    done = cli(repo, "memory", "add", "The team builds with make.")
    assert done.returncode == 0, done.stderr
    assert ".gitignore" in done.stderr and "FIFO" in done.stderr  # the logged note
    assert (repo.path / MEMORY_MD).read_text().startswith("The team builds with make.")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left alone


def test_a_fifo_at_the_ignore_file_never_blocks_the_archive_or_a_session(
    repo: GitRepo, fifo: Path
) -> None:
    def first_archive_write() -> None:
        archive = ArchiveProvider(repo.path)
        archive.sync_turn("Which port does the app use?", "It listens on 8080.")
        archive.shutdown()

    finishes(first_archive_write)
    assert (repo.path / ".my_agent_core" / "archive" / "archive.sqlite3").is_file()
    finishes(lambda: by_session(repo))
    assert (repo.path / ".my_agent_core" / "sessions" / "firstwrite.jsonl").is_file()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_at_the_ignore_file_is_a_clear_git_setup_error(repo: GitRepo, fifo: Path) -> None:
    error = finishes(lambda: git_setup(repo.path, command="true %O %A %B %P"))
    assert isinstance(error, GitSetupError) and "FIFO" in str(error)
    done = cli(repo, "git-setup")
    assert done.returncode == 2 and "FIFO" in done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


async def test_a_fifo_at_the_ignore_file_never_blocks_the_mcp_server(
    repo: GitRepo, fifo: Path
) -> None:
    await by_mcp(repo)  # it answers initialize, and writes
    assert (repo.path / MEMORY_MD).is_file()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("kind", ["a link out", "a link to a device", "a folder"])
def test_other_odd_ignore_files_are_left_alone_and_the_write_goes_on(
    repo: GitRepo, tmp_path: Path, kind: str
) -> None:
    base = repo.path / ".my_agent_core"
    base.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    if kind == "a link out":
        (base / ".gitignore").symlink_to(victim)
    elif kind == "a link to a device":
        (base / ".gitignore").symlink_to("/dev/zero")
    else:
        (base / ".gitignore").mkdir()
    finishes(lambda: private_dir(repo.path, "sessions"))
    by_store(repo)
    assert victim.read_text() == "precious\n"
    assert (base / "sessions").is_dir() and (base / "memory" / "MEMORY.md").is_file()
