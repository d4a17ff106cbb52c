"""WorkspaceChecks: the index built once in the background, events applied as they come (also
while the build runs), and a callback whenever memory should be linted again."""

from __future__ import annotations

import threading
from pathlib import Path

from my_agent_core.context.index import FileEvent
from my_agent_core.context.rules import STALE_REFERENCE, VOLATILE_CONTENT
from my_agent_core.context.service import WorkspaceChecks
from my_agent_core.memory.document import parse


def test_background_build_then_events(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "build.sh").write_text("", encoding="utf-8")
    changed = threading.Event()
    checks = WorkspaceChecks(tmp_path, on_change=changed.set)
    assert checks.ready.wait(30) and changed.wait(30)
    assert checks.index is not None and checks.index.has_file("scripts/build.sh")
    doc = parse("Run scripts/test.sh today")
    assert [f.code for f in checks.rules.lint(doc)] == [STALE_REFERENCE, VOLATILE_CONTENT]
    changed.clear()
    (tmp_path / "scripts" / "test.sh").write_text("", encoding="utf-8")
    assert checks.file_events([FileEvent("created", str(tmp_path / "scripts" / "test.sh"))]).files
    assert changed.is_set()
    assert [f.code for f in checks.rules.lint(doc)] == [VOLATILE_CONTENT]
    changed.clear()
    assert not checks.file_events([FileEvent("deleted", str(tmp_path / "nothing.py"))]).any
    assert not changed.is_set(), "nothing changed: no re-lint"


class GatedChecks(WorkspaceChecks):
    """Its background build waits for `gate`, so events can arrive while it runs."""

    gate = threading.Event()

    def _build(self) -> None:
        self.gate.wait(30)
        super()._build()


def test_events_during_the_build_are_kept(tmp_path: Path) -> None:
    (tmp_path / "old.sh").write_text("", encoding="utf-8")
    checks = GatedChecks(tmp_path)
    (tmp_path / "old.sh").rename(tmp_path / "new.sh")
    early = checks.file_events(
        [FileEvent("renamed", str(tmp_path / "new.sh"), str(tmp_path / "old.sh"))]
    )
    assert not early.any and checks.index is None, "queued: the index is not ready yet"
    assert [f.code for f in checks.rules.lint(parse("Run old.sh today"))] == [VOLATILE_CONTENT]
    GatedChecks.gate.set()
    assert checks.ready.wait(30)
    assert checks.index is not None and checks.index.renamed_to("old.sh") == "new.sh"
    (finding, _hint) = checks.rules.lint(parse("Run old.sh today"))
    assert "renamed to `new.sh`" in finding.message


def test_a_broken_listener_does_not_break_the_index(tmp_path: Path) -> None:
    def broken() -> None:
        raise RuntimeError("listener bug")

    checks = WorkspaceChecks(tmp_path, on_change=broken, background=False)
    (tmp_path / "a.py").write_text("", encoding="utf-8")
    assert checks.file_events([FileEvent("created", str(tmp_path / "a.py"))]).files
    checks.close()
    assert checks.on_change is None


def test_submitted_events_are_applied_in_order_off_the_calling_thread(tmp_path: Path) -> None:
    changed = threading.Event()
    checks = WorkspaceChecks(tmp_path, on_change=changed.set, background=False)
    changed.clear()
    (tmp_path / "a.py").write_text("", encoding="utf-8")
    checks.submit([FileEvent("created", str(tmp_path / "a.py"))])
    (tmp_path / "a.py").rename(tmp_path / "b.py")
    checks.submit([FileEvent("renamed", str(tmp_path / "b.py"), str(tmp_path / "a.py"))])
    assert changed.wait(30)
    for _ in range(300):
        if checks.index is not None and checks.index.has_file("b.py"):
            break
        threading.Event().wait(0.01)
    assert checks.index is not None and checks.index.has_file("b.py")
    assert not checks.index.has_file("a.py") and checks.index.renamed_to("a.py") == "b.py"
    checks.submit([])  # nothing to do
    checks.close()
    checks.submit([FileEvent("deleted", str(tmp_path / "b.py"))])  # ignored once closed
    assert checks.index.has_file("b.py")


def test_lint_layout_never_waits_for_the_workspace_checks(tmp_path: Path, monkeypatch) -> None:
    """The checks of the entries run on a worker: while they are held, `lint_layout` (what the
    server's request loop calls) still returns, with what is known; then `on_change` fires and
    the findings are there."""
    from my_agent_core.context.rules import WorkspaceRules
    from my_agent_core.memory.lint import DocumentLayout

    (tmp_path / "src").mkdir()
    changed = threading.Event()
    checks = WorkspaceChecks(tmp_path, on_change=changed.set, background=False)
    gate, entered = threading.Event(), threading.Event()
    real = WorkspaceRules._claims

    def held(self: WorkspaceRules, source: str) -> list[object]:
        entered.set()
        assert gate.wait(60)
        return real(self, source)

    monkeypatch.setattr(WorkspaceRules, "_claims", held)
    changed.clear()
    layout = DocumentLayout(parse("The entry point is src/main.py"))
    assert checks.lint_layout(layout) == []  # returned although the check is held
    assert entered.wait(30) and not changed.is_set()
    assert checks.lint_layout(layout) == []  # asked again meanwhile: queued once, still no wait
    gate.set()
    assert changed.wait(30)
    assert [f.code for f in checks.lint_layout(layout)] == [STALE_REFERENCE]


def test_a_check_that_fails_is_not_retried_for_ever(tmp_path: Path, monkeypatch) -> None:
    from my_agent_core.context.rules import WorkspaceRules
    from my_agent_core.memory.lint import DocumentLayout

    changed = threading.Event()
    checks = WorkspaceChecks(tmp_path, on_change=changed.set, background=False)

    def broken(self: WorkspaceRules, source: str) -> list[object]:
        raise RuntimeError("rule bug")

    monkeypatch.setattr(WorkspaceRules, "_claims", broken)
    changed.clear()
    layout = DocumentLayout(parse("The entry point is src/main.py"))
    assert checks.lint_layout(layout) == []
    assert changed.wait(30)
    changed.clear()
    assert checks.lint_layout(layout) == []  # checked (and failed) once: nothing queued again
    assert not changed.wait(0.2)
