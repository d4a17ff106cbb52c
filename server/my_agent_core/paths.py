"""The one check for every file the server reads or writes: inside its folder, no link out, a regular
file, a bounded size.

Memory files, context files, the workspace tools and the archive all come from folders a cloned
repository controls, so a path is data: it may climb out with `..`, point a symbolic link at the
user's files, or name a FIFO or a device that hangs or floods a reader. Everything the server opens
goes through these functions, so the rules are the same everywhere and the messages say what to do.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from my_agent_core.layout import MEMORY_SUBDIR

__all__ = [
    "FileTooLarge",
    "FolderNames",
    "Named",
    "NotOwned",
    "NotText",
    "PathRefused",
    "aliased_pair",
    "check_link_inside",
    "check_memory_file",
    "check_memory_folder",
    "is_inside",
    "kind_of",
    "look_up",
    "owned_by_user",
    "read_regular",
    "read_tail",
    "read_text",
    "resolve_inside",
    "size_text",
]

_READ_CHUNK = 1 << 16


class PathRefused(ValueError):
    """A path the server will not read or write; the message says why and what the caller can do."""


class FileTooLarge(PathRefused):
    """A regular file larger than the reader's bound (`size` and `limit` are bytes)."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


def is_inside(root: Path | str, path: Path | str) -> bool:
    """True when the REAL location of `path` is `root` or below it (both resolved, links followed)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def resolve_inside(
    root: Path | str, candidate: str | os.PathLike[str], *, what: str = "path"
) -> Path:
    """`candidate` (relative to `root`, or absolute) as a real path inside `root`.

    Refused with a clear message: an empty path, a NUL byte, a path that climbs out with `..`, an
    absolute path elsewhere, and a path whose symbolic links (in any component, the last one
    included) lead out of `root`. A path that does not exist yet is resolved through its existing
    parents, so a new file can be created only where its folder really is inside `root`.
    """
    raw = os.fspath(candidate)
    if not isinstance(raw, str):
        raise PathRefused(f"The {what} must be text.")
    if not raw.strip():
        raise PathRefused(
            f"The {what} is empty: pass a path relative to the folder, e.g. src/main.py."
        )
    if "\x00" in raw:
        raise PathRefused(f"The {what} contains a NUL character.")
    real_root = Path(os.path.realpath(root))
    if os.path.isabs(raw):
        joined = Path(os.path.normpath(raw))
    else:
        parts = PurePosixPath(raw.replace(os.sep, "/")).parts
        depth = 0
        for part in parts:
            depth = depth - 1 if part == ".." else depth + (part not in (".", ""))
            if depth < 0:
                raise PathRefused(
                    f"The {what} {_shown(raw)} climbs out of the folder with `..`; only paths inside "
                    f"{real_root} can be used."
                )
        joined = Path(root) / raw
    real = Path(os.path.realpath(joined))
    if not is_inside(real_root, real):
        if os.path.isabs(raw) and not is_inside(real_root, os.path.normpath(raw)):
            reason = "is an absolute path outside the folder"
        else:
            reason = f"leads out of the folder through a symbolic link (to {real})"
        raise PathRefused(
            f"The {what} {_shown(raw)} {reason}; only paths inside {real_root} can be used."
        )
    return real


def check_memory_folder(mem_dir: Path | str) -> None:
    """Refuse a memory folder laid out as `<folder>/.my_agent_core/memory` whose `.my_agent_core` or
    `memory` is a symbolic link leading out of `<folder>` (a cloned repository could aim it at the
    user's files). Other folders (an explicit `--dir`, a test's temp folder) are taken as given.
    """
    mem = os.path.abspath(mem_dir)
    parent, name = os.path.split(mem)
    workspace, parent_name = os.path.split(parent)
    if (parent_name, name) != MEMORY_SUBDIR:
        return
    for link in (parent, mem):  # two lstat calls: this runs before every edit
        if os.path.islink(link) and not is_inside(workspace, link):
            raise PathRefused(
                f"{link} is a symbolic link to {os.path.realpath(link)}, outside the workspace folder "
                f"{workspace}; memory is not read or written through it (a cloned repository could aim "
                "it at your files). Replace the link with a real folder."
            )


def check_link_inside(folder: Path | str, path: Path | str) -> None:
    """Refuse `path` when it is a symbolic link whose real location is not strictly inside `folder`
    (a link loop is left to the reader, which refuses it). A plain file or a missing one passes."""
    if not os.path.islink(path):
        return
    real = os.path.realpath(path)
    if real == os.path.realpath(folder) or not is_inside(folder, real):
        raise PathRefused(
            f"{Path(path).name} is a symbolic link to {real}, outside the memory folder; it is not "
            "read or written through it (a cloned repository could aim it at your files)."
        )


def check_memory_file(path: Path | str) -> None:
    """For a file of a workspace's memory folder (`.my_agent_core/memory/<name>`): refuse a memory
    folder linked out of its workspace and a file linked out of its memory folder. Any other path
    is taken as given (the caller named it)."""
    mem_dir = Path(os.path.abspath(path)).parent
    if (mem_dir.parent.name, mem_dir.name) != MEMORY_SUBDIR:
        return
    check_memory_folder(mem_dir)
    check_link_inside(mem_dir, path)


@dataclass(frozen=True, slots=True)
class Named:
    """One name of a folder, looked up once: whether it is a symbolic link, where a link really
    leads, and the file the name gives (links followed; None: missing, dangling or a loop)."""

    path: str
    link: bool
    real: str | None
    stat: os.stat_result | None


@dataclass(frozen=True, slots=True)
class FolderNames:
    """Several names of one folder looked up together (`look_up`), for checks that compare them."""

    folder: str
    names: dict[str, Named]

    def aliased_pair(self) -> tuple[str, str] | None:
        """The first two names that are one file: hard links of one inode, or a symbolic link that
        leads to another of the names (whether that one exists yet or not)."""
        real_folder: str | None = None
        seen: dict[tuple[int, int], str] = {}
        for name, named in self.names.items():
            if named.link:
                if real_folder is None:
                    real_folder = os.path.realpath(self.folder)
                for other in self.names:
                    if other != name and named.real == os.path.join(real_folder, other):
                        return name, other
            if named.stat is None:
                continue
            key = (named.stat.st_dev, named.stat.st_ino)
            if key in seen:
                return seen[key], name
            seen[key] = name
        return None


def look_up(folder: Path | str, names: Iterable[str]) -> FolderNames:
    """`names` of `folder` as they are now: one lstat each (and a realpath and a stat for a link)."""
    base = os.path.abspath(folder)
    found: dict[str, Named] = {}
    for name in names:
        path = os.path.join(base, name)
        try:
            st: os.stat_result | None = os.lstat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            try:
                followed: os.stat_result | None = os.stat(path)
            except OSError:
                followed = None  # dangling or a loop: no inode to share
            found[name] = Named(path, True, os.path.realpath(path), followed)
        else:
            found[name] = Named(path, False, None, st)
    return FolderNames(base, found)


def aliased_pair(folder: Path | str, names: Iterable[str]) -> tuple[str, str] | None:
    """The first two of `names` (files of `folder`) that are one file: hard links of one inode, or a
    symbolic link that leads to another of the names (whether that one exists yet or not).

    Files a store keeps side by side (memory, history, lock) must stay separate: one written in
    place through a second name would be written as two.
    """
    return look_up(folder, names).aliased_pair()


class NotOwned(PathRefused):
    """A file or folder that only this user's program makes is not that: another kind (a link, a
    FIFO), another owner, or open to others. `wrong_kind` tells the first case from the others;
    `st` is what `lstat` found."""

    def __init__(self, path: Path, st: os.stat_result, *, wrong_kind: bool) -> None:
        what = (
            kind_of(st.st_mode)
            if wrong_kind
            else (f"mode {stat.S_IMODE(st.st_mode):04o}, owned by uid {st.st_uid}")
        )
        super().__init__(f"{path} is {what}")
        self.st = st
        self.wrong_kind = wrong_kind


def owned_by_user(
    path: Path, *, folder: bool = False, closed_to: int = 0o077
) -> os.stat_result | None:
    """`lstat(path)` when it is a real regular file (a real folder with `folder`) of this user that
    has none of the `closed_to` mode bits (0o077: owner-only; 0o022: nobody else may change it);
    None when it does not exist. A link is never followed. Raises `NotOwned` when it is something
    else, and the `OSError` of a path that cannot be looked at."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    is_kind = stat.S_ISDIR if folder else stat.S_ISREG
    if not is_kind(st.st_mode):
        raise NotOwned(path, st, wrong_kind=True)
    if st.st_uid != os.getuid() or st.st_mode & closed_to:
        raise NotOwned(path, st, wrong_kind=False)
    return st


