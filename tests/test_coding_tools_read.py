"""read_file: numbered windows, unsaved buffers first, and every file it must cut or refuse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.test_coding_tools_helpers import *  # noqa: F403
from tests.test_coding_tools_helpers import Workspace


@pytest.fixture
def backend() -> str:
    return "python"  # reading does not search: one backend is enough


def test_reads_a_file_with_line_numbers(workspace: Workspace) -> None:
    workspace.write("src/app.py", "import os\n\nprint(os.getcwd())\n")
    text = workspace.ok("read_file", path="src/app.py")
    assert text.splitlines() == [
        "src/app.py: lines 1-3 of 3",
        "     1\timport os",
        "     2\t",
        "     3\tprint(os.getcwd())",
    ]


def test_line_ranges_and_reading_on(workspace: Workspace) -> None:
    workspace.write("big.txt", "".join(f"line {n}\n" for n in range(1, 2501)))
    first = workspace.ok("read_file", path="big.txt")
    assert first.splitlines()[0] == "big.txt: lines 1-1,000 of 2,500"
    assert "start_line=1001" in first.splitlines()[-1]
    middle = workspace.ok("read_file", path="big.txt", start_line=1200, end_line=1202)
    assert middle.splitlines()[1:] == [
        "  1200\tline 1200",
        "  1201\tline 1201",
        "  1202\tline 1202",
    ]
    tail = workspace.ok("read_file", path="big.txt", start_line=2499)
    assert tail.splitlines()[1:] == ["  2499\tline 2499", "  2500\tline 2500"]
    assert "past the end" in workspace.fails("read_file", path="big.txt", start_line=2501)
    assert "counts from 1" in workspace.fails("read_file", path="big.txt", start_line=0)
    assert "before start_line" in workspace.fails(
        "read_file", path="big.txt", start_line=5, end_line=4
    )


def test_character_cap_cuts_the_window_and_says_where_to_go_on(workspace: Workspace) -> None:
    workspace.build(read_max_chars=2000)
    workspace.write("wide.txt", "".join(f"{n:04d} " + "x" * 90 + "\n" for n in range(1, 101)))
    text = workspace.ok("read_file", path="wide.txt")
    lines = text.splitlines()
    assert len(text) < 2300
    shown = int(lines[-2].split("\t")[0])
    assert f"start_line={shown + 1}" in lines[-1]


def test_long_line_is_cut_with_a_note(workspace: Workspace) -> None:
    workspace.write("min.js", "a" * 10_000 + "\nshort\n")
    text = workspace.ok("read_file", path="min.js")
    first = text.splitlines()[1]
    assert "[line cut: 10,000 chars]" in first and len(first) < 2100
    assert text.splitlines()[2] == "     2\tshort"


def test_unsaved_buffer_is_read_instead_of_the_disk(workspace: Workspace) -> None:
    path = workspace.write("notes.md", "on disk\n")
    workspace.buffers.texts[path] = "typed but not saved\n"
    text = workspace.ok("read_file", path="notes.md")
    assert "typed but not saved" in text and "on disk" not in text
    assert "(unsaved text from the editor)" in text.splitlines()[0]
    # A buffer of a file not yet saved at all is readable too.
    fresh = workspace.root / "fresh.py"
    workspace.buffers.texts[fresh] = "x = 1\n"
    assert "x = 1" in workspace.ok("read_file", path="fresh.py")


def test_crlf_bom_and_empty_files(workspace: Workspace) -> None:
    workspace.write("win.txt", b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert workspace.ok("read_file", path="win.txt").splitlines()[1:] == [
        "     1\tone",
        "     2\ttwo",
    ]
    workspace.write("empty.txt", "")
    assert workspace.ok("read_file", path="empty.txt") == "empty.txt is empty."
    workspace.write("noeol.txt", "last")
    assert workspace.ok("read_file", path="noeol.txt").splitlines()[1:] == ["     1\tlast"]


def test_non_utf8_text_is_shown_with_a_note(workspace: Workspace) -> None:
    workspace.write("latin1.txt", "café\n".encode("latin-1"))
    text = workspace.ok("read_file", path="latin1.txt")
    assert "caf\ufffd" in text and "not valid UTF-8" in text


def test_binary_folder_missing_and_special_files_are_refused(workspace: Workspace) -> None:
    workspace.write("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary file" in workspace.fails("read_file", path="logo.png")
    (workspace.root / "src").mkdir()
    assert "use list_files" in workspace.fails("read_file", path="src")
    assert "does not exist" in workspace.fails("read_file", path="nope.py")
    fifo = workspace.root / "pipe"
    os.mkfifo(fifo)
    assert "FIFO" in workspace.fails("read_file", path="pipe")  # and it did not block
    assert "Missing required argument `path`" in workspace.fails("read_file")
    assert "must be integer" in workspace.fails("read_file", path="x", start_line="3")


def test_huge_file_is_read_up_to_the_cap_with_a_note(workspace: Workspace) -> None:
    workspace.build(read_max_bytes=64 * 1024)
    workspace.write("huge.log", "".join(f"entry {n}\n" for n in range(100_000)))
    text = workspace.ok("read_file", path="huge.log", start_line=1, end_line=2)
    assert text.splitlines()[0].startswith("huge.log: lines 1-2 of the first ")
    error = workspace.fails("read_file", path="huge.log", start_line=90_000)
    assert "search_text" in error and "reaches only its first" in error


@pytest.mark.parametrize("bad", ["../outside.txt", "src/../../outside.txt"])
def test_paths_that_climb_out_are_refused(workspace: Workspace, bad: str) -> None:
    (workspace.root.parent / "outside.txt").write_text("secret\n")
    error = workspace.fails("read_file", path=bad)
    assert "climbs out" in error and "secret" not in error


def test_absolute_paths_and_symlinks_out_are_refused(workspace: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    assert "absolute path outside" in workspace.fails("read_file", path=str(secret))
    (workspace.root / "leak.txt").symlink_to(secret)
    (workspace.root / "up").symlink_to(tmp_path, target_is_directory=True)
    for path in ("leak.txt", "up/secret.txt"):
        error = workspace.fails("read_file", path=path)
        assert "symbolic link" in error and "top secret" not in error
    # An absolute path inside, and a link that stays inside, are fine.
    workspace.write("real.txt", "inside\n")
    (workspace.root / "alias.txt").symlink_to(workspace.root / "real.txt")
    assert "inside" in workspace.ok("read_file", path=str(workspace.root / "real.txt"))
    assert workspace.ok("read_file", path="alias.txt").startswith("real.txt: lines 1-1 of 1")


def test_a_symlinked_workspace_folder_works(tmp_path: Path) -> None:
    from my_agent_core.coding_tools import DiskApplier, make_workspace_tools
    from tests.test_coding_tools_helpers import StubApprover

    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src" / "a.py").write_text("a = 1\n")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    tools = {
        t.name: t
        for t in make_workspace_tools(link, approver=StubApprover(), applier=DiskApplier())
    }
    assert "a = 1" in tools["read_file"].execute({"path": "src/a.py"}).content
    assert "src/a.py" in tools["list_files"].execute({}).content
