"""Memory providers: pluggable providers behind one `MemoryManager` (exactly one provider at a time).

Built in: `archive` (SQLite FTS5 per folder, the default), `postgres` (a team's shared archive), `none`
(off); plug-ins register under the entry-point group `my_agent_core.memory_providers`. See
docs/providers.md for the hooks, the seams the agent calls and an example provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from my_agent_core.lazy import lazy_exports

if TYPE_CHECKING:
    from my_agent_core.memory.providers.base import (
        DEFAULT_RECALL_CHARS,
        DEFAULT_TIMEOUT_S,
        MemoryManager,
        MemoryProvider,
        ProviderAlreadySet,
    )
    from my_agent_core.memory.providers.items import RecallItem, SearchHit
    from my_agent_core.memory.providers.registry import (
        DEFAULT_PROVIDER,
        ENTRY_POINT_GROUP,
        ProviderContext,
        ProviderError,
        build_manager,
        create_provider,
        provider_name,
        provider_names,
    )
    from my_agent_core.memory.providers.search_tool import make_memory_search_tool

# The names live in submodules imported on first use: the CLI builds its parser (and the git merge
# driver starts) without loading the registry, importlib.metadata and the renderer.
__getattr__ = lazy_exports(
    __name__,
    {
        "DEFAULT_RECALL_CHARS": "base",
        "DEFAULT_TIMEOUT_S": "base",
        "MemoryManager": "base",
        "MemoryProvider": "base",
        "ProviderAlreadySet": "base",
        "RecallItem": "items",
        "SearchHit": "items",
        "DEFAULT_PROVIDER": "registry",
        "ENTRY_POINT_GROUP": "registry",
        "ProviderContext": "registry",
        "ProviderError": "registry",
        "build_manager": "registry",
        "create_provider": "registry",
        "provider_name": "registry",
        "provider_names": "registry",
        "make_memory_search_tool": "search_tool",
    },
)


__all__ = [
    "DEFAULT_PROVIDER",
    "DEFAULT_RECALL_CHARS",
    "DEFAULT_TIMEOUT_S",
    "ENTRY_POINT_GROUP",
    "MemoryManager",
    "MemoryProvider",
    "ProviderAlreadySet",
    "ProviderContext",
    "ProviderError",
    "RecallItem",
    "SearchHit",
    "build_manager",
    "create_provider",
    "make_memory_search_tool",
    "provider_name",
    "provider_names",
]