def kind_of(mode: int) -> str:
    """A person's name for a file type (for messages)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def read_regular(
    path: Path | str,
    *,
    max_bytes: int,
    truncate: bool = False,
    name: str | None = None,
) -> bytes | None:
    """The bytes of a regular file (None when it does not exist), never more than `max_bytes`.

    Never blocks and never floods: a folder, FIFO, device or socket is refused before it is read
    (a FIFO is opened non-blocking, so a writer that never comes cannot hang the reader), a link
    loop is refused, and a file over `max_bytes` raises `FileTooLarge`, or with `truncate` gives
    its first `max_bytes` bytes. `name` is what messages call the file (default: the path).
    """
    label = name or str(path)
    fd = _open_regular(path, label, None if truncate else max_bytes)
    if fd is None:
        return None
    try:
        data = _read_at_most(fd, max_bytes + 1, label)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while we read it
        if not truncate:
            raise _too_large(label, len(data), max_bytes)
        data = data[:max_bytes]
    return data


class NotText(PathRefused):
    """A file read as text that is not UTF-8 (`offset`: the first byte that is not)."""

    def __init__(self, label: str, offset: int) -> None:
        super().__init__(
            f"{label} is not valid UTF-8 (bad byte at offset {offset}); it is not read."
        )
        self.offset = offset


def read_text(
    path: Path | str, *, max_bytes: int, name: str | None = None, bom: bool = False
) -> str | None:
    """`read_regular` decoded as UTF-8 (without a leading BOM when `bom`): None when the file does
    not exist; `NotText` when it is not UTF-8, with `read_regular`'s other refusals."""
    label = name or str(path)
    data = read_regular(path, max_bytes=max_bytes, name=label)
    if data is None:
        return None
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise NotText(label, exc.start) from None


