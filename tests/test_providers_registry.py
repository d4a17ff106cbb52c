"""The registry: built-in names, "none", unknown names, and third-party providers found through the
entry-point group, loaded from a fake distribution on sys.path (how entry points really work)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from my_agent_core.memory.providers import (
    ENTRY_POINT_GROUP,
    ProviderContext,
    ProviderError,
    build_manager,
    create_provider,
    provider_name,
    provider_names,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"


def install_fake_distribution(site: Path, name: str, entry_points: str) -> None:
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{entry_points}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    return folder


def test_builtin_names_and_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_AGENT_MEMORY_PROVIDER", raising=False)
    assert provider_names()[:3] == ["archive", "postgres", "none"]
    assert provider_name({}) == "archive"
    assert provider_name({"provider": "none"}) == "none"
    monkeypatch.setenv("MY_AGENT_MEMORY_PROVIDER", "postgres")
    assert provider_name({}) == "postgres"
    assert provider_name({"provider": "archive"}) == "archive", "the setting wins"


def test_none_turns_layer_two_off(tmp_path: Path) -> None:
    assert create_provider("none", ProviderContext(tmp_path)) is None
    manager = build_manager(ProviderContext(tmp_path, settings={"provider": "none"}))
    assert not manager.active
    assert not (tmp_path / ".my_agent_core").exists(), "nothing is created when it is off"


def test_the_default_manager_runs_the_archive(tmp_path: Path) -> None:
    manager = build_manager(ProviderContext(tmp_path, session_id="s"))
    try:
        assert manager.name == "archive"
        manager.sync_turn("Which queue backs the mailer?", "The mailer uses the redis queue mailq.")
        assert manager.search("mailer queue")[0]["kind"] == "turn"
    finally:
        manager.shutdown()


def test_an_unknown_provider_is_reported_once_and_chat_goes_on(tmp_path: Path) -> None:
    errors: list[tuple[str, str]] = []
    manager = build_manager(
        ProviderContext(tmp_path, settings={"provider": "no-such"}),
        on_error=lambda name, message: errors.append((name, message)),
    )
    assert not manager.active and manager.recall("anything") == ""
    assert len(errors) == 1 and "Unknown memory provider 'no-such'" in errors[0][1]
    assert "archive" in errors[0][1], "the message lists what is available"
    with pytest.raises(ProviderError):
        create_provider("no-such", ProviderContext(tmp_path))


def test_the_documented_example_loads_through_its_entry_point(site: Path, tmp_path: Path) -> None:
    shutil.copy(DOCS / "example_provider.py", site / "example_provider.py")
    install_fake_distribution(
        site, "notes_example", "notes-example = example_provider:NotesProvider"
    )
    assert "notes-example" in provider_names()
    folder = tmp_path / "work"
    folder.mkdir()
    manager = build_manager(ProviderContext(folder, settings={"provider": "notes-example"}))
    try:
        assert manager.name == "notes-example"
        manager.sync_turn("How do we rotate the signing certificate?", "Run certctl rotate weekly.")
        manager.sync_turn("Lunch?", "Pizza.")
        text = manager.recall("When should the signing certificate rotate?")
        assert "certctl rotate" in text and "Pizza" not in text
        assert manager.recall("What is for lunch today?") == ""
        assert manager.search("certificate", 5)[0]["text"].startswith("user: How do we rotate")
    finally:
        manager.shutdown()
    assert (folder / ".my_agent_core" / "notes-example" / "turns.jsonl").exists()


def test_a_plugin_that_fails_to_import_is_reported(site: Path, tmp_path: Path) -> None:
    (site / "broken_plugin.py").write_text("raise ImportError('needs libfoo')\n")
    install_fake_distribution(site, "broken_plugin", "broken = broken_plugin:Provider")
    errors: list[str] = []
    manager = build_manager(
        ProviderContext(tmp_path, settings={"provider": "broken"}),
        on_error=lambda _name, message: errors.append(message),
    )
    assert not manager.active
    assert len(errors) == 1 and "needs libfoo" in errors[0]


def test_a_plugin_returning_something_else_is_refused(site: Path, tmp_path: Path) -> None:
    (site / "odd_plugin.py").write_text("def make(context):\n    return 'not a provider'\n")
    install_fake_distribution(site, "odd_plugin", "odd = odd_plugin:make")
    with pytest.raises(ProviderError, match="not a MemoryProvider"):
        create_provider("odd", ProviderContext(tmp_path))


def test_a_plugin_cannot_shadow_a_builtin(site: Path, tmp_path: Path) -> None:
    (site / "shadow_plugin.py").write_text("def make(context):\n    raise SystemExit(3)\n")
    install_fake_distribution(site, "shadow_plugin", "archive = shadow_plugin:make")
    provider = create_provider("archive", ProviderContext(tmp_path))
    assert provider is not None and type(provider).__name__ == "ArchiveProvider"
    provider.shutdown()
