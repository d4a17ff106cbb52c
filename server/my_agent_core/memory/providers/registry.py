"""Providers by name: the built-in `archive` (default) and `postgres`, `none` (memory provider off), and
third-party providers from the entry-point group `my_agent_core.memory_providers`.

An entry point names a factory: a callable taking one `ProviderContext` and returning a
`MemoryProvider` (a `MemoryProvider` subclass whose `__init__` takes the context works as is).
`build_manager` is what a session calls: it never raises; a provider that cannot start is reported once
through `on_error` and the session runs without a memory provider.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from my_agent_core.memory.providers.backlog import Backlog
from my_agent_core.memory.providers.base import (
    DEFAULT_TIMEOUT_S,
    ErrorCallback,
    MemoryManager,
    MemoryProvider,
)

__all__ = [
    "DEFAULT_PROVIDER",
    "ENTRY_POINT_GROUP",
    "PROVIDER_ENV",
    "SEMANTIC_ENV",
    "ProviderContext",
    "ProviderError",
    "ProviderFactory",
    "build_manager",
    "create_provider",
    "provider_name",
    "provider_names",
    "semantic_enabled",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "my_agent_core.memory_providers"
DEFAULT_PROVIDER = "archive"
OFF = "none"
PROVIDER_ENV = "MY_AGENT_MEMORY_PROVIDER"
SEMANTIC_ENV = "MY_AGENT_SEMANTIC"
_ON = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class ProviderContext:
    """What a provider factory gets: the workspace folder, the chat session (None for a person's
    tools), the `myAgent.memory` settings, and `report(message)` for notices a person should see
    (e.g. "the archive was damaged and moved aside")."""

    folder: Path
    session_id: str | None = None
    settings: Mapping[str, object] = field(default_factory=dict)
    report: Callable[[str], None] | None = None


ProviderFactory = Callable[[ProviderContext], MemoryProvider]


class ProviderError(RuntimeError):
    """A provider that cannot be found or started; the message says which and why."""


def semantic_enabled(
    settings: Mapping[str, object] | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """The one switch of semantic recall: the `semantic` setting (the editor's
    `myAgent.memory.semantic`, a command's `--semantic`) or MY_AGENT_SEMANTIC=1 in the environment
    (the CLI, `my-agent mcp`, the Python API); either one turns it on."""
    if (settings or {}).get("semantic") is True:
        return True
    environ = os.environ if env is None else env
    return environ.get(SEMANTIC_ENV, "").strip().lower() in _ON


def _archive(context: ProviderContext) -> MemoryProvider:
    # Here: a provider's modules (SQLite, the embedder, psycopg) load only when it is named.
    from my_agent_core.memory.providers.archive import ArchiveProvider

    if semantic_enabled(context.settings):
        from my_agent_core.memory.providers import semantic  # here: only when asked for

        reason = semantic.unavailable()
        if reason is None:
            return semantic.HybridArchiveProvider(
                context.folder,
                embedder=semantic.MiniLMEmbedder,  # loaded in the background, quietly
                session_id=context.session_id,
                report=context.report,
            )
        if context.report is not None:
            context.report(f"Semantic recall is on, but {reason}; using keyword recall.")
    return ArchiveProvider(context.folder, session_id=context.session_id, report=context.report)


def _postgres(context: ProviderContext) -> MemoryProvider:
    from my_agent_core.memory.providers.postgres import PostgresProvider  # here: see _archive

    return PostgresProvider.from_context(context)


_BUILTIN: dict[str, ProviderFactory] = {"archive": _archive, "postgres": _postgres}


def _third_party() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in _BUILTIN or point.name == OFF:
            logger.warning(
                "memory provider entry point %r (%s) shadows a built-in name; ignored",
                point.name,
                point.value,
            )
        elif point.name not in found:
            found[point.name] = point
    return found


def provider_names() -> list[str]:
    """Every name `create_provider` accepts: built-ins, "none", then installed plug-ins."""
    return [*_BUILTIN, OFF, *sorted(_third_party())]


def provider_name(settings: Mapping[str, object] | None = None) -> str:
    """The chosen provider: `myAgent.memory.provider`, else MY_AGENT_MEMORY_PROVIDER, else archive."""
    value = (settings or {}).get("provider")
    if isinstance(value, str) and value.strip():
        return value.strip()
    return os.environ.get(PROVIDER_ENV, "").strip() or DEFAULT_PROVIDER


def load_factory(name: str) -> ProviderFactory | None:
    """The factory registered under `name` (None for "none"); ProviderError when unknown or broken."""
    if name == OFF:
        return None
    if name in _BUILTIN:
        return _BUILTIN[name]
    point = _third_party().get(name)
    if point is None:
        raise ProviderError(
            f"Unknown memory provider {name!r}. Available: {', '.join(provider_names())} (plug-ins "
            f"register under the entry-point group {ENTRY_POINT_GROUP!r})."
        )
    try:
        factory = point.load()
    except Exception as exc:
        raise ProviderError(
            f"The memory provider {name!r} ({point.value}) could not be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not callable(factory):
        raise ProviderError(f"The memory provider {name!r} ({point.value}) is not callable.")
    return factory  # type: ignore[no-any-return]


def create_provider(name: str, context: ProviderContext) -> MemoryProvider | None:
    """A started provider (None for "none"); ProviderError when it cannot be found or started."""
    factory = load_factory(name)
    if factory is None:
        return None
    try:
        provider = factory(context)
    except ProviderError:
        raise
    except Exception as exc:
        raise ProviderError(
            f"The memory provider {name!r} could not start: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(provider, MemoryProvider):
        raise ProviderError(
            f"The memory provider {name!r} returned {type(provider).__name__}, not a MemoryProvider."
        )
    if not provider.name or provider.name == MemoryProvider.name:
        provider.name = name
    return provider


def build_manager(
    context: ProviderContext,
    *,
    name: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_error: ErrorCallback | None = None,
) -> MemoryManager:
    """The MemoryManager of one chat session, with the configured provider (or none). Never raises:
    a provider that cannot start is logged and reported once through `on_error`."""
    chosen = name or provider_name(context.settings)
    manager = MemoryManager(timeout_s=timeout_s, on_error=on_error, backlog=Backlog(context.folder))
    if context.report is None and on_error is not None:
        context = ProviderContext(
            context.folder,
            context.session_id,
            context.settings,
            lambda message: on_error(chosen, message),
        )
    try:
        provider = create_provider(chosen, context)
    except ProviderError as exc:
        logger.error("%s", exc)
        if on_error is not None:
            try:
                on_error(chosen, f"{exc} Chat goes on without recalled memory.")
            except Exception:
                logger.exception("memory provider error callback failed")
        return manager
    if provider is not None:
        manager.add_provider(provider)
    return manager
