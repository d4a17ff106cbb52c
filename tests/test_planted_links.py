"""No file the product writes can be redirected by a link a cloned repository planted.

One table of every writer (the private `.gitignore`, the memory store, the journal's trim, git-setup's
two files, the merge driver, session files, the session key, the archive, the lock file), each attacked
three ways: links at the temp names an older writer used (one per likely pid), a link at the final
name, and a link at the folder. Whatever the writer does then (write, refuse, leave alone), the file
outside is never written. The benign twin: the same writers in a clean folder write what they should,
with the modes they should (an existing file keeps its own). And the memory folder itself, which an
agent and `my-agent chat` create when it is missing: a link planted at `.my_agent_core` or at
`memory` never gets a folder made where it points.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from my_agent_core import chat_cli
from my_agent_core.agent import AgentConfig, build_agent
from my_agent_core.agent.sessions import SessionHeader, SessionStore, signing
from my_agent_core.memory import MemoryStore
from my_agent_core.memory.journal import Journal
from my_agent_core.memory.lock import open_lock_file
from my_agent_core.memory.providers.archive import ArchiveProvider
from my_agent_core.paths import PathRefused
from my_agent_core.private import PRIVATE_PATTERNS, private_dir
from my_agent_core.team.driver import run_driver
from my_agent_core.team.git_setup import ATTRIBUTE_LINE, git_setup
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import *  # noqa: F403
from tests.support.git_repo import GitRepo

PRECIOUS = "precious: never overwritten\n"
SESSION_ID = "planted0session"


@dataclass(frozen=True)
class Writer:
    """One way the product writes a file: where (`target`, from the workspace) and how (`run`)."""

    name: str
    target: Callable[[Path], Path]
    run: Callable[[Path], object]
    attacks: tuple[str, ...] = ("pid", "final", "folder")
    #: For the benign twin: what the file holds afterwards, and its mode (None: not checked).
    holds: str = ""
    mode: int | None = None
    #: The benign twin first creates the file with this text and mode 0640, which must be kept.
    existing: str | None = None


def memory_dir(ws: Path) -> Path:
    return ws / ".my_agent_core" / "memory"


def add_to_memory(ws: Path) -> None:
    store = MemoryStore(memory_dir(ws), author="test")
    try:
        store.add("memory", "The team builds with make.")
    finally:
        store.close()


def trim_journal(ws: Path) -> None:
    memory_dir(ws).mkdir(parents=True, exist_ok=True)  # the store's folder, made by the store
    journal = Journal(memory_dir(ws) / "history.jsonl")
    try:
        for n in range(4):  # 4 x 200 KB: past the trim threshold
            journal.append(journal.new_record("add", "memory", "test", note=f"{n}" + "x" * 200_000))
    finally:
        journal.close()


def setup_git(ws: Path) -> None:
    git_setup(ws, command="true %O %A %B %P")


def merge(ws: Path) -> None:
    base, theirs = ws.parent / "base.md", ws.parent / "theirs.md"
    base.write_text("shared\n", encoding="utf-8")
    theirs.write_text("shared\n§\ntheirs added this\n", encoding="utf-8")
    ours = ws / "merge" / "ours.md"
    if not ours.is_symlink() and not ours.exists():
        ours.write_text("shared\n§\nours added this\n", encoding="utf-8")
    run_driver(str(base), str(ours), str(theirs), "MEMORY.md", err=io.StringIO())


def create_session(ws: Path) -> None:
    header = SessionHeader(SESSION_ID, str(ws), "m", "You help.", [], 1.0)
    SessionStore(ws).create(header).close()


def make_key(ws: Path) -> None:
    os.environ["XDG_STATE_HOME"] = str(ws / "state")  # restored by the fixture
    signing._keys.clear()
    signing.sign_header(b'{"t":"session"}\n')


def open_archive(ws: Path) -> None:
    """The archive's first write (it is made by the first write, never by a read)."""
    archive = ArchiveProvider(ws)
    archive.sync_turn("Which port does the app use?", "It listens on 8080.")
    archive.shutdown()


def open_lock(ws: Path) -> None:
    memory_dir(ws).mkdir(parents=True, exist_ok=True)  # the store's folder, made by the store
    os.close(open_lock_file(memory_dir(ws) / ".lock"))


