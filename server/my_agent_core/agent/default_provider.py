"""The memory provider an agent gets when it is not handed one: the archive, on by default.

docs/contract.md: the archive is on by default, in the editor, `my-agent mcp`, the Python API and
the terminal chat alike, so a fact told in one session is recalled in the next and what a replace
or remove took out of memory stays searchable, whichever front end wrote it. `resolve()` calls
`choose_provider` with `AgentConfig.provider`:

- a `MemoryManager`: used as given (the editor and the terminal chat build their own); the caller
  owns it;
- None: the provider `MY_AGENT_MEMORY_PROVIDER` names, else `archive`, when the agent has memory
  in a workspace layout (`<folder>/.my_agent_core/memory`: the archive lives beside it); an agent
  without memory (a sub-agent, `memory_dir=False`) never gets one;
- a name (`"archive"`, `"postgres"`, a plug-in's) or `"none"` (off), as `--provider` takes them.

A provider that was asked for (a name, or the environment variable) must work: when it cannot
start, `AgentConfigError` says why. The default that cannot start (a full disk, say) is logged and
the agent runs without recall, as the editor's sessions do.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..memory.location import workspace_of
from ..memory.providers.base import MemoryManager, ProviderFailed
from .errors import AgentConfigError

if TYPE_CHECKING:
    from ..memory.store import MemoryStore

__all__ = ["OFF", "choose_provider"]

OFF = "none"


def choose_provider(
    choice: MemoryManager | str | None, store: MemoryStore | None
) -> tuple[MemoryManager | None, bool]:
    """The manager the agent uses and whether the agent owns it (shuts it down when it closes)."""
    if choice is not None and not isinstance(choice, str):
        return choice, False
    if isinstance(choice, str) and choice.strip() == OFF:
        return None, False
    # Here: the registry (and the providers it names) loads only for an agent that may get one.
    from ..memory.providers.registry import (
        PROVIDER_ENV,
        ProviderContext,
        build_manager,
        provider_name,
    )

    from_env = bool(os.environ.get(PROVIDER_ENV, "").strip())
    asked = choice is not None or from_env
    name = choice.strip() if choice is not None else provider_name()
    if store is None:
        if choice is not None:
            raise ValueError(f"provider={choice!r} needs memory (memory_dir= or memory_store=).")
        return None, False
    if name == OFF:
        return None, False
    folder = workspace_of(store.mem_dir)
    if folder is None:
        if asked:
            raise AgentConfigError(
                f"The memory provider {name!r} keeps its archive per workspace folder, and "
                f"{store.mem_dir} is not a workspace's .my_agent_core/memory; pass "
                'memory_dir=<folder>/.my_agent_core/memory, or provider="none".'
            )
        return None, False
    errors: list[str] = []
    manager = build_manager(
        ProviderContext(folder), name=name, on_error=lambda _name, message: errors.append(message)
    )
    if not manager.active:
        if asked:
            why = errors[0] if errors else f"The memory provider {name!r} did not start."
            raise AgentConfigError(why.removesuffix(" Chat goes on without recalled memory."))
        return None, False
    if asked:
        try:
            manager.check()  # a server that cannot be reached is an error now, not an empty search
        except ProviderFailed as exc:
            manager.shutdown()
            raise AgentConfigError(f"The memory provider {name!r} cannot be used: {exc}") from None
    return manager, True
