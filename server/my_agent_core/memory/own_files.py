"""The files of one memory folder that must stay separate files, found and read safely.

`MEMORY.md`, `USER.md`, `history.jsonl` and `.lock` are four files: one written through a second name
(a hard link, or a symbolic link from one name to another) would be written as two, and a memory file
that is a symbolic link out of the folder would feed the prompt someone else's file. Every edit looks
at all of them first, so this look is on the write path: the common case (no link among them) costs
one `lstat` a name; a link anywhere takes the full look-up of `my_agent_core.paths`. The lock takes
the look right after its `flock` (it shows whether `.lock` is still the file held) and the edit uses
that one. It is not cached from one edit to the next against the folder's stat: each edit's own
rename stamps the folder's mtime from the kernel's coarse clock, and a foreign change (a link planted
by a checkout) within the same tick would keep that stamp, so the cache would vouch for names it
never looked at.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from my_agent_core import paths
from my_agent_core.layout import FILE_NAMES, JOURNAL_NAME, LOCK_NAME
from my_agent_core.memory.errors import Unavailable
from my_agent_core.paths import (
    FileTooLarge,
    NotText,
    PathRefused,
    check_link_inside,
    look_up,
)

__all__ = ["OWN_NAMES", "Look", "OnDisk", "OwnFiles", "check_separate", "read_text", "signature"]

_FORMAT = 0o170000  # the file-type bits of `st_mode` (`stat.S_IFMT`)
_LINK = stat.S_IFLNK

#: The files of a memory folder that must stay separate files.
OWN_NAMES = (*FILE_NAMES.values(), JOURNAL_NAME, LOCK_NAME)


@dataclass(frozen=True, slots=True)
class OnDisk:
    """A memory file as an edit read it under the lock."""

    text: str
    entries: list[str]
    canonical: bool
    mode: int | None  # permission bits; None when there was no file
    digest: str | None  # its entries' digest, when this store wrote it (else computed on demand)


def signature(st: os.stat_result) -> tuple[int, ...]:
    """What identifies one version of a file: any rewrite changes it (ctime cannot be set back)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


#: What one look at the own files found: each name's `lstat` (None: missing), in `names` order.
Look = tuple[os.stat_result | None, ...]


