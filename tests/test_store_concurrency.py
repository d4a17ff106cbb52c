"""Many writers on one store: no lost edit across threads and processes, and a writer killed with
SIGKILL mid-write never leaves a torn file or a stray temp file behind.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from my_agent_core.memory import ENTRY_DELIMITER, MemoryEditError, MemoryStore
from my_agent_core.memory.document import parse
from my_agent_core.memory.store import MemoryLockTimeout
from tests.support.real_conditions import held_lock

WRITER = Path(__file__).parent / "support" / "memory_writer.py"
_spec = importlib.util.spec_from_file_location("memory_writer", WRITER)
assert _spec is not None and _spec.loader is not None
_writer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_writer)
blob, blob_version = _writer.blob, _writer.blob_version
BIG = 10**9
CLI = [sys.executable, "-m", "my_agent_core"]


def run_writers(commands: list[list[str]], go_file: Path) -> list[subprocess.CompletedProcess[str]]:
    """Start every writer, then release them at once through `go_file`."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(WRITER), *cmd],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for cmd in commands
    ]
    go_file.write_text("go")
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return results


def disk_entries(path: Path) -> list[str]:
    return parse(path.read_bytes().decode("utf-8")).entry_texts


@pytest.mark.timeout(120)
def test_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    mem_dir = tmp_path / "memory"
    procs, per_proc = 8, 25
    commands = [
        [
            "add",
            str(mem_dir),
            f"p{p}",
            str(per_proc),
            "memory" if p % 4 else "user",
            str(tmp_path / "go"),
        ]
        for p in range(procs)
    ]
    for result in run_writers(commands, tmp_path / "go"):
        assert result.returncode == 0, result.stderr
    memory = disk_entries(mem_dir / "MEMORY.md")
    user = disk_entries(mem_dir / "USER.md")
    expected_memory = {f"p{p}-{n:03d}" for p in range(procs) if p % 4 for n in range(per_proc)}
    expected_user = {f"p{p}-{n:03d}" for p in range(procs) if not p % 4 for n in range(per_proc)}
    assert len(memory) == len(expected_memory) and set(memory) == expected_memory
    assert len(user) == len(expected_user) and set(user) == expected_user
    for p in range(procs):  # each writer's own entries keep their order
        mine = [e for e in memory + user if e.startswith(f"p{p}-")]
        assert mine == sorted(mine)
    data = (mem_dir / "MEMORY.md").read_text(encoding="utf-8")
    assert data in (ENTRY_DELIMITER.join(memory), ENTRY_DELIMITER.join(memory) + "\n")


