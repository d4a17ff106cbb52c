"""The memory errors' root and their exit codes: by class, whatever the order of `except` clauses.

`MemoryLockTimeout` and `MemoryWriteError` are `MemoryEditError`s, so `ValueError`s (the contract), and
a refused edit exits 1 while a lock timeout or a refused write exits 3 (README). These tests raise each
error class through the real command line and check the code, and show that the table's order (the
order clauses would have had) cannot change it.
"""

from __future__ import annotations

import fcntl
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from my_agent_core import cli
from my_agent_core.memory import edits, errors, undo
from my_agent_core.memory.errors import (
    EXIT_CODES,
    MemoryChanged,
    MemoryEditError,
    MemoryLockTimeout,
    MemoryStoreError,
    MemoryWriteError,
    exit_code,
)
from my_agent_core.memory.lock import LockHolder
from my_agent_core.memory.store import MemoryStore

#: The README's exit codes, written out here on purpose (not read from the table under test).
README_CODES: dict[type[MemoryStoreError], int] = {
    MemoryEditError: 1,
    MemoryChanged: 1,
    edits.NotFound: 1,
    undo.CannotRevert: 1,
    MemoryLockTimeout: 3,
    MemoryWriteError: 3,
}


def _every_error_class() -> Iterator[type[MemoryStoreError]]:
    seen: list[type[MemoryStoreError]] = [MemoryStoreError]
    while seen:
        cls = seen.pop()
        yield cls
        seen.extend(cls.__subclasses__())


def _instance(cls: type[MemoryStoreError]) -> MemoryStoreError:
    if issubclass(cls, MemoryLockTimeout):
        return cls("MEMORY.md is locked by pid 1 for 1 s", LockHolder(1, "init"))
    return cls(f"{cls.__name__} happened")


def test_the_errors_have_one_root_and_edit_errors_stay_value_errors() -> None:
    for cls in (MemoryEditError, MemoryChanged, MemoryLockTimeout, MemoryWriteError):
        assert issubclass(cls, MemoryStoreError)
        assert issubclass(cls, ValueError)  # docs/contract.md: a failed edit is a ValueError
        assert issubclass(cls, MemoryEditError)  # the tool and the server catch these as refusals
    assert not issubclass(MemoryStoreError, ValueError)
    assert not issubclass(errors.Unavailable, MemoryStoreError)  # internal: never reaches a caller


def test_every_memory_error_class_has_the_readme_exit_code() -> None:
    classes = list(_every_error_class())
    assert set(README_CODES) <= set(classes)
    for cls in classes:
        code = exit_code(_instance(cls))
        assert code in (1, 3), cls
        if cls in README_CODES:
            assert code == README_CODES[cls], cls
    assert EXIT_CODES[MemoryLockTimeout] == cli.EXIT_SYSTEM
    assert EXIT_CODES[MemoryWriteError] == cli.EXIT_SYSTEM
    assert EXIT_CODES[MemoryEditError] == cli.EXIT_FINDINGS


def test_no_order_of_the_table_changes_an_exit_code() -> None:
    """The table stands in for the `except` clauses: in any order, each class keeps its code (the
    old clauses gave a lock timeout 1 when `except MemoryEditError` came first)."""
    items = list(EXIT_CODES.items())
    expected = {cls: exit_code(_instance(cls)) for cls in _every_error_class()}
    for order in itertools.permutations(items):
        table = dict(order)
        for cls, code in expected.items():
            assert exit_code(_instance(cls), table) == code, (cls, [c.__name__ for c in table])


def test_a_class_of_its_own_takes_its_nearest_named_base() -> None:
    class SlowDisk(MemoryWriteError):
        pass

    class Quirk(MemoryEditError):
        pass

    assert exit_code(SlowDisk("x")) == 3
    assert exit_code(Quirk("x")) == 1


@pytest.mark.parametrize("cls", sorted(README_CODES, key=lambda c: c.__name__))
def test_the_command_line_exits_with_the_code_of_each_class(
    cls: type[MemoryStoreError],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = _instance(cls)

    def refuse(self: MemoryStore, target: str, content: str, **_: object) -> str:
        raise error

    monkeypatch.setattr(MemoryStore, "add", refuse)
    code = cli.main(["memory", "add", "a fact", "--dir", str(tmp_path / "memory")])
    assert code == README_CODES[cls]
    assert capsys.readouterr().err == f"my-agent: {error}\n"


def test_a_real_lock_timeout_exits_3_and_a_real_refusal_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same through the store itself, no stand-ins: a held lock, then a remove of nothing."""
    mem_dir = tmp_path / "memory"
    args = ["--dir", str(mem_dir), "--lock-timeout", "0.05"]
    assert cli.main(["memory", "add", "a fact", *args]) == 0
    fd = os.open(mem_dir / ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another open file description: the store must wait
        assert cli.main(["memory", "add", "another fact", *args]) == 3
        assert "is locked by" in capsys.readouterr().err
    finally:
        os.close(fd)
    assert cli.main(["memory", "remove", "no such entry", *args]) == 1
    assert "No entry in MEMORY.md" in capsys.readouterr().err
    assert cli.main(["memory", "add", "another fact", *args]) == 0
