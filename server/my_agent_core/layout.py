"""Where memory lives: the folder layout every component agrees on.

Below everything that names those places (the path checks, the private-files rule, the store), so
each imports it from below.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "FILE_NAMES",
    "JOURNAL_NAME",
    "LOCK_NAME",
    "MEMORY_SUBDIR",
    "TARGETS",
    "memory_dir_of",
    "target_of_file",
]

MEMORY_SUBDIR = (".my_agent_core", "memory")
TARGETS = ("memory", "user")
FILE_NAMES = {"memory": "MEMORY.md", "user": "USER.md"}
LOCK_NAME = ".lock"
JOURNAL_NAME = "history.jsonl"


def memory_dir_of(folder: Path | str) -> Path:
    """The memory folder of a workspace folder."""
    return Path(folder).joinpath(*MEMORY_SUBDIR)


def target_of_file(path: Path | str) -> str | None:
    """`memory` / `user` when the path is a memory file of some workspace, else None."""
    p = Path(path)
    if p.parent.name != MEMORY_SUBDIR[1] or p.parent.parent.name != MEMORY_SUBDIR[0]:
        return None
    for target, name in FILE_NAMES.items():
        if p.name == name:
            return target
    return None
