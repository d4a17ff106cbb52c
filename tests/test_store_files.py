"""The store's own files: the fast look before each edit, the held-open lock, backups and the sweep.

- `OwnFiles.locate` takes one `lstat` a name when no own file is a link; with a link anywhere it takes
  the full look-up through links. Any layout of the four names must get the same answer either way.
- The lock's descriptor is kept open between edits: it must still be the file every process locks
  after a fork, with two stores in one process, and when `.lock` is deleted or replaced.
- Backups go through `safe_write.write_atomic`; a writer killed mid-copy leaves a temp file that the
  next load sweeps, and only when nobody holds the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from my_agent_core.layout import FILE_NAMES, JOURNAL_NAME, LOCK_NAME
from my_agent_core.memory import ENTRY_DELIMITER, MemoryEditError, MemoryStore
from my_agent_core.memory.errors import MemoryLockTimeout, Unavailable
from my_agent_core.memory.own_files import OwnFiles

NAMES = (*FILE_NAMES.values(), JOURNAL_NAME, LOCK_NAME)

# ------------------------------------------------------------------------------------------ locate

# What each own name is: missing, a plain file of its own, a hard link of another name's file, a
# symbolic link to another name (existing or not), a link out of the folder, a dangling link.
kinds = st.one_of(
    st.just(("missing", 0)),
    st.just(("file", 0)),
    st.tuples(st.just("hardlink"), st.integers(0, 3)),
    st.tuples(st.just("symlink"), st.integers(0, 3)),
    st.just(("outside", 0)),
    st.just(("dangling", 0)),
)


def build(folder: Path, outside: Path, layout: list[tuple[str, int]]) -> None:
    for name, (kind, _other) in zip(NAMES, layout, strict=True):
        if kind == "file":
            (folder / name).write_text(f"{name}\n")
    for name, (kind, other) in zip(NAMES, layout, strict=True):
        target = folder / NAMES[other]
        if kind == "hardlink" and target.is_file() and not target.is_symlink():
            os.link(target, folder / name)
        elif kind == "symlink" and NAMES[other] != name:
            (folder / name).symlink_to(NAMES[other])
        elif kind == "outside":
            (folder / name).symlink_to(outside)
        elif kind == "dangling":
            (folder / name).symlink_to("nowhere")


def answer(files: OwnFiles, name: str, every_pair: bool, *, full: bool) -> object:
    try:
        if full:
            path, st_ = files._locate_through_links(name, every_pair=every_pair)
        else:
            path, st_ = files.locate(name, every_pair=every_pair)
    except Unavailable as exc:
        return ("refused", str(exc))
    return (str(path), None if st_ is None else (st_.st_dev, st_.st_ino, st_.st_mode))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(layout=st.lists(kinds, min_size=4, max_size=4), every_pair=st.booleans())
def test_the_fast_look_decides_exactly_as_the_full_look_up(
    tmp_path_factory: pytest.TempPathFactory, layout: list[tuple[str, int]], every_pair: bool
) -> None:
    root = tmp_path_factory.mktemp("own")
    folder, outside = root / "memory", root / "secret.txt"
    folder.mkdir()
    outside.write_text("not yours\n")
    build(folder, outside, layout)
    files = OwnFiles(folder, NAMES)
    for name in FILE_NAMES.values():
        fast = answer(files, name, every_pair, full=False)
        assert fast == answer(files, name, every_pair, full=True), (layout, name)


def test_plain_files_and_a_hard_link_pair(tmp_path: Path) -> None:
    """The benign twin and the attack of the fast path, spelled out."""
    for name in NAMES:
        (tmp_path / name).write_text("x")
    files = OwnFiles(tmp_path, NAMES)
    path, found = files.locate("MEMORY.md", every_pair=True)
    assert path == tmp_path / "MEMORY.md" and found is not None
    (tmp_path / JOURNAL_NAME).unlink()
    os.link(tmp_path / "USER.md", tmp_path / JOURNAL_NAME)
    with pytest.raises(Unavailable, match=r"USER\.md and history\.jsonl .* are one file"):
        files.locate("MEMORY.md", every_pair=True)
    assert files.locate("MEMORY.md", every_pair=False)[0] == tmp_path / "MEMORY.md"  # a load


def test_a_relative_folder_follows_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for side in ("a", "b"):
        (tmp_path / side / "memory").mkdir(parents=True)
    (tmp_path / "a" / "memory" / "MEMORY.md").write_text("in a")
    files = OwnFiles(Path("memory"), NAMES)
    monkeypatch.chdir(tmp_path / "a")
    assert files.locate("MEMORY.md", every_pair=True)[1] is not None
    monkeypatch.chdir(tmp_path / "b")
    assert files.locate("MEMORY.md", every_pair=True)[1] is None


# ------------------------------------------------------------------------------------------ the lock


@pytest.fixture
def mem_dir(tmp_path: Path) -> Path:
    return tmp_path / "memory"


def entries_on_disk(mem_dir: Path) -> list[str]:
    return (mem_dir / "MEMORY.md").read_text().rstrip("\n").split(ENTRY_DELIMITER)


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """`path` locked through a descriptor of its own, as another process would hold it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_deleted_lock_file_is_recreated_and_the_new_one_is_the_one_locked(mem_dir: Path) -> None:
    store = MemoryStore(mem_dir, lock_timeout=0.1)
    store.add("memory", "one")  # the descriptor of `.lock` is open now
    (mem_dir / LOCK_NAME).unlink()
    with held(mem_dir / LOCK_NAME), pytest.raises(MemoryLockTimeout):  # another's new `.lock`
        store.add("memory", "two")
    store.add("memory", "two")  # benign twin: released, it is taken
    assert entries_on_disk(mem_dir) == ["one", "two"]
    store.close()


