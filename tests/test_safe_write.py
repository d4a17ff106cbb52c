"""The one safe writer's primitives on their own: `write_atomic` (a link at the final name is replaced,
never followed nor copied for its mode; `exclusive` creates once) and `make_folders` (never through a
link at any step). The writers that use them are attacked in test_planted_links.py."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from my_agent_core.memory.lock import open_lock_file
from my_agent_core.paths import PathRefused
from my_agent_core.safe_write import make_folders, write_atomic


def test_a_link_at_the_final_name_is_replaced_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "out.txt").symlink_to(victim)
    old = os.umask(0o022)
    try:
        write_atomic(folder / "out.txt", b"mine\n")
    finally:
        os.umask(old)
    assert victim.read_text() == "precious\n"
    st = os.lstat(folder / "out.txt")
    assert stat.S_ISREG(st.st_mode) and (folder / "out.txt").read_text() == "mine\n"
    assert stat.S_IMODE(st.st_mode) == 0o644  # the default less the umask, not the link's 0777


def test_the_benign_twin_keeps_the_mode_or_sets_the_one_asked(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old\n")
    path.chmod(0o640)
    write_atomic(path, b"new\n")
    assert path.read_text() == "new\n" and stat.S_IMODE(path.stat().st_mode) == 0o640
    write_atomic(path, b"newer\n", mode=0o600)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_exclusive_creates_once_and_never_replaces(tmp_path: Path) -> None:
    path = tmp_path / "key"
    write_atomic(path, b"first", mode=0o600, exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomic(path, b"second", mode=0o600, exclusive=True)
    assert path.read_bytes() == b"first"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):  # a link, even a dangling one, is a taken name
        write_atomic(tmp_path / "dangling", b"x", exclusive=True)
    assert not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "key"]  # no temp left

    wins: list[bytes] = []
    target = tmp_path / "raced"

    def race(n: int) -> None:
        try:
            write_atomic(target, bytes([n]) * 8, mode=0o600, exclusive=True)
            wins.append(bytes([n]))
        except FileExistsError:
            pass

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(wins) == 1 and target.read_bytes() == wins[0] * 8


def test_make_folders_never_goes_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathRefused, match="symbolic link"):
        make_folders(ws, "a", "b")
    (ws / "c").write_text("a file")
    with pytest.raises(PathRefused, match="a file, not a real folder"):
        make_folders(ws, "c", "d")
    with pytest.raises(PathRefused, match="does not exist"):
        make_folders(tmp_path / "missing", "x")
    assert list(outside.iterdir()) == []
    # The benign twin: created step by step, with the mode asked (less the umask), idempotent.
    made = make_folders(ws, "p", "q", mode=0o700)
    assert made == ws / "p" / "q" and made.is_dir()
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert make_folders(ws, "p", "q") == made
    with pytest.raises(ValueError):
        make_folders(ws, "p/q")


def test_a_lock_file_opens_in_place_never_through_a_link_or_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        open_lock_file(tmp_path / "fifo")  # returns at once: O_NONBLOCK
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="symbolic link"):
        open_lock_file(tmp_path / "link")
    assert not (tmp_path / "elsewhere").exists()
    fd = open_lock_file(tmp_path / ".lock")  # the benign twin
    try:
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600
    finally:
        os.close(fd)