class OwnFiles:
    """The own files (`names`) of the folder `dir`, looked at together for each edit.

    The lock takes that look right after its `flock` (it tells whether `.lock` is still the file
    held) and hands it on (`offer`) to the edit it holds the folder for, whose `locate` then uses it
    instead of looking again: one look an edit, taken under the lock, as before."""

    __slots__ = ("_base", "_joined", "_offered", "_paths", "dir", "names")

    def __init__(self, folder: Path, names: tuple[str, ...]) -> None:
        self.dir = folder
        self.names = names
        self._paths = {name: folder / name for name in names}
        #: The folder's absolute path when it was given as one (else joined for each look).
        self._base = os.path.normpath(folder) if os.path.isabs(folder) else None
        # the names joined to the absolute folder they were joined to (a relative one follows cwd)
        self._joined: tuple[str, tuple[str, ...]] = ("", ())
        # (thread, look): a look the lock took for the edit of that thread, used once
        self._offered: tuple[int, Look] | None = None

    def look(self) -> Look:
        """Each own name's `lstat` now (None: missing)."""
        base = self._base
        if base is None:  # a relative folder: joined to the working folder of now
            base = os.path.abspath(self.dir)
        joined_to, paths = self._joined
        if joined_to != base:
            paths = tuple(os.path.join(base, own) for own in self.names)
            self._joined = (base, paths)
        found: list[os.stat_result | None] = []
        for joined in paths:
            try:
                found.append(os.lstat(joined))
            except OSError:
                found.append(None)
        return tuple(found)

    def offer(self, look: Look) -> None:
        """Hand `look` (just taken under the lock) to this thread's next `locate`."""
        self._offered = (threading.get_ident(), look)

    def withdraw(self) -> None:
        """Drop an offered look that was not used (the lock is being released)."""
        self._offered = None

    def locate(self, name: str, *, every_pair: bool) -> tuple[Path, os.stat_result | None]:
        """Where the file `name` really is and its stat (None: missing), from one look at the
        folder's own files (the one the lock just took, if it offered one). Refused
        (`Unavailable`): a link out of the folder, and two own files that are one, since a write
        of one would be a write of the other; with `every_pair` any two, else only a pair that
        involves `name`."""
        offered = self._offered
        if offered is not None and offered[0] == threading.get_ident():
            self._offered = None
            found = offered[1]
        else:
            found = self.look()
        inodes: set[tuple[int, int]] = set()
        missing = 0
        for st in found:
            if st is None:
                missing += 1
            elif st.st_mode & _FORMAT == _LINK:
                return self._locate_through_links(name, every_pair=every_pair)
            else:
                inodes.add((st.st_dev, st.st_ino))
        if len(inodes) < len(found) - missing:  # two names are one file
            self._refuse_hard_links(name, found, every_pair=every_pair)
        return self._paths[name], found[self.names.index(name)]

    def _refuse_hard_links(self, name: str, found: Look, *, every_pair: bool) -> None:
        """No link among them, and still two names are one file: hard links of one inode. The
        first such pair decides, as `FolderNames.aliased_pair` (the look-up through links) does."""
        seen: dict[tuple[int, int], str] = {}
        for own, st in zip(self.names, found, strict=True):
            if st is None:
                continue
            first = seen.setdefault((st.st_dev, st.st_ino), own)
            if first != own:
                if every_pair or name in (first, own):
                    raise self._one_file(first, own)
                return

    def _locate_through_links(
        self, name: str, *, every_pair: bool
    ) -> tuple[Path, os.stat_result | None]:
        """`locate` when some own file is a symbolic link (links followed and compared)."""
        names = look_up(self.dir, self.names)
        named = names.names[name]
        path = self.dir / name
        if named.link:
            self.refuse_outside_link(path)
            path = Path(named.real or path)
        pair = names.aliased_pair()
        if pair is not None and (every_pair or name in pair):
            raise self._one_file(*pair)
        return path, named.stat

    def _one_file(self, first: str, second: str) -> Unavailable:
        return Unavailable(one_file_message(self.dir, first, second))

    def refuse_outside_link(self, path: Path) -> None:
        """Refuse (`Unavailable`) `path` when it is a symbolic link leading out of the folder."""
        try:
            check_link_inside(self.dir, path)
        except PathRefused as exc:
            raise Unavailable(str(exc)) from None


def one_file_message(folder: Path, first: str, second: str) -> str:
    """Why two own files that are one file are refused, and what to do about it."""
    return (
        f"{first} and {second} in {folder} are one file (joined by a hard link or a symbolic "
        "link); the store will not write one file as two. Make each a separate plain file, then "
        "retry."
    )


def check_separate(folder: Path, name: str) -> None:
    """Refuse (`PathRefused`) to read the own file `name` of `folder` as what it is named when it
    is one file with another own file: MEMORY.md linked to history.jsonl would show the journal
    as memory. For readers outside the store (a panel of a folder without a store, `my-agent
    lint`); the store's own look is `OwnFiles.locate`. Other names pass."""
    if name not in OWN_NAMES:
        return
    pair = look_up(folder, OWN_NAMES).aliased_pair()
    if pair is not None and name in pair:
        raise PathRefused(one_file_message(folder, *pair) + " It is not read.")


def read_text(path: Path, name: str, max_bytes: int) -> str:
    """The decoded text of a memory file ("" when missing); `name` is what messages call it.
    Refused (`Unavailable`): anything `paths.read_regular` refuses, and bytes that are not UTF-8."""
    try:
        text = paths.read_text(path, max_bytes=max_bytes, name=name)
    except FileTooLarge as exc:
        raise Unavailable(
            f"{exc} The budget is a few thousand characters: trim the file in an editor "
            "(`my-agent lint` shows what is over budget); the store will not touch it until then."
        ) from None
    except NotText as exc:
        raise Unavailable(
            f"{name} is not valid UTF-8 (bad byte at offset {exc.offset}); the store will "
            "not overwrite it. Fix or move the file, then retry."
        ) from None
    except PathRefused as exc:
        raise Unavailable(f"{exc} The store will not touch it.") from None
    return text if text is not None else ""  # a BOM stays: the parser skips it (non-canonical)
