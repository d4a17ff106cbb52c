"""my-agent-core: curated agent memory (MEMORY.md / USER.md), its tool, agent loop and language server."""

__version__ = "0.1.0"
