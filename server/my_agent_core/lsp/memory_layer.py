"""The `myAgent.memory` settings the agent-facing memory requests need: the layer-2 provider and
where USER.md lives.

`layer_settings(ls)` merges the server's setting layers (initializationOptions < pushed < pulled,
as `Settings.resolve` does) for these keys only; junk is ignored. It returns the same shape as
`Settings.layer` of the chat branch (`provider_settings()`, `user_profile`), so once that lands
this function becomes `return ls.config.layer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from my_agent_core.memory.location import UserProfile, parse_user_profile

from .params import to_plain

__all__ = ["LayerSettings", "MemoryLayer", "SettingLayers", "layer_settings"]

_MAX_TEXT = 4096
_TEXT_KEYS = ("provider", "postgresDsn", "postgresProject")


class LayerSettings(Protocol):
    """What the memory requests read of `myAgent.memory` beyond the budgets."""

    @property
    def user_profile(self) -> UserProfile: ...

    def provider_settings(self) -> dict[str, object]: ...


class SettingLayers(Protocol):
    """The raw setting layers a server keeps (lowest priority first when listed in this order)."""

    init_options: dict[str, Any]
    pushed_settings: dict[str, Any]
    pulled_settings: dict[str, Any]


@dataclass(frozen=True)
class MemoryLayer:
    """`myAgent.memory.{provider, postgresDsn, postgresProject, semantic, userProfile}`; None or
    missing: the default (the provider then comes from MY_AGENT_MEMORY_PROVIDER, else archive)."""

    provider: str | None = None
    postgres_dsn: str | None = None
    postgres_project: str | None = None
    semantic: bool = False
    user_profile: UserProfile = "workspace"

    def provider_settings(self) -> dict[str, object]:
        """The section as a provider factory reads it (`ProviderContext.settings`)."""
        out: dict[str, object] = {"semantic": self.semantic}
        for key, value in zip(
            _TEXT_KEYS, (self.provider, self.postgres_dsn, self.postgres_project), strict=True
        ):
            if value is not None:
                out[key] = value
        return out


def layer_settings(ls: SettingLayers) -> MemoryLayer:
    """The effective values over the server's layers (a later layer's valid value wins)."""
    return merge_layers([ls.init_options, ls.pushed_settings, ls.pulled_settings])


def merge_layers(layers: Sequence[object]) -> MemoryLayer:
    """`MemoryLayer` from raw `myAgent` objects, lowest priority first."""
    texts: dict[str, str] = {}
    semantic = False
    profile: UserProfile = "workspace"
    for layer in layers:
        memory = _section(to_plain(layer), "memory")
        for key in _TEXT_KEYS:
            if (text := _text(memory.get(key))) is not None:
                texts[key] = text
        if isinstance(memory.get("semantic"), bool):
            semantic = memory["semantic"]
        found = parse_user_profile(memory.get("userProfile"))
        if found is not None:
            profile = found
    return MemoryLayer(
        provider=texts.get("provider"),
        postgres_dsn=texts.get("postgresDsn"),
        postgres_project=texts.get("postgresProject"),
        semantic=semantic,
        user_profile=profile,
    )


def _section(layer: object, key: str) -> Mapping[str, Any]:
    value = layer.get(key) if isinstance(layer, dict) else None
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    """A non-blank setting string of a sane length, stripped; None for anything else."""
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_TEXT:
        return None
    if "\x00" in value:
        return None
    return value.strip()
