"""The one path check: inside the folder, no link out, regular files only, bounded reads."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from my_agent_core.paths import (
    FileTooLarge,
    NotOwned,
    NotText,
    PathRefused,
    aliased_pair,
    check_link_inside,
    check_memory_file,
    check_memory_folder,
    is_inside,
    owned_by_user,
    read_regular,
    read_tail,
    read_text,
    resolve_inside,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "main.py").write_text("print(1)\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    return secret


def test_relative_and_absolute_paths_inside_are_resolved(root: Path) -> None:
    real = Path(os.path.realpath(root))
    assert resolve_inside(root, "src/main.py") == real / "src" / "main.py"
    assert resolve_inside(root, "./src/../src/main.py") == real / "src" / "main.py"
    assert resolve_inside(root, str(root / "src" / "main.py")) == real / "src" / "main.py"
    assert resolve_inside(root, ".") == real
    assert resolve_inside(root, "new/file.txt") == real / "new" / "file.txt"


@pytest.mark.parametrize("bad", ["../x", "src/../../x", "..", "a/b/../../../etc/passwd"])
def test_dot_dot_out_of_the_folder_is_refused(root: Path, bad: str) -> None:
    with pytest.raises(PathRefused, match="climbs out"):
        resolve_inside(root, bad)


def test_absolute_path_elsewhere_is_refused(root: Path, outside: Path) -> None:
    with pytest.raises(PathRefused, match="absolute path outside"):
        resolve_inside(root, str(outside))


def test_symlink_out_is_refused_in_any_component(root: Path, outside: Path) -> None:
    (root / "leak.txt").symlink_to(outside)
    (root / "up").symlink_to(outside.parent, target_is_directory=True)
    for path in ("leak.txt", "up/secret.txt", "up/new-file.txt"):
        with pytest.raises(PathRefused, match="symbolic link"):
            resolve_inside(root, path)


def test_symlink_inside_the_folder_is_followed(root: Path) -> None:
    (root / "alias.py").symlink_to("src/main.py")
    assert resolve_inside(root, "alias.py") == Path(os.path.realpath(root)) / "src" / "main.py"


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b"])
def test_empty_and_nul_paths_are_refused(root: Path, bad: str) -> None:
    with pytest.raises(PathRefused):
        resolve_inside(root, bad)


def test_is_inside_follows_links(root: Path, outside: Path) -> None:
    (root / "leak").symlink_to(outside)
    assert is_inside(root, root / "src" / "main.py")
    assert not is_inside(root, root / "leak")
    assert not is_inside(root / "src", root)


def test_memory_folder_linked_out_of_its_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "memory").mkdir(parents=True)
    (ws / ".my_agent_core").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathRefused, match="outside the workspace folder"):
        check_memory_folder(ws / ".my_agent_core" / "memory")

    ws2 = tmp_path / "ws2"
    (ws2 / ".my_agent_core").mkdir(parents=True)
    (ws2 / ".my_agent_core" / "memory").symlink_to(elsewhere / "memory", target_is_directory=True)
    with pytest.raises(PathRefused, match="outside the workspace folder"):
        check_memory_folder(ws2 / ".my_agent_core" / "memory")


def test_memory_folder_linked_inside_its_workspace_and_custom_folders_pass(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / ".my_agent_core").mkdir()
    (ws / ".my_agent_core" / "memory").symlink_to(ws / "notes", target_is_directory=True)
    check_memory_folder(ws / ".my_agent_core" / "memory")
    custom = tmp_path / "custom-link"
    custom.symlink_to(tmp_path, target_is_directory=True)
    check_memory_folder(custom)  # not the workspace layout: taken as given


def test_read_regular_reads_bounded(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    assert read_regular(path, max_bytes=10) is None
    path.write_bytes(b"0123456789")
    assert read_regular(path, max_bytes=10) == b"0123456789"
    with pytest.raises(FileTooLarge, match="more than the 5 bytes") as info:
        read_regular(path, max_bytes=5, name="MEMORY.md")
    assert info.value.size == 10
    assert str(info.value).startswith("MEMORY.md is 10 bytes")
    assert read_regular(path, max_bytes=4, truncate=True) == b"0123"


def test_read_regular_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "MEMORY.md"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_regular(fifo, max_bytes=100)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(outcome[0], PathRefused)
    assert "FIFO" in str(outcome[0])


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_read_regular_refuses_devices_and_links_to_them(tmp_path: Path, device: str) -> None:
    with pytest.raises(PathRefused, match="character device"):
        read_regular(device, max_bytes=100)
    link = tmp_path / "MEMORY.md"
    link.symlink_to(device)
    with pytest.raises(PathRefused, match="character device"):
        read_regular(link, max_bytes=100)


def test_read_regular_refuses_folders_and_link_loops(tmp_path: Path) -> None:
    with pytest.raises(PathRefused, match="a folder"):
        read_regular(tmp_path, max_bytes=100)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(PathRefused, match="loop"):
        read_regular(loop, max_bytes=100)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_read_regular_unreadable_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(PathRefused, match="permission denied"):
        read_regular(path, max_bytes=100)


def test_read_tail_reads_the_end_of_a_file(tmp_path: Path) -> None:
    path = tmp_path / "log"
    assert read_tail(path, max_bytes=10) is None
    path.write_bytes(b"0123456789abcdef")
    assert read_tail(path, max_bytes=100) == (b"0123456789abcdef", False)
    assert read_tail(path, max_bytes=6) == (b"abcdef", True)


@pytest.mark.timeout(20)
def test_read_tail_refuses_what_read_regular_refuses(tmp_path: Path) -> None:
    fifo = tmp_path / "history.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(PathRefused, match="FIFO"):
        read_tail(fifo, max_bytes=100)
    with pytest.raises(PathRefused, match="character device"):
        read_tail("/dev/zero", max_bytes=100)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(PathRefused, match="loop"):
        read_tail(loop, max_bytes=100)


def test_read_regular_bounds_a_file_that_claims_no_size(tmp_path: Path) -> None:
    """/proc files report size 0 and then produce text: the bound holds while reading, too."""
    with pytest.raises(FileTooLarge):
        read_regular("/proc/self/maps", max_bytes=16)
    assert len(read_regular("/proc/self/maps", max_bytes=16, truncate=True) or b"") == 16


OWN = ("MEMORY.md", "USER.md", "history.jsonl", ".lock")


def test_aliased_pair_finds_hard_links_and_links_between_names(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    assert aliased_pair(folder, OWN) is None
    (folder / "MEMORY.md").write_text("a\n")
    (folder / "history.jsonl").write_text("{}\n")
    assert aliased_pair(folder, OWN) is None

    os.link(folder / "MEMORY.md", folder / "USER.md")
    assert aliased_pair(folder, OWN) == ("MEMORY.md", "USER.md")
    (folder / "USER.md").unlink()

    (folder / "USER.md").symlink_to("history.jsonl")
    assert aliased_pair(folder, OWN) == ("USER.md", "history.jsonl")
    (folder / "USER.md").unlink()

    (folder / "USER.md").symlink_to(".lock")  # dangling: .lock does not exist yet
    assert aliased_pair(folder, OWN) == ("USER.md", ".lock")
    (folder / "USER.md").unlink()

    (folder / "hop").symlink_to("MEMORY.md")  # a chain of links still lands on MEMORY.md
    (folder / ".lock").symlink_to("hop")
    assert aliased_pair(folder, OWN) == (".lock", "MEMORY.md")


def test_aliased_pair_lets_links_to_other_files_and_loops_pass(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "MEMORY.real.md").write_text("a\n")
    (folder / "MEMORY.md").symlink_to("MEMORY.real.md")
    (folder / "USER.md").symlink_to("USER.md")  # a loop: the reader refuses it, it joins nothing
    assert aliased_pair(folder, OWN) is None


def test_aliased_pair_sees_through_a_linked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "history.jsonl").write_text("{}\n")
    (real / "MEMORY.md").symlink_to(real / "history.jsonl")  # absolute, through the real path
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert aliased_pair(link, OWN) == ("MEMORY.md", "history.jsonl")


def test_check_link_inside(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "real.md").write_text("x")
    (folder / "in").symlink_to("real.md")
    (folder / "out").symlink_to(outside)
    (folder / "self").symlink_to(".")
    check_link_inside(folder, folder / "in")
    check_link_inside(folder, folder / "real.md")
    check_link_inside(folder, folder / "missing")
    for name in ("out", "self"):
        with pytest.raises(PathRefused, match="outside the memory folder"):
            check_link_inside(folder, folder / name)


def test_check_memory_file_applies_to_the_workspace_layout_only(
    tmp_path: Path, outside: Path
) -> None:
    mem = tmp_path / "ws" / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").symlink_to(outside)
    with pytest.raises(PathRefused, match="outside the memory folder"):
        check_memory_file(mem / "MEMORY.md")
    elsewhere = tmp_path / "notes.md"
    elsewhere.symlink_to(outside)
    check_memory_file(elsewhere)  # a path the caller named outside any memory folder

    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    (ws2 / ".my_agent_core").symlink_to(tmp_path / "ws" / ".my_agent_core", True)
    with pytest.raises(PathRefused, match="outside the workspace folder"):
        check_memory_file(ws2 / ".my_agent_core" / "memory" / "USER.md")


# ---------------------------------------------------------------------------- owned_by_user


def test_owned_by_user_accepts_what_this_user_made(tmp_path: Path) -> None:
    """The benign twins: an owner-only file, a folder nobody else may change, a missing path."""
    own = tmp_path / "key"
    own.write_bytes(b"k")
    own.chmod(0o600)
    st = owned_by_user(own)
    assert st is not None and st.st_size == 1
    shared_read = tmp_path / "shared"
    shared_read.mkdir(mode=0o755)
    shared_read.chmod(0o755)
    assert owned_by_user(shared_read, folder=True, closed_to=0o022) is not None
    assert owned_by_user(tmp_path / "missing") is None


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606])
def test_owned_by_user_refuses_a_file_open_to_others(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "key"
    path.write_bytes(b"k")
    path.chmod(mode)
    with pytest.raises(NotOwned, match=f"mode {mode:04o}, owned by uid {os.getuid()}") as caught:
        owned_by_user(path)
    assert not caught.value.wrong_kind


def test_owned_by_user_refuses_a_folder_others_may_change(tmp_path: Path) -> None:
    path = tmp_path / "state"
    path.mkdir()
    path.chmod(0o777)
    with pytest.raises(NotOwned) as caught:
        owned_by_user(path, folder=True, closed_to=0o022)
    assert not caught.value.wrong_kind


def test_owned_by_user_never_follows_a_link_nor_takes_another_kind(tmp_path: Path) -> None:
    """A planted link to an owner-only file, a FIFO, a folder where a file belongs, a file where a
    folder belongs: each is named, and nothing is opened."""
    real = tmp_path / "real"
    real.write_bytes(b"k")
    real.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(real)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    folder = tmp_path / "folder"
    folder.mkdir(mode=0o700)
    for path, as_folder, what in (
        (link, False, "a symbolic link"),
        (fifo, False, "a FIFO"),
        (folder, False, "a folder"),
        (real, True, "a regular file"),
    ):
        with pytest.raises(NotOwned, match=what) as caught:
            owned_by_user(path, folder=as_folder)
        assert caught.value.wrong_kind


# ---------------------------------------------------------------------------- read_text


def test_read_text_decodes_a_named_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes("\ufeffcafé\n".encode())
    assert read_text(path, max_bytes=100) == "\ufeffcafé\n"  # the BOM is text unless asked
    assert read_text(path, max_bytes=100, bom=True) == "café\n"
    assert read_text(tmp_path / "missing", max_bytes=100) is None


def test_read_text_refuses_what_is_not_utf8_text(tmp_path: Path) -> None:
    latin = tmp_path / "latin.md"
    latin.write_bytes(b"caf\xe9")
    with pytest.raises(NotText, match=r"notes is not valid UTF-8 \(bad byte at offset 3\)") as bad:
        read_text(latin, max_bytes=100, name="notes")
    assert bad.value.offset == 3
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(PathRefused, match="FIFO"):
        read_text(fifo, max_bytes=100)
    big = tmp_path / "big.md"
    big.write_text("x" * 101)
    with pytest.raises(FileTooLarge):
        read_text(big, max_bytes=100)
