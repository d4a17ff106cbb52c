"""The tool set as the model sees it (names, schemas, descriptions), the approval gate's edge cases,
and how ripgrep is found."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from my_agent_core.coding_tools import (
    TOOL_NAMES,
    ApprovalGate,
    ApprovalRequest,
    Decision,
    DiskApplier,
    editor_ripgrep_paths,
    find_ripgrep,
    make_workspace_tools,
    workspace_instructions,
)
from tests.test_coding_tools_helpers import StubApprover

EDIT = ApprovalRequest(kind="edit", title="Edit a.py", detail="--- a/a.py\n+++ b/a.py\n")


def test_tool_names_schemas_and_descriptions(tmp_path: Path) -> None:
    tools = make_workspace_tools(tmp_path, approver=StubApprover(), applier=DiskApplier())
    assert [t.name for t in tools] == list(TOOL_NAMES)
    schemas = {t.name: t.schema["function"]["parameters"] for t in tools}
    assert schemas["read_file"]["required"] == ["path"]
    assert set(schemas["read_file"]["properties"]) == {"path", "start_line", "end_line"}
    assert set(schemas["list_files"]["properties"]) == {"path", "glob"}
    assert set(schemas["search_text"]["properties"]) == {"query", "path", "glob", "regex"}
    assert schemas["edit_file"]["required"] == ["path", "old_text", "new_text"]
    assert schemas["write_file"]["required"] == ["path", "content"]
    assert set(schemas["run_command"]["properties"]) == {"command", "timeout_s"}
    described = {t.name: t.description for t in tools}
    assert "never guess" in described["read_file"]
    assert "`memory` tool" in described["run_command"] and "tests" in described["run_command"]
    assert "`memory` tool, never with this one" in described["edit_file"]
    quiet = make_workspace_tools(
        tmp_path, approver=StubApprover(), applier=DiskApplier(), memory_hints=False
    )
    assert all("save it with the `memory` tool" not in t.description for t in quiet)
    # Built once per session: the same inputs give byte-identical schemas (the prompt cache).
    again = make_workspace_tools(tmp_path, approver=StubApprover(), applier=DiskApplier())
    assert [t.schema for t in again] == [t.schema for t in tools]
    assert "Look before you answer" in workspace_instructions(tmp_path)


def test_gate_survives_broken_listeners_and_bad_approvers() -> None:
    def listener(request: ApprovalRequest, decision: Decision) -> None:
        raise RuntimeError("listener bug")

    gate = ApprovalGate(StubApprover(), listener=listener)
    assert gate.decide(EDIT) == Decision.allow("user")

    class Garbage:
        def approve(self, request: ApprovalRequest) -> object:
            return {"approved": True}

    assert ApprovalGate(Garbage()).decide(EDIT).reason == "error"  # type: ignore[arg-type]


def test_an_approval_that_arrives_after_the_stop_is_a_refusal() -> None:
    cancel = threading.Event()

    def late(request: ApprovalRequest) -> Decision:
        cancel.set()  # the user pressed Stop while the card was open, then clicked Approve
        return Decision.allow("user")

    decision = ApprovalGate(StubApprover(decide=late), cancel=cancel).decide(EDIT)
    assert decision == Decision.deny("cancelled", decision.note) and not decision.approved


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep is not installed")
def test_find_ripgrep_prefers_a_working_configured_path(tmp_path: Path) -> None:
    on_path = shutil.which("rg")
    bogus = tmp_path / "rg"
    bogus.write_text("#!/bin/sh\necho not ripgrep\n")
    bogus.chmod(0o755)
    assert find_ripgrep(str(bogus)) == on_path  # answers --version wrongly: skipped
    assert find_ripgrep(str(tmp_path / "missing")) == on_path
    bundled = editor_ripgrep_paths(tmp_path / "app")[0]
    bundled.parent.mkdir(parents=True)
    os.symlink(str(on_path), bundled)
    assert bundled == tmp_path / "app/node_modules/@vscode/ripgrep/bin/rg"
    assert find_ripgrep(str(bundled)) == str(bundled)
