"""Curated long-term memory: two small Markdown files, one parser, one store, one `memory` tool."""

from my_agent_core.memory.document import ENTRY_DELIMITER, MemoryDocument, parse, serialize
from my_agent_core.memory.location import (
    USER_PROFILE_ENV,
    UserProfile,
    global_profile_dir,
    open_store,
    resolve_user_profile,
)
from my_agent_core.memory.paths import (
    FILE_NAMES,
    MEMORY_SUBDIR,
    TARGETS,
    memory_dir_of,
    target_of_file,
)
from my_agent_core.memory.store import (
    MEMORY_CHAR_LIMIT,
    USER_CHAR_LIMIT,
    MemoryChanged,
    MemoryEditError,
    MemoryPreview,
    MemoryStore,
    Operation,
    StoreState,
)
from my_agent_core.memory.tool import make_memory_tool

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
    "MemoryPreview",
    "MemoryStore",
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