GITIGNORE = Writer(
    "the private .gitignore (first session or archive)",
    lambda ws: ws / ".my_agent_core" / ".gitignore",
    lambda ws: private_dir(ws, "sessions"),
    holds=PRIVATE_PATTERNS[-1],
    existing="custom-line\n",
)
WRITERS = [
    GITIGNORE,
    Writer(
        "the private .gitignore (first memory write)",
        GITIGNORE.target,
        add_to_memory,
        holds=PRIVATE_PATTERNS[-1],
        existing="custom-line\n",
    ),
    Writer(
        "MEMORY.md (the memory store)",
        lambda ws: memory_dir(ws) / "MEMORY.md",
        add_to_memory,
        holds="The team builds with make.",
        existing="An older fact.\n",
    ),
    Writer(
        "history.jsonl (the journal's trim)",
        lambda ws: memory_dir(ws) / "history.jsonl",
        trim_journal,
        attacks=("pid", "final"),  # its folder is the store's, checked by the store (above)
        holds='"note": "3x',
        mode=0o600,
    ),
    Writer(
        ".gitattributes (git-setup)",
        lambda ws: ws / ".gitattributes",
        setup_git,
        attacks=("pid", "final"),  # its folder is the workspace itself
        holds=ATTRIBUTE_LINE,
        existing="*.png binary\n",
    ),
    Writer(
        ".my_agent_core/.gitignore (git-setup)",
        GITIGNORE.target,
        setup_git,
        holds=PRIVATE_PATTERNS[-1],
        existing="custom-line\n",
    ),
    Writer(
        "OURS (the merge driver)",
        lambda ws: ws / "merge" / "ours.md",
        merge,
        attacks=("pid", "final"),  # git names OURS; its folder is git's choice
        holds="theirs added this",
        existing="shared\n§\nours added this\n",
    ),
    Writer(
        "a session file",
        lambda ws: ws / ".my_agent_core" / "sessions" / f"{SESSION_ID}.jsonl",
        create_session,
        holds='"mac":"',
        mode=0o600,
    ),
    Writer(
        "the session key (state folder)",
        lambda ws: ws / "state" / "my-agent-core" / "session-key",
        make_key,
        mode=0o600,
    ),
    Writer(
        "the archive database",
        lambda ws: ws / ".my_agent_core" / "archive" / "archive.sqlite3",
        open_archive,
        mode=0o600,
    ),
    Writer(
        "the memory folder's lock file",
        lambda ws: memory_dir(ws) / ".lock",
        open_lock,
        attacks=("final",),  # opened in place, never through a temp name; its folder: the store's
        mode=0o600,
    ),
]
ATTACKS = [(w, a) for w in WRITERS for a in w.attacks]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    repo = GitRepo.create(tmp_path / "ws", tmp_path / "home")
    os.environ.update({k: v for k, v in repo.env.items() if k.startswith("GIT_")})
    return repo.path


@pytest.fixture(autouse=True)
def _restore_environment():
    saved = dict(os.environ)
    signing._keys.clear()
    yield
    os.environ.clear()
    os.environ.update(saved)
    signing._keys.clear()


def plant(ws: Path, writer: Writer, attack: str, victim: Path, outside: Path) -> list[Path]:
    """Plant the attack; returns the links planted."""
    target = writer.target(ws)
    if attack == "folder":
        target.parent.parent.mkdir(parents=True, exist_ok=True)
        target.parent.symlink_to(outside, target_is_directory=True)
        return [target.parent]
    target.parent.mkdir(parents=True, exist_ok=True)
    if attack == "final":
        target.symlink_to(victim)
        return [target]
    pid = os.getpid()
    links = []
    for candidate in {*range(max(1, pid - 64), pid + 64), pid}:
        for name in (f".{target.name}.{candidate}.tmp", f"{target.name}.{candidate}.tmp"):
            link = target.with_name(name)
            link.symlink_to(victim)
            links.append(link)
    return links


