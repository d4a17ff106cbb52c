"""The archive file is data a cloned repository or a crash may have shaped: links and FIFOs are refused,
an unreadable or foreign database is moved aside with a clear message (never deleted, never replaced
in place), one from a newer version is left untouched, and a damaged page found mid-session is handled."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from my_agent_core.memory.providers import ProviderContext, build_manager
from my_agent_core.memory.providers.archive import (
    SCHEMA_VERSION,
    ArchiveProvider,
    SqliteArchive,
    archive_path,
)
from my_agent_core.memory.providers.indexed import ArchiveError
from my_agent_core.paths import PathRefused


def _fill(folder: Path, count: int = 3) -> None:
    provider = ArchiveProvider(folder)
    for n in range(count):
        provider.sync_turn(f"question number {n} about kubernetes", f"answer {n} about helm charts")
    provider.shutdown()


def _aside(folder: Path) -> list[Path]:
    return sorted(archive_path(folder, create=False).parent.glob("archive.sqlite3.corrupt-*"))


def test_a_database_that_is_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.sqlite3"
    outside.write_bytes(b"")
    path = archive_path(tmp_path / "ws")
    path.symlink_to(outside)
    with pytest.raises(PathRefused, match="symbolic link"):
        ArchiveProvider(tmp_path / "ws")
    assert outside.read_bytes() == b""


def test_a_side_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    _fill(tmp_path)
    wal = Path(f"{archive_path(tmp_path)}-wal")
    wal.unlink(missing_ok=True)
    wal.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PathRefused):
        ArchiveProvider(tmp_path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(archive_path(tmp_path))
    with pytest.raises(PathRefused, match="FIFO"):
        ArchiveProvider(tmp_path)


def test_an_archive_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".my_agent_core").mkdir(parents=True)
    (tmp_path / "target").mkdir()
    (tmp_path / "ws" / ".my_agent_core" / "archive").symlink_to(tmp_path / "target")
    errors: list[str] = []
    manager = build_manager(
        ProviderContext(tmp_path / "ws"), on_error=lambda _n, message: errors.append(message)
    )
    assert not manager.active and len(errors) == 1 and "link" in errors[0]
    assert list((tmp_path / "target").iterdir()) == []


def test_garbage_is_moved_aside_with_a_message(tmp_path: Path) -> None:
    path = archive_path(tmp_path)
    path.write_bytes(b"this is not an sqlite database at all" * 100)
    notices: list[str] = []
    provider = ArchiveProvider(tmp_path, report=notices.append)
    try:
        provider.sync_turn("after the crash", "a fresh archive works")
        assert provider.search("crash", 3)
    finally:
        provider.shutdown()
    (moved,) = _aside(tmp_path)
    assert moved.read_bytes() == b"this is not an sqlite database at all" * 100, "never deleted"
    assert len(notices) == 1 and moved.name in notices[0] and "nothing was deleted" in notices[0]


def test_a_foreign_database_with_a_trigger_is_moved_aside_unrun(tmp_path: Path) -> None:
    path = archive_path(tmp_path)
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, kind TEXT);"
        "CREATE TABLE log (x TEXT);"
        "CREATE TRIGGER spy AFTER INSERT ON items BEGIN INSERT INTO log VALUES ('ran'); END;"
    )
    db.close()
    notices: list[str] = []
    provider = ArchiveProvider(tmp_path, report=notices.append)
    provider.sync_turn("hello there general", "kenobi")
    provider.shutdown()
    (moved,) = _aside(tmp_path)
    check = sqlite3.connect(moved)
    assert check.execute("SELECT count(*) FROM log").fetchone()[0] == 0
    check.close()
    assert "objects my-agent did not create" in notices[0]


def test_a_newer_schema_is_left_untouched(tmp_path: Path) -> None:
    _fill(tmp_path)
    path = archive_path(tmp_path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = path.read_bytes()
    with pytest.raises(ArchiveError, match="newer my-agent"):
        ArchiveProvider(tmp_path)
    assert path.read_bytes() == before and _aside(tmp_path) == []


def test_a_damaged_page_found_mid_session_is_moved_aside(tmp_path: Path) -> None:
    _fill(tmp_path, count=400)
    path = archive_path(tmp_path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.close()
    backend = SqliteArchive(path)
    with path.open("r+b") as handle:  # scribble over the second half of the file
        for page in range(pages // 2, pages):
            handle.seek(page * page_size)
            handle.write(b"\xa5" * page_size)
    with pytest.raises(ArchiveError, match="damaged"):
        for _ in range(3):  # a damaged page is hit by a full scan
            backend.list_items(1000, 0, None)
            backend.containing("helm", 1000)
    assert _aside(tmp_path), "the damaged file was moved aside"
    assert backend.list_items(10, 0, None) == [], "a fresh archive took its place"
    backend.close()
