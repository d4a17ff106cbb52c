"""The effective `myAgent` settings: pulled configuration > initializationOptions > environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT

from .params import to_plain
from .uris import norm_path, uri_to_path

__all__ = ["Settings"]

_MAX_LIMIT = 10_000_000


@dataclass(frozen=True)
class Settings:
    """The effective `myAgent` settings: pulled configuration > initializationOptions > environment."""

    model: str | None = None
    base_url: str | None = None
    memory_char_limit: int = MEMORY_CHAR_LIMIT  # the store's defaults: one place for the budgets
    user_char_limit: int = USER_CHAR_LIMIT
    near_budget_share: float = 0.9
    untrusted_folders: frozenset[Path] = field(default_factory=frozenset)

    def limit(self, target: str) -> int:
        """The character budget of a target."""
        return self.user_char_limit if target == "user" else self.memory_char_limit

    def is_trusted(self, folder: Path) -> bool:
        """False for folders the client marked untrusted (memory linted, never used by the agent)."""
        return norm_path(folder) not in self.untrusted_folders

    @classmethod
    def resolve(
        cls, layers: list[Any], env: Mapping[str, str] | None = None, untrusted: Any = None
    ) -> Settings:
        """Merge setting layers (lowest priority first) and the environment fallbacks."""
        environ: Mapping[str, str] = os.environ if env is None else env
        model = environ.get("MY_AGENT_MODEL") or None
        base_url = environ.get("OPENAI_BASE_URL") or None
        limits = {"memory": MEMORY_CHAR_LIMIT, "user": USER_CHAR_LIMIT}
        share = 0.9
        untrusted_set: set[Path] = set(_folder_paths(untrusted))
        for layer in layers:
            layer = to_plain(layer)
            if not isinstance(layer, dict):
                continue
            if isinstance(layer.get("model"), str) and layer["model"].strip():
                model = layer["model"].strip()
            if isinstance(layer.get("baseUrl"), str) and layer["baseUrl"].strip():
                base_url = layer["baseUrl"].strip()
            if "untrustedFolders" in layer:
                untrusted_set |= set(_folder_paths(layer["untrustedFolders"]))
            memory = layer.get("memory")
            if not isinstance(memory, dict):
                continue
            for key, target in (("memoryCharLimit", "memory"), ("userCharLimit", "user")):
                value = memory.get(key)
                if _is_int(value) and 0 < value <= _MAX_LIMIT:
                    limits[target] = value
            value = memory.get("nearBudgetShare")
            if _is_number(value) and 0 < value <= 1:
                share = float(value)
        return cls(
            model=model,
            base_url=base_url,
            memory_char_limit=limits["memory"],
            user_char_limit=limits["user"],
            near_budget_share=share,
            untrusted_folders=frozenset(untrusted_set),
        )


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _folder_paths(value: Any) -> list[Path]:
    """Folder URIs (or paths) from a settings value, as normalised paths; junk is skipped."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    paths = []
    for item in value:
        if isinstance(item, str) and item:
            path = uri_to_path(item)
            if path is not None:
                paths.append(path)
    return paths
