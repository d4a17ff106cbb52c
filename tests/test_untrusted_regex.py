"""The model's regex cannot hang search_text: Python's backtracking `re` runs in a child process
killed at the call's deadline (pure-Python search, unsaved buffers without ripgrep), and with
ripgrep the unsaved buffers are searched by ripgrep itself. Each attack has a benign twin.

A hang fails these tests by pytest-timeout; nothing here measures time."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from my_agent_core.coding_tools.search import SearchStopped, search
from my_agent_core.coding_tools.untrusted_regex import RegexProcess, RegexRefused, RegexStopped
from tests.test_coding_tools_helpers import *  # noqa: F403
from tests.test_coding_tools_helpers import RG, Workspace

pytestmark = pytest.mark.timeout(90)

EVIL = r"(a+)+$"
LINE = "a" * 40 + "b"  # `(a+)+$` tries 2**40 splits of it before giving up


def test_a_catastrophic_regex_in_the_python_search_is_stopped(workspace: Workspace) -> None:
    if workspace.backend != "python":
        pytest.skip("ripgrep's engine is linear: covered below")
    workspace.build(use_ripgrep=False, search_timeout_s=2)
    workspace.write("evil.txt", LINE + "\n")
    workspace.write("twin.txt", "aaab\n")
    error = workspace.fails("search_text", query=EVIL, regex=True)
    assert "took longer than 2 s" in error and "(a+)+" in error and "regex=false" in error
    # the benign twin of the same shape still searches
    text = workspace.ok("search_text", query=r"a+b$", regex=True)
    assert text.splitlines()[1:] == [f"evil.txt:1: {LINE}", "twin.txt:1: aaab"]


def test_a_catastrophic_regex_in_an_unsaved_buffer_is_stopped(workspace: Workspace) -> None:
    workspace.build(search_timeout_s=2)
    workspace.write("notes.txt", "old\n")
    workspace.buffers.texts[workspace.root / "notes.txt"] = LINE + "\n" + "aaaa\n"
    if workspace.backend == "rg":  # ripgrep reads the buffer: no backtracking at all
        text = workspace.ok("search_text", query=EVIL, regex=True)
        assert text.splitlines()[1:] == [
            "notes.txt:2: aaaa",
            "[searched the unsaved editor text of notes.txt]",
        ]
    else:
        error = workspace.fails("search_text", query=EVIL, regex=True)
        assert "took longer than 2 s" in error
    text = workspace.ok("search_text", query=r"^a{4}$", regex=True)  # the benign twin
    assert text.splitlines()[1] == "notes.txt:2: aaaa"


@pytest.mark.skipif(RG is None, reason="ripgrep is not installed")
def test_buffers_and_files_give_ripgreps_answers(workspace: Workspace) -> None:
    workspace.write("a.py", "def helper():\n    return 1\n")
    workspace.write("b.py", "x = helper()\n")
    workspace.buffers.texts[workspace.root / "b.py"] = "y = helper()  \nhelper\n"
    text = workspace.ok("search_text", query=r"helper\(\)", regex=True)
    assert text.splitlines()[1:] == [
        "a.py:1: def helper():",
        "b.py:1: y = helper()",
        "[searched the unsaved editor text of b.py]",
    ]


def test_the_deadline_holds_for_the_whole_call(tmp_path: Path) -> None:
    """Many files each within the old per-file check: the call still ends by its deadline."""
    root = tmp_path.resolve()
    for n in range(50):
        (root / f"f{n}.txt").write_text(LINE + "\n")
    with pytest.raises(SearchStopped, match="regex-timeout"):
        search(
            root, root, EVIL, regex=True, glob=None, rg=None, max_per_file=5,
            collect_limit=100, max_filesize=10**6, deadline=time.monotonic() + 1.5,
        )  # fmt: skip


def test_a_cancelled_turn_stops_the_regex(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "evil.txt").write_text(LINE + "\n")
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(SearchStopped, match="cancelled"):
        search(
            root, root, EVIL, regex=True, glob=None, rg=None, max_per_file=5,
            collect_limit=100, max_filesize=10**6, cancel=cancel, timeout_s=600,
        )  # fmt: skip


def test_the_child_refuses_what_python_cannot_compile() -> None:
    deadline = time.monotonic() + 30
    for bad in ("(", "(" * 100_000 + ")" * 100_000, "a{2,1}"):
        with pytest.raises(RegexRefused):
            RegexProcess(bad, limit=3, deadline=deadline)
    with RegexProcess(r"b\d", limit=3, deadline=deadline) as process:  # the benign twin
        assert process.lines(b"ab1\nno\nb2 b3\n") == [(1, "ab1", 1), (3, "b2 b3", 0)]
        assert process.lines("Ωb9\n".encode()) == [(1, "Ωb9", 1)]


def test_a_stopped_child_answers_stopped_not_empty() -> None:
    with RegexProcess(EVIL, limit=3, deadline=time.monotonic() + 1) as process:
        with pytest.raises(RegexStopped, match="timeout"):
            process.lines(LINE.encode())
        assert process.stopped == "timeout"
