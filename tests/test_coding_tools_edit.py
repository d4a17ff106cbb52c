"""edit_file and write_file: exact single-occurrence edits, the approval every change goes through,
and the disk applier that never half-writes or overwrites what changed meanwhile."""

from __future__ import annotations

import errno
import stat
import threading
from pathlib import Path

import pytest

from my_agent_core import safe_write
from my_agent_core.coding_tools import ApprovalRequest, Decision, DiskApplier, FileChange
from my_agent_core.coding_tools.seams import ApplyConflict
from tests.test_coding_tools_helpers import *  # noqa: F403
from tests.test_coding_tools_helpers import Workspace


@pytest.fixture
def backend() -> str:
    return "python"  # editing does not search: one backend is enough


SOURCE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def test_edit_replaces_the_one_occurrence_after_approval(workspace: Workspace) -> None:
    path = workspace.write("calc.py", SOURCE)
    text = workspace.ok(
        "edit_file", path="calc.py", old_text="    return a - b", new_text="    return a - b  # ok"
    )
    assert path.read_text() == SOURCE.replace("a - b", "a - b  # ok")
    assert text.startswith("Edited calc.py")
    assert "     6\t    return a - b  # ok" in text
    [request] = workspace.approver.requests
    assert request.kind == "edit" and request.title == "Edit calc.py"
    assert request.path == path and request.relpath == "calc.py"
    assert request.new_text == path.read_text()
    assert request.detail.startswith("--- a/calc.py\n+++ b/calc.py\n")
    assert "-    return a - b\n+    return a - b  # ok\n" in request.detail
    [(heard, decision)] = workspace.decisions
    assert heard is request and decision == Decision.allow("user")


def test_not_found_and_ambiguous_are_errors_that_change_nothing(workspace: Workspace) -> None:
    path = workspace.write("calc.py", SOURCE)
    missing = workspace.fails("edit_file", path="calc.py", old_text="return a * b", new_text="x")
    assert "not found in calc.py" in missing and "copy old_text exactly" in missing
    ambiguous = workspace.fails("edit_file", path="calc.py", old_text="(a, b):", new_text="()")
    assert "occurs 2 times" in ambiguous and "lines 1, 5" in ambiguous
    indented = workspace.fails(
        "edit_file", path="calc.py", old_text="def add(a, b):\n  return a + b", new_text="x"
    )
    assert "Lines 1-2 match it except for whitespace" in indented
    numbered = workspace.fails(
        "edit_file", path="calc.py", old_text="     2\t    return a + b", new_text="x"
    )
    assert "line numbers" in numbered
    assert "same" in workspace.fails("edit_file", path="calc.py", old_text="a", new_text="a")
    assert "old_text is empty" in workspace.fails(
        "edit_file", path="calc.py", old_text="", new_text="x"
    )
    assert "write_file" in workspace.fails("edit_file", path="new.py", old_text="a", new_text="b")
    assert path.read_text() == SOURCE
    assert workspace.approver.requests == []


def test_denied_cancelled_and_failing_approvals_change_nothing(workspace: Workspace) -> None:
    path = workspace.write("calc.py", SOURCE)
    edit = {"path": "calc.py", "old_text": "a + b", "new_text": "b + a"}

    workspace.approver.decision = Decision.deny("user", "keep the order")
    declined = workspace.fails("edit_file", **edit)
    assert "declined" in declined and "keep the order" in declined and "Do not retry" in declined

    workspace.approver.decision = Decision.deny("cancelled")
    assert "cancelled" in workspace.fails("edit_file", **edit)

    def broken(request: ApprovalRequest) -> Decision:
        raise ConnectionError("client went away")

    workspace.approver.decide = broken
    failed = workspace.fails("edit_file", **edit)
    assert "not approved" in failed and "client went away" in failed
    assert [d.reason for _, d in workspace.decisions] == ["user", "cancelled", "error"]

    workspace.approver.decide = None
    workspace.approver.decision = Decision.allow("user")
    workspace.cancel.set()  # a stopped turn refuses without asking
    assert "cancelled" in workspace.fails("edit_file", **edit)
    assert len(workspace.approver.requests) == 3
    assert path.read_text() == SOURCE


def test_settings_can_pre_approve_edits(workspace: Workspace) -> None:
    path = workspace.write("calc.py", SOURCE)
    workspace.build(approve_edits=True)
    workspace.ok("edit_file", path="calc.py", old_text="a + b", new_text="b + a")
    assert "b + a" in path.read_text()
    assert workspace.approver.requests == []
    assert [d.reason for _, d in workspace.decisions] == ["setting"]


def test_write_file_creates_folders_and_overwrites_with_a_diff(workspace: Workspace) -> None:
    assert workspace.ok("write_file", path="pkg/sub/mod.py", content="x = 1\n") == (
        "Created pkg/sub/mod.py (1 line)."
    )
    created = workspace.approver.requests[-1]
    assert created.title == "Create pkg/sub/mod.py" and created.detail.startswith("--- /dev/null")
    assert (workspace.root / "pkg/sub/mod.py").read_text() == "x = 1\n"
    assert workspace.ok("write_file", path="pkg/sub/mod.py", content="x = 2\ny = 3") == (
        "Wrote pkg/sub/mod.py (2 lines)."
    )
    overwrite = workspace.approver.requests[-1]
    assert overwrite.title == "Overwrite pkg/sub/mod.py"
    assert "-x = 1\n+x = 2\n+y = 3\n\\ No newline at end of file\n" in overwrite.detail
    same = workspace.ok("write_file", path="pkg/sub/mod.py", content="x = 2\ny = 3")
    assert "nothing was written" in same and len(workspace.approver.requests) == 2
    workspace.write("afile", "x")
    assert "is a file, not a folder" in workspace.fails("write_file", path="afile/x.py", content="")
    (workspace.root / "adir").mkdir()
    assert "is a folder" in workspace.fails("write_file", path="adir", content="")


