"""Undo after hand edits is never stuck: a change whose entry was edited by hand since cannot be
reverted, so undo names it, marks it skipped and moves on; a change that still can be reverted is
refused with its id (the user decides) and not skipped (the benign twin). Store and CLI; the
editor's request (`myAgent/memory/undo`) is tested in tests/lsp/test_memory_undo.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from my_agent_core.memory import ENTRY_DELIMITER, MemoryEditError, MemoryStore


@pytest.fixture
def mem_dir(tmp_path: Path) -> Path:
    return tmp_path / "ws" / ".my_agent_core" / "memory"


def on_disk(mem_dir: Path) -> list[str]:
    text = (mem_dir / "MEMORY.md").read_text(encoding="utf-8")
    return [e for e in text.rstrip("\n").split(ENTRY_DELIMITER) if e]


def hand_edit(mem_dir: Path, entries: list[str]) -> None:
    (mem_dir / "MEMORY.md").write_text(ENTRY_DELIMITER.join(entries) + "\n", encoding="utf-8")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
    )


def test_a_change_whose_entry_was_edited_by_hand_is_named_and_passed_over(mem_dir: Path) -> None:
    store = MemoryStore(mem_dir)
    store.add("memory", "keep")
    store.add("memory", "original wording")
    keep, edited = store.log()
    hand_edit(mem_dir, ["keep", "reworded by hand"])
    with pytest.raises(MemoryEditError) as info:
        store.undo()
    message = str(info.value)
    assert "original wording" in message and edited.id in message  # says what it cannot undo
    assert "no longer in MEMORY.md" in message and "changed outside the history" in message
    assert "marked skipped" in message
    assert on_disk(mem_dir) == ["keep", "reworded by hand"]  # nothing written
    skip = store.log()[-1]
    assert skip.action == "skip" and skip.skips == edited.id
    # The next undo is about the change before it, not the same one again.
    with pytest.raises(MemoryEditError, match="changed outside the history") as again:
        store.undo()
    assert keep.id in str(again.value) and "original wording" not in str(again.value)
    assert store.log()[-1] == skip  # "keep" could still be reverted: refused, not skipped
    store.undo(keep.id)  # the user's choice: revert it on top of the hand edit
    assert on_disk(mem_dir) == ["reworded by hand"]
    with pytest.raises(MemoryEditError, match="Nothing to undo"):
        store.undo()


def test_a_hand_edit_of_another_entry_skips_nothing(mem_dir: Path) -> None:
    """The benign twin: the change's own entry is intact, so it can still be undone; a plain undo
    asks for the id rather than passing it over."""
    store = MemoryStore(mem_dir)
    store.add("memory", "keep")
    store.add("memory", "mine")
    mine = store.log()[-1]
    hand_edit(mem_dir, ["keep (edited)", "mine"])
    with pytest.raises(MemoryEditError, match="changed outside the history") as info:
        store.undo()
    assert mine.id in str(info.value) and "skipped" not in str(info.value)
    assert [r.action for r in store.log()] == ["add", "add"]
    store.undo(mine.id)
    assert on_disk(mem_dir) == ["keep (edited)"]


def test_undo_by_id_of_an_entry_edited_since_is_passed_over_too(mem_dir: Path) -> None:
    store = MemoryStore(mem_dir)
    store.add("memory", "first")
    store.add("memory", "second")
    first, second = store.log()
    hand_edit(mem_dir, ["first", "second, reworded"])
    with pytest.raises(MemoryEditError, match="marked skipped") as info:
        store.undo(second.id)
    assert '"second"' in str(info.value)
    # A later plain undo moves past it; the history explains the file up to "second" only if the
    # hand edit is undone, so "first" is offered by id.
    with pytest.raises(MemoryEditError, match=first.id):
        store.undo()
    hand_edit(mem_dir, ["first", "second"])  # the user puts the entry back as the change left it
    store.undo(second.id)  # a skipped change can still be undone by its id
    assert on_disk(mem_dir) == ["first"]


def test_an_undone_and_skipped_history_ends_in_nothing_to_undo(mem_dir: Path) -> None:
    store = MemoryStore(mem_dir)
    store.add("memory", "only")
    hand_edit(mem_dir, ["only, edited"])
    with pytest.raises(MemoryEditError, match="marked skipped"):
        store.undo()
    with pytest.raises(MemoryEditError, match="Nothing to undo"):
        store.undo()
    assert on_disk(mem_dir) == ["only, edited"]


def test_the_cli_says_what_it_cannot_undo_and_moves_on(mem_dir: Path) -> None:
    d = str(mem_dir)
    for text in ("keep", "original wording"):
        assert run("memory", "add", text, "--dir", d).returncode == 0
    keep_id, edited_id = (
        r["id"] for r in json.loads(run("memory", "log", "--json", "--dir", d).stdout)
    )
    hand_edit(mem_dir, ["keep", "reworded by hand"])
    first = run("memory", "undo", "--dir", d)
    assert first.returncode == 1
    assert edited_id in first.stderr and "marked skipped" in first.stderr
    second = run("memory", "undo", "--dir", d)
    assert second.returncode == 1
    assert keep_id in second.stderr and edited_id not in second.stderr
    assert run("memory", "undo", keep_id, "--dir", d).returncode == 0
    assert on_disk(mem_dir) == ["reworded by hand"]
    log = run("memory", "log", "--dir", d).stdout
    assert "skip" in log
