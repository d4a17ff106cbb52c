"""Shared pieces of the workspace-tool tests (no tests here): a recording Approver stub, a
dict-backed BufferReader, a factory for the six tools on a temp folder with either backend, and
random trees with what `rg --files` lists of them (the walker is checked against ripgrep).

Import into a test module with `from tests.test_coding_tools_helpers import *  # noqa: F403`.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from my_agent_core.coding_tools import (
    ApprovalRequest,
    Decision,
    DiskApplier,
    FileChange,
    WorkspaceSettings,
    make_workspace_tools,
)
from my_agent_core.coding_tools.ripgrep import BASE_FLAGS
from my_agent_core.tools import Tool, ToolResult

__all__ = [
    "BACKENDS",
    "Buffers",
    "RecordingApplier",
    "StubApprover",
    "Workspace",
    "backend",
    "random_tree",
    "rg_files",
    "workspace",
]

RG = shutil.which("rg")
BACKENDS = [
    pytest.param("rg", marks=pytest.mark.skipif(RG is None, reason="ripgrep is not installed")),
    "python",
]


def rg_files(root: Path, glob: str | None) -> list[str]:
    """What `rg --files` lists with the flags the tools use for ripgrep."""
    args = [str(RG), "--files", *BASE_FLAGS, *(["--glob", glob] if glob else []), "--glob", "!.git"]
    out = subprocess.run(args, cwd=root, capture_output=True, check=False).stdout.decode()
    return sorted(line.removeprefix("./") for line in out.splitlines())


def random_tree(
    root: Path,
    rnd: random.Random,
    names: Sequence[str],
    ignore_lines: Sequence[str],
    *,
    paths: int,
    lines: int,
    ignore_files: Sequence[str] = (".gitignore",),
) -> None:
    """Make `root` (a git repository half the time) with 5 to `paths` random files and folders
    named from `names`, and 1-3 of its folders holding an ignore file of 1 to `lines` random lines."""
    root.mkdir()
    if rnd.random() < 0.5:
        (root / ".git").mkdir()
    folders = [root]
    for _ in range(rnd.randint(5, paths)):
        path = rnd.choice(folders) / rnd.choice(names)
        if path.exists():
            continue
        if rnd.random() < 0.4:
            path.mkdir()
            folders.append(path)
        else:
            path.write_text("x")
    for folder in rnd.sample(folders, min(len(folders), rnd.randint(1, 3))):
        kind = rnd.choice(ignore_files) if len(ignore_files) > 1 else ignore_files[0]
        (folder / kind).write_text("\n".join(rnd.sample(list(ignore_lines), rnd.randint(1, lines))))


@dataclass
class StubApprover:
    """Answers every request with `decision` (or calls `decide`), and records what was asked."""

    decision: Decision = field(default_factory=lambda: Decision.allow("user"))
    decide: Callable[[ApprovalRequest], Decision] | None = None
    requests: list[ApprovalRequest] = field(default_factory=list)

    def approve(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        if self.decide is not None:
            return self.decide(request)
        return self.decision


class Buffers:
    """Unsaved editor text keyed by real path."""

    def __init__(self) -> None:
        self.texts: dict[Path, str] = {}

    def text_of(self, path: Path) -> str | None:
        return self.texts.get(path)

    def open_paths(self) -> list[Path]:
        return list(self.texts)


class RecordingApplier(DiskApplier):
    """The real disk applier, remembering each change it applied."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: list[FileChange] = []

    def apply(self, change: FileChange) -> None:
        super().apply(change)
        self.changes.append(change)


@dataclass
class Workspace:
    root: Path
    approver: StubApprover
    applier: RecordingApplier
    buffers: Buffers
    cancel: threading.Event
    decisions: list[tuple[ApprovalRequest, Decision]]
    backend: str
    tools: dict[str, Tool] = field(default_factory=dict)

    def build(self, **settings: object) -> Workspace:
        options: dict[str, object] = {"use_ripgrep": self.backend == "rg"}
        options.update(settings)
        chosen = WorkspaceSettings(**options)  # type: ignore[arg-type]
        built = make_workspace_tools(
            self.root,
            approver=self.approver,
            applier=self.applier,
            buffers=self.buffers,
            settings=chosen,
            cancel=self.cancel,
            on_decision=lambda request, decision: self.decisions.append((request, decision)),
        )
        self.tools = {tool.name: tool for tool in built}
        return self

    def call(self, name: str, **args: object) -> ToolResult:
        return self.tools[name].execute(args)

    def ok(self, name: str, **args: object) -> str:
        result = self.call(name, **args)
        assert result.ok, result.error
        return result.content

    def fails(self, name: str, **args: object) -> str:
        result = self.call(name, **args)
        assert not result.ok, result.content
        return result.error

    def write(self, rel: str, text: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8", newline="")
        return path


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path, backend: str) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(
        root=root.resolve(),
        approver=StubApprover(),
        applier=RecordingApplier(),
        buffers=Buffers(),
        cancel=threading.Event(),
        decisions=[],
        backend=backend,
    ).build()