def test_memory_private_and_git_folders_are_not_written(workspace: Workspace) -> None:
    memory = workspace.write(".my_agent_core/memory/MEMORY.md", "an entry\n")
    for path in (
        ".my_agent_core/memory/MEMORY.md",
        ".my_agent_core/memory/USER.md",
        ".MY_AGENT_CORE/Memory/x",
    ):
        assert "`memory` tool" in workspace.fails("write_file", path=path, content="hijack")
    assert "`memory` tool" in workspace.fails(
        "edit_file", path=".my_agent_core/memory/MEMORY.md", old_text="an entry", new_text="x"
    )
    # Through a link inside the folder, too.
    (workspace.root / "notes.md").symlink_to(memory)
    assert "`memory` tool" in workspace.fails("write_file", path="notes.md", content="x")
    assert "private data" in workspace.fails(
        "write_file", path=".my_agent_core/sessions/s.json", content="{}"
    )
    assert ".git" in workspace.fails("write_file", path=".git/hooks/pre-commit", content="rm -rf ~")
    assert memory.read_text() == "an entry\n"
    assert workspace.approver.requests == []


def test_writes_through_links_out_are_refused(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace.root / "out").symlink_to(outside, target_is_directory=True)
    assert "symbolic link" in workspace.fails("write_file", path="out/new.py", content="x")
    assert "climbs out" in workspace.fails("write_file", path="../evil.py", content="x")
    assert "absolute path outside" in workspace.fails(
        "write_file", path=str(outside / "x.py"), content="x"
    )
    assert list(outside.iterdir()) == []


def test_edit_keeps_crlf_bom_and_mode(workspace: Workspace) -> None:
    path = workspace.write("win.bat", b"\xef\xbb\xbf@echo off\r\necho one\r\n")
    path.chmod(0o751)
    workspace.ok(
        "edit_file", path="win.bat", old_text="echo one\n", new_text="echo one\necho two\n"
    )
    assert path.read_bytes() == b"\xef\xbb\xbf@echo off\r\necho one\r\necho two\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert "\r" not in workspace.approver.requests[-1].detail
    workspace.ok("write_file", path="win.bat", content="@echo off\n")
    assert path.read_bytes() == b"\xef\xbb\xbf@echo off\r\n"


def test_non_utf8_and_binary_files_are_not_rewritten(workspace: Workspace) -> None:
    latin = workspace.write("latin.txt", "café\n".encode("latin-1"))
    assert "not valid UTF-8" in workspace.fails(
        "edit_file", path="latin.txt", old_text="caf", new_text="x"
    )
    workspace.write("blob.bin", b"\x00\x01")
    assert "binary" in workspace.fails("write_file", path="blob.bin", content="text")
    assert latin.read_bytes() == "café\n".encode("latin-1")


def test_edits_are_computed_against_the_unsaved_buffer(workspace: Workspace) -> None:
    path = workspace.write("app.py", "value = 1\n")
    workspace.buffers.texts[path] = "value = 1\nunsaved = True\n"
    seen: list[FileChange] = []

    class EditorApplier:
        def apply(self, change: FileChange) -> None:
            seen.append(change)

    workspace.applier = EditorApplier()  # type: ignore[assignment]
    workspace.build()
    workspace.ok("edit_file", path="app.py", old_text="unsaved = True", new_text="unsaved = False")
    [change] = seen
    assert change.source == "buffer" and change.before == "value = 1\nunsaved = True\n"
    assert change.after == "value = 1\nunsaved = False\n"
    assert "+unsaved = False" in change.diff
    # The disk applier refuses a buffer-based change: the disk does not hold that text.
    with pytest.raises(ApplyConflict):
        DiskApplier().apply(change)
    assert path.read_text() == "value = 1\n"


def test_a_file_changed_while_waiting_for_approval_is_not_overwritten(workspace: Workspace) -> None:
    path = workspace.write("calc.py", SOURCE)

    def user_types_meanwhile(request: ApprovalRequest) -> Decision:
        path.write_text(SOURCE + "# typed meanwhile\n")
        return Decision.allow("user")

    workspace.approver.decide = user_types_meanwhile
    error = workspace.fails("edit_file", path="calc.py", old_text="a + b", new_text="b + a")
    assert "changed while the change waited for approval" in error
    assert path.read_text() == SOURCE + "# typed meanwhile\n"


def test_model_text_with_lone_surrogates_is_cleaned(workspace: Workspace) -> None:
    workspace.ok("write_file", path="emoji.txt", content="half \udcff emoji\n")
    assert (workspace.root / "emoji.txt").read_text(encoding="utf-8") == "half ? emoji\n"


def test_atomic_write_leaves_the_original_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("original\n")
    change = FileChange(target, "keep.txt", "original\n", "new\n", "disk", "")

    def disk_full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safe_write.os, "fsync", disk_full)
    with pytest.raises(Exception, match="could not be written"):
        DiskApplier().apply(change)
    assert target.read_text() == "original\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]  # no temp file left


def test_concurrent_edits_of_different_files_all_land(workspace: Workspace) -> None:
    for n in range(8):
        workspace.write(f"f{n}.txt", f"value {n}\n")
    errors: list[str] = []

    def edit(n: int) -> None:
        result = workspace.call(
            "edit_file", path=f"f{n}.txt", old_text=f"value {n}", new_text=f"v{n}"
        )
        if not result.ok:
            errors.append(result.error)

    threads = [threading.Thread(target=edit, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [(workspace.root / f"f{n}.txt").read_text() for n in range(8)] == [
        f"v{n}\n" for n in range(8)
    ]
