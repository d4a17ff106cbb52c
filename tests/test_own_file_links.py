"""MEMORY.md linked (hard or symbolic link) to history.jsonl inside its folder: every edit is
refused, no reader shows the journal as memory (the store and the prompt, the panel's fallback
reader, `my-agent lint`, the MCP resource), the history is never written through the link, and once
the files are separate again undo works on the recorded history (a change whose entry is gone is
named and passed over). The benign twin: a MEMORY.md symlinked to a plain file of the folder that is
not one of the store's own files is read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from my_agent_core.lsp.folders import read_memory_text
from my_agent_core.mcp.view import resource_text
from my_agent_core.memory import MemoryEditError, MemoryStore
from my_agent_core.memory.own_files import check_separate
from my_agent_core.paths import PathRefused

JOURNAL_WORDS = ('"action"', '"before_digest"', "fact two")  # what the journal's text holds


@pytest.fixture
def mem_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "ws" / ".my_agent_core" / "memory"
    store = MemoryStore(folder)
    store.add("memory", "fact one")
    store.add("user", "profile one")
    store.add("memory", "fact two")
    store.close()
    return folder


def link(mem_dir: Path, how: str) -> None:
    (mem_dir / "MEMORY.md").unlink()
    if how == "symlink":
        (mem_dir / "MEMORY.md").symlink_to("history.jsonl")
    else:
        os.link(mem_dir / "history.jsonl", mem_dir / "MEMORY.md")


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", "lint", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_memory_linked_to_the_journal_is_refused_and_never_shown(mem_dir: Path, how: str) -> None:
    link(mem_dir, how)
    journal = (mem_dir / "history.jsonl").read_bytes()
    store = MemoryStore(mem_dir)
    store.load_from_disk()
    assert store.entries("memory") == [] and "are one file" in (store.error("memory") or "")
    prompt = store.format_all_for_system_prompt()
    assert not any(word in prompt for word in JOURNAL_WORDS) and "profile one" in prompt
    for edit in (
        lambda: store.add("memory", "x"),
        lambda: store.add("user", "y"),
        lambda: store.remove("memory", "fact"),
        lambda: store.undo(),
    ):
        with pytest.raises(MemoryEditError, match="are one file"):
            edit()
    text, error = read_memory_text(mem_dir, "memory")  # the panel's reader without a store
    assert text is None and error is not None and "are one file" in error
    assert read_memory_text(mem_dir, "user") == ("profile one\n", None)
    with pytest.raises(PathRefused, match="are one file"):
        resource_text(store, "memory")
    linted = lint(mem_dir / "MEMORY.md")
    assert linted.returncode == 2 and "are one file" in linted.stdout
    assert not any(word in linted.stdout for word in ('"before_digest"', "fact two"))
    assert [r.action for r in store.log()] == ["add", "add", "add"]  # the history stays readable
    assert (mem_dir / "history.jsonl").read_bytes() == journal  # never written through the link

    # The user makes them separate files again: undo works on the recorded history. "fact two"
    # and "fact one" are gone with the old MEMORY.md, so those changes are named and passed over.
    (mem_dir / "MEMORY.md").unlink()
    store = MemoryStore(mem_dir)
    with pytest.raises(MemoryEditError, match=r'"fact two".*marked skipped'):
        store.undo()
    undone = store.undo()  # the USER.md change, which the history still explains
    assert undone.target == "user"
    assert (mem_dir / "USER.md").read_text(encoding="utf-8") == ""
    with pytest.raises(MemoryEditError, match=r'"fact one".*marked skipped'):
        store.undo()
    with pytest.raises(MemoryEditError, match="Nothing to undo"):
        store.undo()


def test_a_memory_file_linked_to_a_plain_file_of_the_folder_is_read(mem_dir: Path) -> None:
    """The benign twin: a link to a file that is not one of the store's own files is no alias."""
    (mem_dir / "notes.md").write_text("fact from notes\n", encoding="utf-8")
    (mem_dir / "MEMORY.md").unlink()
    (mem_dir / "MEMORY.md").symlink_to("notes.md")
    check_separate(mem_dir, "MEMORY.md")
    assert read_memory_text(mem_dir, "memory") == ("fact from notes\n", None)
    linted = lint(mem_dir / "MEMORY.md")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    store = MemoryStore(mem_dir)
    store.load_from_disk()
    assert store.entries("memory") == ["fact from notes"]


def test_check_separate_names_the_pair_and_ignores_other_names(tmp_path: Path) -> None:
    (tmp_path / "history.jsonl").write_text("{}\n", encoding="utf-8")
    os.link(tmp_path / "history.jsonl", tmp_path / "USER.md")
    with pytest.raises(PathRefused, match=r"USER\.md and history\.jsonl"):
        check_separate(tmp_path, "USER.md")
    check_separate(tmp_path, "MEMORY.md")  # not one of the pair
    check_separate(tmp_path, "README.md")  # not an own file