def read_tail(
    path: Path | str, *, max_bytes: int, name: str | None = None
) -> tuple[bytes, bool] | None:
    """The last `max_bytes` bytes of a regular file and whether the start was cut off (None when the
    file does not exist), with the same refusals as `read_regular`.

    For append-only logs, whose newest lines are the ones that matter: a log grown past any bound
    is still read, from its end.
    """
    label = name or str(path)
    fd = _open_regular(path, label, None)
    if fd is None:
        return None
    try:
        try:
            size = os.fstat(fd).st_size
            start = max(0, size - max_bytes)
            if start:
                os.lseek(fd, start, os.SEEK_SET)
        except OSError as exc:
            raise _refusal(label, exc) from None
        data = _read_at_most(fd, max_bytes, label)
    finally:
        os.close(fd)
    return data, start > 0


def _open_regular(path: Path | str, label: str, max_bytes: int | None) -> int | None:
    """A read-only descriptor of the regular file at `path` (None when missing), checked before it
    is opened (opening some devices has effects) and again once open (it may have been swapped)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refusal(label, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(
            f"{label} is {kind_of(st.st_mode)}, not a regular file; it is not read (move it away "
            "or replace it with a plain file)."
        )
    if max_bytes is not None and st.st_size > max_bytes:
        raise _too_large(label, st.st_size, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refusal(label, exc) from None
    try:
        st = os.fstat(fd)  # the file we opened, not the one we looked at: they may differ
    except OSError as exc:
        os.close(fd)
        raise _refusal(label, exc) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise PathRefused(f"{label} is {kind_of(st.st_mode)}, not a regular file; it is not read.")
    return fd


def _read_at_most(fd: int, limit: int, label: str) -> bytes:
    chunks: list[bytes] = []
    left = limit
    try:
        while left > 0:
            chunk = os.read(fd, min(_READ_CHUNK, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise _refusal(label, exc) from None
    return b"".join(chunks)


def _too_large(label: str, size: int, limit: int) -> FileTooLarge:
    return FileTooLarge(
        f"{label} is {size_text(size)}, more than the {size_text(limit)} this reader accepts; it is not read.",
        size,
        limit,
    )


def _refusal(label: str, exc: OSError) -> PathRefused:
    if exc.errno == errno.ELOOP:
        return PathRefused(f"{label} is a symbolic link loop; it is not read.")
    if exc.errno == errno.EISDIR:
        return PathRefused(f"{label} is a folder, not a file; it is not read.")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return PathRefused(f"{label} cannot be read: permission denied.")
    return PathRefused(f"{label} cannot be read: {exc.strerror or exc}.")


def size_text(n: int) -> str:
    """A byte count as a person reads it: `512 bytes`, `3.5 KiB`, `8.0 MiB`."""
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= 120 else raw[:117] + "...")
