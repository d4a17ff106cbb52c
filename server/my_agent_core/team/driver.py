"""`my-agent merge-driver BASE OURS THEIRS [PATH]`: git's merge driver for MEMORY.md.

Git runs it once per merged file with three temporary files (`%O %A %B`) and reads the result from
OURS. Exit 0 means merged; anything else makes git report a conflict and take OURS as it is for the
work tree (stages 1-3 of the index keep base, ours and theirs: `git show :3:PATH`), which is what
happens when a version cannot be read as text, or when a version or the merge is larger than the
memory store reads: better a conflict with every text kept than garbage or an unreadable file
committed.
The driver is a process per merge: it imports what the merge needs and nothing of the rest of the
command line.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TextIO

from my_agent_core.layout import FILE_NAMES, MEMORY_SUBDIR
from my_agent_core.memory.document import budget_used
from my_agent_core.memory.limits import MAX_FILE_BYTES, MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT
from my_agent_core.memory.merge import Merged, merge_texts
from my_agent_core.paths import FileTooLarge, NotText, PathRefused, read_text, size_text
from my_agent_core.safe_write import write_atomic
from my_agent_core.terminal_text import visible

__all__ = ["EXIT_MERGED", "EXIT_NOT_MERGED", "MAX_INPUT_BYTES", "DriverError", "run_driver"]

EXIT_MERGED = 0
EXIT_NOT_MERGED = 1  # git: a conflict, OURS left as it was
#: A memory file holds a few KiB. A version, or a merge, larger than the store reads of one file
#: (`memory/limits.py`) is not merged: the store would refuse the file the merge left.
MAX_INPUT_BYTES = MAX_FILE_BYTES
_KEPT = (
    "not merged, so git reports a conflict: ours stays as it was and theirs stays in git's index "
    "(`git checkout --theirs`)"
)
_PREVIEW = 100


class DriverError(Exception):
    """A version that cannot be merged (unreadable, not UTF-8, too large); the message says which."""


def run_driver(
    base: str,
    ours: str,
    theirs: str,
    label: str | None = None,
    *,
    err: TextIO | None = None,
) -> int:
    """Merge BASE and THEIRS into OURS entry by entry; the exit code git expects.

    `label` is the path git merges (`%P`), for messages and to pick the budget (USER.md or MEMORY.md).
    A file that does not exist counts as a version without entries (a side that added the file).
    """
    out = err if err is not None else sys.stderr
    shown = label or ours
    try:
        _refuse_link(ours)
        texts = [
            _read(role, path) for role, path in (("base", base), ("ours", ours), ("theirs", theirs))
        ]
        merged = merge_texts(*texts)
        size = len(merged.text.encode("utf-8"))
        if size > MAX_INPUT_BYTES:
            raise DriverError(
                f"the merged file would be {size_text(size)}, more than the "
                f"{size_text(MAX_INPUT_BYTES)} the memory store reads; {_KEPT}. Consolidate the "
                "entries on one side, then merge again."
            )
        if merged.text != texts[1]:
            _write(ours, merged.text)
    except DriverError as exc:
        print(f"my-agent merge-driver: {_clean(shown)}: {exc}", file=out)
        return EXIT_NOT_MERGED
    if label is not None:
        _record_pairs(label, merged)
    for line in _notes(merged, Path(shown).name):
        print(f"my-agent merge-driver: {_clean(shown)}: {line}", file=out)
    return EXIT_MERGED


def _read(role: str, path: str) -> str:
    """One version's text ("" when the file does not exist); DriverError when it cannot be read."""
    name = f"{role} version {path}"
    try:
        text = read_text(path, max_bytes=MAX_INPUT_BYTES, name=name)
    except NotText as exc:
        raise DriverError(
            f"the {name} is not valid UTF-8 (bad byte at offset {exc.offset}); not merged, so git "
            "reports a conflict and keeps ours as it was. Fix the encoding, then merge again."
        ) from None
    except FileTooLarge as exc:
        raise DriverError(
            f"the {name} is {size_text(exc.size)}, more than the {size_text(exc.limit)} the memory "
            f"store reads; {_KEPT}."
        ) from None
    except PathRefused as exc:
        raise DriverError(f"{exc} Not merged: resolve the conflict by hand.") from None
    return text if text is not None else ""


def _refuse_link(path: str) -> None:
    """OURS is replaced by a new file: never through (or instead of) a link or a special file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DriverError(f"ours ({path}) cannot be read: {exc.strerror}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise DriverError(f"ours ({path}) is not a regular file (a link?); not merged.")


def _write(path: str, text: str) -> None:
    """Replace OURS through the one safe writer (unguessable temp, no link followed, fsync, rename)
    keeping its mode: a crash leaves the old file, and a link planted beside it is never written."""
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise DriverError(
            f"cannot write ours ({path}): {exc.strerror or exc}; not merged."
        ) from None


def _record_pairs(label: str, merged: Merged) -> None:
    """Remember the entries both sides changed for the linter (`merge_pairs.py`), in the memory
    folder of the merged path: git runs the driver at the top of the work tree and `%P` is the
    path there. Only for a file of a workspace's `.my_agent_core/memory`; never fails the merge."""
    path = Path(label)
    if path.is_absolute() or (path.parent.parent.name, path.parent.name) != MEMORY_SUBDIR:
        return
    from my_agent_core.memory.merge_pairs import record_pairs  # here: start-up time (rarely)

    record_pairs(Path.cwd() / path.parent, path.name, merged.both_changed, merged.entries)


def _notes(merged: Merged, file_name: str) -> list[str]:
    """What a person should look at after the merge (the text is merged either way)."""
    notes: list[str] = []
    for o, t in merged.both_changed:
        notes.append(
            "an entry was changed on both sides; both versions are kept next to each other "
            "(`my-agent lint` points at them): keep one or merge them by hand:\n"
            f"    ours:   {_preview(o)}\n    theirs: {_preview(t)}"
        )
    for kept in merged.kept_over_removal:
        notes.append(f"kept an entry one side changed and the other removed: {_preview(kept)}")
    limit = USER_CHAR_LIMIT if file_name == FILE_NAMES["user"] else MEMORY_CHAR_LIMIT
    used = budget_used(list(merged.entries))
    if used > limit:
        notes.append(
            f"the merged file uses {used}/{limit} chars, over its budget; nothing was cut. "
            "`my-agent lint` shows it: consolidate entries before the next session."
        )
    return notes


def _preview(text: str) -> str:
    flat = _clean(" ".join(text.split()))
    return flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…"


def _clean(text: str) -> str:
    """Entry text and paths come from a repository: shown as every command line output is, its
    control and hidden characters as escapes (`terminal_text.visible`)."""
    return visible(text)
