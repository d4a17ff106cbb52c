"""Curated long-term memory: two small Markdown files, one parser, one store, one `memory` tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from my_agent_core.lazy import lazy_exports

if TYPE_CHECKING:
    from my_agent_core.layout import (
        FILE_NAMES,
        MEMORY_SUBDIR,
        TARGETS,
        memory_dir_of,
        target_of_file,
    )
    from my_agent_core.memory.document import ENTRY_DELIMITER, MemoryDocument, parse, serialize
    from my_agent_core.memory.errors import (
        MemoryChanged,
        MemoryEditError,
        MemoryLockTimeout,
        MemoryStoreError,
        MemoryWriteError,
    )
    from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT
    from my_agent_core.memory.location import (
        USER_PROFILE_ENV,
        UserProfile,
        global_profile_dir,
        open_store,
        resolve_user_profile,
    )
    from my_agent_core.memory.memory_tool import make_memory_tool
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.memory.store_types import MemoryPreview, Operation, StoreState

# Loaded on first use: `my-agent` and the git merge driver start without the store and the scanner.
__getattr__ = lazy_exports(
    __name__,
    {
        "ENTRY_DELIMITER": "document",
        "MemoryDocument": "document",
        "parse": "document",
        "serialize": "document",
        "USER_PROFILE_ENV": "location",
        "UserProfile": "location",
        "global_profile_dir": "location",
        "open_store": "location",
        "resolve_user_profile": "location",
        "FILE_NAMES": "..layout",
        "MEMORY_SUBDIR": "..layout",
        "TARGETS": "..layout",
        "memory_dir_of": "..layout",
        "target_of_file": "..layout",
        "MEMORY_CHAR_LIMIT": "limits",
        "USER_CHAR_LIMIT": "limits",
        "MemoryChanged": "errors",
        "MemoryEditError": "errors",
        "MemoryLockTimeout": "errors",
        "MemoryStoreError": "errors",
        "MemoryWriteError": "errors",
        "MemoryPreview": "store_types",
        "MemoryStore": "store",
        "Operation": "store_types",
        "StoreState": "store_types",
        "make_memory_tool": "memory_tool",
    },
)

__all__ = [
    "ENTRY_DELIMITER",
    "FILE_NAMES",
    "MEMORY_CHAR_LIMIT",
    "MEMORY_SUBDIR",
    "TARGETS",
    "USER_CHAR_LIMIT",
    "USER_PROFILE_ENV",
    "MemoryChanged",
    "MemoryDocument",
    "MemoryEditError",
    "MemoryLockTimeout",
    "MemoryPreview",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryWriteError",
    "Operation",
    "StoreState",
    "UserProfile",
    "global_profile_dir",
    "make_memory_tool",
    "memory_dir_of",
    "open_store",
    "parse",
    "resolve_user_profile",
    "serialize",
    "target_of_file",
]