def test_a_replaced_lock_file_is_the_one_locked(mem_dir: Path) -> None:
    store = MemoryStore(mem_dir, lock_timeout=0.1)
    store.add("memory", "one")
    fresh = mem_dir / "fresh"
    fresh.write_text("")
    os.replace(fresh, mem_dir / LOCK_NAME)  # renamed over: the held inode lost its name
    with held(mem_dir / LOCK_NAME), pytest.raises(MemoryLockTimeout):
        store.add("memory", "two")
    store.add("memory", "two")
    assert entries_on_disk(mem_dir) == ["one", "two"]
    store.close()


def test_a_lock_replaced_by_a_link_out_of_the_folder_is_refused(
    mem_dir: Path, tmp_path: Path
) -> None:
    store = MemoryStore(mem_dir)
    store.add("memory", "one")
    outside = tmp_path / "theirs.lock"
    outside.write_text("keep\n")
    (mem_dir / LOCK_NAME).unlink()
    (mem_dir / LOCK_NAME).symlink_to(outside)
    with pytest.raises(MemoryEditError, match="symbolic link"):
        store.add("memory", "two")
    assert outside.read_text() == "keep\n"
    assert entries_on_disk(mem_dir) == ["one"]
    store.close()


def test_two_stores_of_one_folder_in_one_process_exclude_each_other(mem_dir: Path) -> None:
    """Each store holds its own descriptor (its own open file): their flocks conflict, so threads
    of two stores serialise like two processes, and no edit is lost."""
    stores = [MemoryStore(mem_dir, memory_char_limit=100_000) for _ in range(2)]
    stores[0].add("memory", "seed")

    def work(store: MemoryStore, side: int) -> None:
        for n in range(25):
            store.add("memory", f"store {side} fact {n}")

    threads = [threading.Thread(target=work, args=(s, i)) for i, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = {"seed"} | {f"store {i} fact {n}" for i in range(2) for n in range(25)}
    assert set(entries_on_disk(mem_dir)) == expected
    for store in stores:
        store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_locks_through_a_descriptor_of_its_own(mem_dir: Path) -> None:
    """The parent holds its lock (mid-edit) and forks: the child's store must wait for it, not take
    it through the inherited descriptor (a flock on that open file would succeed at once)."""
    store = MemoryStore(mem_dir, lock_timeout=0.2)
    store.add("memory", "parent fact")
    with store._hold(store._folders["memory"], "MEMORY.md"):
        pid = os.fork()
        if pid == 0:  # the child: exit 0 only if it had to wait and gave up
            code = 1
            try:
                store.add("memory", "child fact")
            except MemoryLockTimeout:
                code = 0
            except BaseException:
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    store.add("memory", "after the child")  # the parent's descriptor still works
    assert entries_on_disk(mem_dir) == ["parent fact", "after the child"]
    store.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_appends_to_the_history_through_a_descriptor_of_its_own(
    mem_dir: Path,
) -> None:
    """The held descriptors are re-opened in a forked child (a fork counter, not a `getpid` each
    edit): the child's record goes through its own open file, and both records are kept."""
    store = MemoryStore(mem_dir)
    store.add("memory", "parent fact")
    inherited = store.journal._fd
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            store.add("memory", "child fact")
            own = store.journal._fd
            code = 0 if own is not None and own != inherited else 3
        except BaseException:
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.journal._fd == inherited, "the parent keeps its own"
    store.add("memory", "parent again")
    assert [r.after for r in store.log()] == ["parent fact", "child fact", "parent again"]
    store.close()


# ------------------------------------------------------------------------------------------ the look the lock takes

# What can be planted at an own name between two edits (the store and its lock descriptor open):
# each is refused by the next edit, and nothing outside the folder is touched.
PLANTS = ("link out", "fifo", "folder", "hard link to the journal", "link to the journal")


def plant(mem_dir: Path, outside: Path, kind: str) -> None:
    target = mem_dir / "MEMORY.md"
    target.unlink()
    if kind == "link out":
        target.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    elif kind == "hard link to the journal":
        os.link(mem_dir / JOURNAL_NAME, target)
    else:
        target.symlink_to(JOURNAL_NAME)


@pytest.mark.parametrize("kind", PLANTS)
def test_a_file_planted_between_two_edits_is_refused(
    mem_dir: Path, tmp_path: Path, kind: str
) -> None:
    """The edit's look at its own files is the one the lock takes right after its flock: whatever
    was planted since the last edit is in it."""
    outside = tmp_path / "theirs.txt"
    outside.write_text("keep\n")
    store = MemoryStore(mem_dir)
    store.add("memory", "one")
    journal = (mem_dir / JOURNAL_NAME).read_bytes()
    plant(mem_dir, outside, kind)
    with pytest.raises(MemoryEditError):
        store.add("memory", "two")
    assert outside.read_text() == "keep\n"
    assert (mem_dir / JOURNAL_NAME).read_bytes() == journal
    store.close()


def test_a_plain_file_put_in_place_between_two_edits_is_read(mem_dir: Path) -> None:
    """The benign twin: a hand edit saved by rename (a new inode, a plain file) is read and kept."""
    store = MemoryStore(mem_dir)
    store.add("memory", "one")
    fresh = mem_dir / "edited"
    fresh.write_text(f"one{ENTRY_DELIMITER}by hand\n")
    os.replace(fresh, mem_dir / "MEMORY.md")
    store.add("memory", "two")
    assert entries_on_disk(mem_dir) == ["one", "by hand", "two"]
    store.close()


def test_a_link_planted_while_the_edit_waits_for_the_lock_is_refused(
    mem_dir: Path, tmp_path: Path
) -> None:
    """Another process holds the lock and plants a link out before releasing it: the waiting edit
    looks after it got the lock, so it sees the link (a look taken before the wait would not)."""
    outside = tmp_path / "theirs.txt"
    outside.write_text("keep\n")
    store = MemoryStore(mem_dir)
    store.add("memory", "one")
    errors: list[BaseException] = []

    def edit() -> None:
        try:
            store.add("memory", "two")
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    with held(mem_dir / LOCK_NAME):
        waiting = threading.Thread(target=edit)
        waiting.start()
        waiting.join(0.3)  # it is waiting on the flock now
        assert waiting.is_alive()
        plant(mem_dir, outside, "link out")
    waiting.join()
    assert len(errors) == 1 and isinstance(errors[0], MemoryEditError), errors
    assert "symbolic link" in str(errors[0])
    assert outside.read_text() == "keep\n"
    store.close()


def test_the_look_serves_one_edit_of_the_thread_that_locked(
    mem_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offered look is used once, and only by the thread of the hold that took it; another
    thread, and a second look in the same hold, look again."""
    store = MemoryStore(mem_dir)
    store.add("memory", "one")
    files = store._folders["memory"].files
    looks: list[str] = []
    real_look = OwnFiles.look

    def counting_look(self: OwnFiles) -> tuple[os.stat_result | None, ...]:
        looks.append(threading.current_thread().name)
        return real_look(self)

    monkeypatch.setattr(OwnFiles, "look", counting_look)
    with store._hold(store._folders["memory"], "MEMORY.md"):
        assert looks == ["MainThread"]  # taken by the lock
        other = threading.Thread(
            target=lambda: files.locate("MEMORY.md", every_pair=True), name="other"
        )
        other.start()
        other.join()
        assert looks == ["MainThread", "other"], "another thread looks for itself"
        files.locate("MEMORY.md", every_pair=True)
        assert looks == ["MainThread", "other"], "the edit uses the offered look"
        files.locate("MEMORY.md", every_pair=True)
        assert looks == ["MainThread", "other", "MainThread"], "once"
    files.locate("MEMORY.md", every_pair=True)
    assert len(looks) == 4, "no look outlives its hold"
    store.close()


def test_a_lock_whose_look_disagrees_with_its_descriptor_does_not_loop(
    mem_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system whose `lstat` reports other inodes than `fstat` must not make the lock spin:
    a freshly opened `.lock` still named falls back to its count of names."""
    store = MemoryStore(mem_dir, lock_timeout=1)
    store.add("memory", "one")
    real_look = OwnFiles.look
    at = NAMES.index(LOCK_NAME)
    opened: list[int] = []
    real_open = os.open

    def other_inode(self: OwnFiles) -> tuple[os.stat_result | None, ...]:
        look = list(real_look(self))
        named = look[at]
        assert named is not None
        look[at] = os.stat_result((named.st_mode, named.st_ino ^ (1 << 40), *tuple(named)[2:]))
        return tuple(look)

    def counting_open(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith(LOCK_NAME):
            opened.append(1)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(OwnFiles, "look", other_inode)
    monkeypatch.setattr(os, "open", counting_open)
    store.add("memory", "two")
    assert len(opened) == 1, "re-opened once, then its count of names decided"
    assert entries_on_disk(mem_dir) == ["one", "two"]
    store.close()


# ------------------------------------------------------------------------------------------ backups and the sweep


def hand_edit(mem_dir: Path) -> None:
    (mem_dir / "MEMORY.md").write_bytes(b"hand edited\r\n")


def test_a_backup_is_written_through_an_unguessable_temp_name(
    mem_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import my_agent_core.safe_write as safe_write

    created: list[str] = []
    real_open = os.open

    def spy(path: object, flags: int, *args: int, **kwargs: object) -> int:
        created.append(os.fspath(path))  # type: ignore[arg-type]
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    store = MemoryStore(mem_dir)
    store.add("memory", "x")
    hand_edit(mem_dir)
    monkeypatch.setattr(safe_write.os, "open", spy)
    store.add("memory", "y")
    monkeypatch.undo()
    temps = [Path(p) for p in created if p.endswith(".tmp") and "/.backups/" in p]
    assert len(temps) == 1
    (backup,) = (mem_dir / ".backups").iterdir()
    # `.NAME.<stamp>.bak.<96 random bits>.tmp`, not a name an attacker can plant a link at
    assert temps[0].name.startswith(f".{backup.name}.")
    assert len(temps[0].name) == len(f".{backup.name}.") + 24 + len(".tmp")
    assert backup.read_bytes() == b"hand edited\r\n"
    store.close()


@pytest.mark.parametrize(
    "leftover",
    [
        ".backups/.MEMORY.md.20260101T000000.000000001.42.bak.0123456789abcdef01234567.tmp",
        ".backups/.MEMORY.md.20260101T000000.000000001.42.bak.tmp",  # older versions' name
        ".MEMORY.md.0123456789abcdef01234567.tmp",
        ".history.jsonl.1a2b3c4d.tmp",
    ],
)
def test_the_load_sweeps_a_dead_writers_temp_files_unless_the_lock_is_held(
    mem_dir: Path, leftover: str
) -> None:
    store = MemoryStore(mem_dir)
    store.add("memory", "x")
    hand_edit(mem_dir)
    store.add("memory", "y")  # `.backups/` exists now
    path = mem_dir / leftover
    path.write_text("half a copy")
    keep = mem_dir / ".backups" / "notes.txt"  # benign twin: not a temp file of ours
    keep.write_text("mine")
    with held(mem_dir / LOCK_NAME):  # a writer is mid-write: its temp file is not stale
        store.load_from_disk()
    assert path.exists()
    store.load_from_disk()
    assert not path.exists()
    assert keep.read_text() == "mine"
    assert store.entries("memory") == ["hand edited", "y"]
    store.close()