@pytest.mark.parametrize(
    ("writer", "attack"), ATTACKS, ids=[f"{w.name} / link at the {a}" for w, a in ATTACKS]
)
def test_a_planted_link_never_gets_an_outside_file_written(
    ws: Path, tmp_path: Path, writer: Writer, attack: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text(PRECIOUS)
    os.chmod(victim, 0o644)
    links = plant(ws, writer, attack, victim, outside)
    with contextlib.suppress(Exception):  # a clear refusal is an answer too; what matters is below
        writer.run(ws)
    assert victim.read_text() == PRECIOUS
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert list(outside.iterdir()) == []
    for link in links:
        if link.is_symlink():  # a writer may replace a link by its own file, never write through it
            assert os.readlink(link) in (str(victim), str(outside))


@pytest.mark.parametrize("writer", WRITERS, ids=[w.name for w in WRITERS])
def test_the_benign_twin_writes_with_the_right_mode(ws: Path, writer: Writer) -> None:
    target = writer.target(ws)
    if writer.existing is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(writer.existing, encoding="utf-8")
        os.chmod(target, 0o640)
    writer.run(ws)
    st = os.lstat(target)
    assert stat.S_ISREG(st.st_mode)
    if writer.holds:
        assert writer.holds in target.read_text(encoding="utf-8")
    if writer.existing is not None:
        assert stat.S_IMODE(st.st_mode) == 0o640  # its own mode, kept
        if writer.existing.startswith("custom"):
            assert target.read_text(encoding="utf-8").startswith(writer.existing)
    elif writer.mode is not None:
        assert stat.S_IMODE(st.st_mode) == writer.mode
    leftovers = [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


# ---------------------------------------------------------------------------- the memory folder


def agent_on(ws: Path, sdk: object) -> None:
    """`Agent(memory_dir=<ws>/.my_agent_core/memory)`: the Python API creates a missing folder."""
    config = AgentConfig(model="m", client=sdk, memory_dir=memory_dir(ws), provider="none")  # type: ignore[arg-type]
    build_agent(config).close()


def chat_in(ws: Path, server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """`my-agent chat` in the workspace (memory on: the folder's, created when missing)."""
    monkeypatch.chdir(ws)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    parser = chat_cli.argparse.ArgumentParser()
    chat_cli.add_arguments(parser)
    args = parser.parse_args(["--model", "m", "--base-url", server.base_url, "--provider", "none"])
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    code = chat_cli.run(args, stdin=io.StringIO("/exit\n"), stdout=io.StringIO())
    return code, err.getvalue()


@pytest.mark.parametrize("link", [".my_agent_core", ".my_agent_core/memory"])
def test_a_planted_layout_link_never_gets_a_memory_folder_made_through_it(
    ws: Path,
    tmp_path: Path,
    link: str,
    client: object,
    fake: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    planted = ws / link
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathRefused, match="not a real folder"):
        agent_on(ws, client)
    code, err = chat_in(ws, fake, monkeypatch)
    assert code == 2 and "my-agent: " in err and "not a real folder" in err
    assert list(outside.iterdir()) == []
    assert planted.is_symlink()


def test_the_benign_twin_makes_the_memory_folder_private_files_ignored(
    ws: Path,
    client: object,
    fake: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent_on(ws, client)
    assert memory_dir(ws).is_dir() and not memory_dir(ws).is_symlink()
    gitignore = (ws / ".my_agent_core" / ".gitignore").read_text(encoding="utf-8")
    assert PRIVATE_PATTERNS[-1] in gitignore
    other = ws / "other"
    other.mkdir()
    code, err = chat_in(other, fake, monkeypatch)
    assert code == 0, err
    assert memory_dir(other).is_dir()
    assert PRIVATE_PATTERNS[-1] in (other / ".my_agent_core" / ".gitignore").read_text()


def test_a_folder_the_user_names_is_made_as_given(
    tmp_path: Path,
    client: object,
) -> None:
    """Outside a workspace's layout (`--memory-dir`, a test's folder) the folder and its parents
    are created where the user said, no `.gitignore` added anywhere."""
    named = tmp_path / "notes" / "agent-memory"
    config = AgentConfig(model="m", client=client, memory_dir=named, provider="none")  # type: ignore[arg-type]
    build_agent(config).close()
    assert named.is_dir()
    assert not (tmp_path / "notes" / ".gitignore").exists()
