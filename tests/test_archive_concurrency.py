"""Several real processes on one archive: concurrent writers lose nothing, a writer killed mid-way
leaves a consistent database, and a lock held forever by another process delays a write but never
blocks the caller or loses the turn."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from my_agent_core.memory.providers import MemoryManager
from my_agent_core.memory.providers.archive import ArchiveProvider, archive_path

WRITER = textwrap.dedent(
    """
    import os, sys, time
    from my_agent_core.memory.providers.archive import ArchiveProvider
    folder, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    provider = ArchiveProvider(folder, session_id=name)
    while not os.path.exists(go):
        time.sleep(0.001)
    n = 0
    while count < 0 or n < count:
        provider.sync_turn(f"{name} question {n} about widgets", f"{name} answer {n} 数据库 gadgets")
        n += 1
        if n == 5:
            open(go + "." + name, "w").close()
    provider.shutdown()
    if provider.pending:
        sys.exit(3)
    """
)


def _writer(folder: Path, name: str, count: int, go: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(folder), name, str(count), str(go)])


def _consistent(folder: Path) -> int:
    """Check the database and its term counts; returns the number of items."""
    db = sqlite3.connect(archive_path(folder, create=False))
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.execute("INSERT INTO items_fts(items_fts) VALUES ('integrity-check')")
        recount: dict[str, int] = {}
        for (body,) in db.execute("SELECT body FROM items_fts"):
            for term in set(body.split()):
                recount[term] = recount.get(term, 0) + 1
        assert dict(db.execute("SELECT term, df FROM terms")) == recount
        items = db.execute("SELECT count(*) FROM items").fetchone()[0]
        assert db.execute("SELECT value FROM stats WHERE key = 'items'").fetchone()[0] == items
        assert db.execute("SELECT count(*) FROM items_fts").fetchone()[0] == items
        return int(items)
    finally:
        db.close()


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    ArchiveProvider(tmp_path).shutdown()  # create the schema once, as the first window would
    go = tmp_path / "go"
    writers = [_writer(tmp_path, f"w{n}", 40, go) for n in range(4)]
    go.touch()
    assert [w.wait(timeout=240) for w in writers] == [0, 0, 0, 0]
    assert _consistent(tmp_path) == 160
    reader = ArchiveProvider(tmp_path)
    try:
        items = reader.list_items(1000)
        for n in range(4):
            texts = {i.text.split("\n")[0] for i in items if i.session == f"w{n}"}
            assert texts == {f"user: w{n} question {k} about widgets" for k in range(40)}
    finally:
        reader.shutdown()


def test_concurrent_first_use_creates_the_schema_once(tmp_path: Path) -> None:
    go = tmp_path / "go"
    writers = [_writer(tmp_path, f"w{n}", 5, go) for n in range(3)]
    go.touch()
    assert [w.wait(timeout=240) for w in writers] == [0, 0, 0]
    assert _consistent(tmp_path) == 15


def test_a_writer_killed_mid_way_leaves_a_consistent_archive(tmp_path: Path) -> None:
    ArchiveProvider(tmp_path).shutdown()
    go = tmp_path / "go"
    go.touch()
    victim = _writer(tmp_path, "victim", -1, go)
    started = tmp_path / "go.victim"
    while not started.exists():
        assert victim.poll() is None, "the writer died on its own"
        time.sleep(0.01)
    time.sleep(0.2)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=60)
    items = _consistent(tmp_path)
    assert items >= 5
    after = ArchiveProvider(tmp_path)
    after.sync_turn("after the crash", "still works")
    after.shutdown()
    assert _consistent(tmp_path) == items + 1


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE stats SET value = value WHERE key = 'items'")
    print("holding", flush=True)
    sys.stdin.read()
    db.execute("COMMIT")
    """
)


def test_a_lock_held_forever_delays_but_loses_nothing(tmp_path: Path) -> None:
    provider = ArchiveProvider(tmp_path, session_id="s")
    manager = MemoryManager(timeout_s=5.0)
    manager.add_provider(provider)
    manager.sync_turn("before the lock", "creates the archive (made by the first write only)")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(archive_path(tmp_path))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
        manager.sync_turn("first while locked", "kept in memory")
        assert manager.active, "a held lock is not a broken provider"
        assert provider.pending == 1
        assert manager.search("Vault", 5) == []
        assert manager.active, "reads go on while another process holds the write lock"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    manager.sync_turn("second after release", "both land")
    assert provider.pending == 0
    manager.shutdown()
    assert _consistent(tmp_path) == 3