@pytest.mark.timeout(120)
def test_processes_rewriting_same_size_entries_lose_no_update(tmp_path: Path) -> None:
    """Every state has the same size, so a stale cached read or a lost rename would show."""
    mem_dir = tmp_path / "memory"
    writers, rounds = 4, 30
    seed = MemoryStore(mem_dir, memory_char_limit=BIG)
    for w in range(writers):
        seed.add("memory", f"w{w}:{0:06d}")
    commands = [
        ["counter", str(mem_dir), f"w{w}", str(rounds), str(tmp_path / "go")]
        for w in range(writers)
    ]
    for result in run_writers(commands, tmp_path / "go"):
        assert result.returncode == 0, result.stdout + result.stderr
    assert disk_entries(mem_dir / "MEMORY.md") == [f"w{w}:{rounds:06d}" for w in range(writers)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shared", [True, False], ids=["one-store", "store-per-thread"])
def test_threads_adding_at_once_lose_nothing(tmp_path: Path, shared: bool) -> None:
    mem_dir = tmp_path / "memory"
    threads, per_thread = 8, 25
    common = MemoryStore(mem_dir, memory_char_limit=BIG)
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work(t: int) -> None:
        store = common if shared else MemoryStore(mem_dir, memory_char_limit=BIG)
        barrier.wait()
        try:
            for n in range(per_thread):
                store.add("memory", f"t{t}-{n:03d}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not errors
    entries = disk_entries(mem_dir / "MEMORY.md")
    assert sorted(entries) == sorted(
        f"t{t}-{n:03d}" for t in range(threads) for n in range(per_thread)
    )


@pytest.mark.timeout(120)
def test_writer_killed_mid_write_never_leaves_a_torn_file(tmp_path: Path) -> None:
    mem_dir = tmp_path / "memory"
    size = 40_000  # ~100 KB of UTF-8 a write
    seed = MemoryStore(mem_dir, memory_char_limit=BIG)
    seed.add("memory", blob(0, size))
    path = mem_dir / "MEMORY.md"
    rng = random.Random(1234)
    last_version = 0
    for _round in range(6):
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), "churn", str(mem_dir), str(size)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        assert ready.strip() == "ready", proc.stderr.read() if proc.stderr else ""
        threading.Event().wait(rng.uniform(0.0, 0.12))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()

        raw = path.read_bytes()
        text = raw.decode("utf-8")  # never torn mid-character
        entries = parse(text).entry_texts
        assert len(entries) == 1, f"{len(entries)} entries after a kill"
        version = blob_version(entries[0])
        assert entries[0] == blob(version, size), "a mixed or truncated entry"
        assert text in (entries[0], entries[0] + "\n")
        assert version >= last_version
        last_version = version

        reader = MemoryStore(mem_dir, memory_char_limit=BIG)
        reader.load_from_disk()
        assert reader.entries("memory") == entries
        leftovers = [
            p.name
            for p in mem_dir.iterdir()
            if p.name.endswith(".tmp") or p.name.startswith(".MEMORY")
        ]
        assert not leftovers, leftovers
        reader.close()

    assert last_version >= 6, "every round completes at least the write announced by `ready`"
    after = MemoryStore(mem_dir, memory_char_limit=BIG)
    after.replace("memory", "BLOB ", "small again")  # the lock was not left held
    assert disk_entries(path) == ["small again"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stage", ["fsync", "replace", "journal"])
def test_writer_dying_at_each_stage_of_a_write(tmp_path: Path, stage: str) -> None:
    """Deterministic kill -9 inside the write path: the file holds the old or the new state, whole."""
    mem_dir = tmp_path / "memory"
    seed = MemoryStore(mem_dir, memory_char_limit=BIG)
    old = [blob(1, 20_000), "second entry"]
    for entry in old:
        seed.add("memory", entry)
    new = blob(2, 30_000)
    proc = subprocess.run(
        [sys.executable, str(WRITER), "die", str(mem_dir), stage, new],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    entries = disk_entries(mem_dir / "MEMORY.md")
    assert entries in (old, [*old, new])
    if stage in ("fsync", "replace"):
        assert entries == old
    else:
        assert entries == [*old, new]

    reader = MemoryStore(mem_dir, memory_char_limit=BIG)
    reader.load_from_disk()
    assert reader.entries("memory") == entries
    leftovers = [p.name for p in mem_dir.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, leftovers
    reader.add("memory", "after the crash")  # the dead writer's lock is gone
    assert disk_entries(mem_dir / "MEMORY.md") == [*entries, "after the crash"]


# ------------------------------------------------------------------------------------------ a lock held forever


@pytest.mark.timeout(60)
def test_a_lock_held_by_another_process_fails_with_a_bound_naming_the_holder(
    tmp_path: Path,
) -> None:
    mem_dir = tmp_path / "memory"
    seed = MemoryStore(mem_dir)
    seed.add("memory", "kept")
    path = mem_dir / "MEMORY.md"
    before = path.read_bytes()
    store = MemoryStore(mem_dir, lock_timeout=0.3)
    with held_lock(mem_dir / ".lock") as holder:
        for call in (lambda: store.add("memory", "x"), lambda: store.undo()):
            with pytest.raises(MemoryLockTimeout) as info:
                call()
            message = str(info.value)
            assert f"locked by pid {holder.pid} (flock " in message, message
            assert "nothing was written" in message and "end that process" in message
            assert info.value.holder is not None and info.value.holder.pid == holder.pid
        assert message.startswith("The memory folder is locked")
        reader = MemoryStore(mem_dir)
        reader.load_from_disk()  # never waits for the lock
        assert reader.entries("memory") == ["kept"]
        assert reader.state("memory").entries == ["kept"]
        assert [r.after for r in reader.log()] == ["kept"]
    assert path.read_bytes() == before
    store.add("memory", "after the holder ended")  # nothing was left half-locked
    assert disk_entries(path) == ["kept", "after the holder ended"]


@pytest.mark.timeout(60)
def test_threads_of_one_store_waiting_on_a_held_lock_all_give_up(tmp_path: Path) -> None:
    """Worker threads (an editor's request pool) are never pinned: each one returns an error."""
    mem_dir = tmp_path / "memory"
    store = MemoryStore(mem_dir, lock_timeout=0.3)
    outcomes: list[BaseException | None] = []
    with held_lock(mem_dir / ".lock"):

        def work(n: int) -> None:
            try:
                store.add("memory", f"entry {n}")
                outcomes.append(None)
            except BaseException as exc:  # reported below
                outcomes.append(exc)

        pool = [threading.Thread(target=work, args=(n,)) for n in range(3)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join(30)
        assert not any(thread.is_alive() for thread in pool)
    assert len(outcomes) == 3
    assert all(isinstance(o, MemoryLockTimeout) for o in outcomes), outcomes


@pytest.mark.timeout(60)
def test_a_lock_released_within_the_wait_is_taken(tmp_path: Path) -> None:
    mem_dir = tmp_path / "memory"
    store = MemoryStore(mem_dir, lock_timeout=30)
    with held_lock(mem_dir / ".lock") as holder:
        threading.Timer(0.3, holder.kill).start()
        store.add("memory", "waited for it")
    assert disk_entries(mem_dir / "MEMORY.md") == ["waited for it"]


def test_the_lock_file_is_owner_only(tmp_path: Path) -> None:
    mem_dir = tmp_path / "memory"
    old = os.umask(0)
    try:
        MemoryStore(mem_dir).add("memory", "x")
    finally:
        os.umask(old)
    assert (mem_dir / ".lock").stat().st_mode & 0o777 == 0o600


@pytest.mark.timeout(30)
def test_a_fifo_as_the_lock_is_refused_without_hanging(tmp_path: Path) -> None:
    mem_dir = tmp_path / "memory"
    mem_dir.mkdir()
    os.mkfifo(mem_dir / ".lock")
    store = MemoryStore(mem_dir)
    store.load_from_disk()
    with pytest.raises(MemoryEditError, match="not a regular file"):
        store.add("memory", "x")
    assert not (mem_dir / "MEMORY.md").exists()


@pytest.mark.timeout(60)
def test_the_cli_gives_up_on_a_held_lock_with_exit_3(tmp_path: Path) -> None:
    mem_dir = tmp_path / "memory"
    MemoryStore(mem_dir).add("memory", "kept")
    with held_lock(mem_dir / ".lock") as holder:
        done = subprocess.run(
            [*CLI, "memory", "add", "x", "--dir", str(mem_dir), "--lock-timeout", "0.3"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 3
    assert done.stderr.startswith(f"my-agent: MEMORY.md is locked by pid {holder.pid} (flock")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert disk_entries(mem_dir / "MEMORY.md") == ["kept"]
