"""The effective `myAgent` settings: pulled configuration > initializationOptions > environment.

Every value is optional and junk is ignored (it falls back to the default), so a hand-typed setting
can never break the server; the shapes are those of docs/protocol.md ("Settings", "Settings").
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT

from .params import to_plain
from .uris import norm_path, uri_to_path

__all__ = ["ChatSettings", "MemoryLayerSettings", "Settings", "ToolSettings"]

_MAX_LIMIT = 10_000_000
_MAX_WINDOW = 100_000_000
_MAX_COMMAND_TIMEOUT = 24 * 3600
_MAX_PATTERNS = 200
_MAX_PATTERN_CHARS = 500
_MAX_CONTEXT_CHARS = 200_000
_MAX_TEXT = 4096

MemoryApproval = Literal["untrusted", "ask", "auto"]
UserProfile = Literal["workspace", "global"]


@dataclass(frozen=True)
class ChatSettings:
    """`myAgent.chat`: the compaction threshold and how many persisted sessions are kept."""

    context_window: int = 0  # tokens; 0: from the model table
    compact_at: float = 0.8
    max_sessions: int = 50
    max_age_days: int = 30


@dataclass(frozen=True)
class ToolSettings:
    """`myAgent.tools`: what the workspace tools may do without asking, and which ripgrep to run."""

    approve_edits: bool = False
    allowed_commands: tuple[str, ...] = ()
    ripgrep_path: str | None = None
    command_timeout: int = 120  # seconds


@dataclass(frozen=True)
class MemoryLayerSettings:
    """`myAgent.memory` beyond the budgets: which agent writes ask first (`approval`: "untrusted",
    the default, asks for a write that may carry untrusted text; "ask" for every write; "auto" for
    none), the memory provider and the user profile's scope."""

    approval: MemoryApproval = "untrusted"
    provider: str | None = None  # None: MY_AGENT_MEMORY_PROVIDER, else "archive"
    postgres_dsn: str | None = None
    postgres_project: str | None = None
    semantic: bool = False
    user_profile: UserProfile = "workspace"

    def provider_settings(self) -> dict[str, object]:
        """The `myAgent.memory` section as a provider factory reads it (`ProviderContext.settings`)."""
        out: dict[str, object] = {"semantic": self.semantic}
        if self.provider is not None:
            out["provider"] = self.provider
        if self.postgres_dsn is not None:
            out["postgresDsn"] = self.postgres_dsn
        if self.postgres_project is not None:
            out["postgresProject"] = self.postgres_project
        return out


@dataclass(frozen=True)
class Settings:
    """The effective `myAgent` settings: pulled configuration > initializationOptions > environment."""

    model: str | None = None
    base_url: str | None = None
    memory_char_limit: int = MEMORY_CHAR_LIMIT  # the store's defaults: one place for the budgets
    user_char_limit: int = USER_CHAR_LIMIT
    near_budget_share: float = 0.9
    untrusted_folders: frozenset[Path] = field(default_factory=frozenset)
    chat: ChatSettings = field(default_factory=ChatSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    layer: MemoryLayerSettings = field(default_factory=MemoryLayerSettings)
    context_max_chars: int = 8000
    app_root: str | None = None  # the editor's install folder (`vscode.env.appRoot`): its ripgrep

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
        merged = _Merged(
            model=environ.get("MY_AGENT_MODEL") or None,
            base_url=environ.get("OPENAI_BASE_URL") or None,
        )
        merged.untrusted |= set(_folder_paths(untrusted))
        for layer in layers:
            layer = to_plain(layer)
            if isinstance(layer, dict):
                merged.take(layer)
        return merged.settings()


@dataclass
class _Merged:
    """The layers merged so far, key by key (a later layer's valid value wins)."""

    model: str | None = None
    base_url: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    untrusted: set[Path] = field(default_factory=set)
    allowed: tuple[str, ...] | None = None
    app_root: str | None = None

    def take(self, layer: dict[str, Any]) -> None:
        if (text := _text(layer.get("model"))) is not None:
            self.model = text
        if (text := _text(layer.get("baseUrl"))) is not None:
            self.base_url = text
        if (text := _text(layer.get("appRoot"))) is not None and os.path.isabs(text):
            self.app_root = text
        if "untrustedFolders" in layer:
            self.untrusted |= set(_folder_paths(layer["untrustedFolders"]))
        memory = _section(layer, "memory")
        self._int(memory, "memoryCharLimit", "memory_char_limit", 1, _MAX_LIMIT)
        self._int(memory, "userCharLimit", "user_char_limit", 1, _MAX_LIMIT)
        self._number(memory, "nearBudgetShare", "near_budget_share", 0.0, 1.0, low_open=True)
        self._choice(memory, "approval", "approval", ("untrusted", "ask", "auto"))
        self._choice(memory, "userProfile", "user_profile", ("workspace", "global"))
        for key, name in (
            ("provider", "provider"),
            ("postgresDsn", "postgres_dsn"),
            ("postgresProject", "postgres_project"),
        ):
            if (text := _text(memory.get(key))) is not None:
                self.values[name] = text
        if isinstance(memory.get("semantic"), bool):
            self.values["semantic"] = memory["semantic"]
        chat = _section(layer, "chat")
        self._int(chat, "contextWindow", "context_window", 0, _MAX_WINDOW)
        self._number(chat, "compactAt", "compact_at", 0.0, 1.0, low_open=True)
        sessions = _section(chat, "sessions")
        self._int(sessions, "maxCount", "max_sessions", 1, 100_000)
        self._int(sessions, "maxAgeDays", "max_age_days", 1, 100_000)
        tools = _section(layer, "tools")
        if isinstance(tools.get("approveEdits"), bool):
            self.values["approve_edits"] = tools["approveEdits"]
        if isinstance(tools.get("allowedCommands"), list):
            self.allowed = _patterns(tools["allowedCommands"])
        if (text := _text(tools.get("ripgrepPath"))) is not None and os.path.isabs(text):
            self.values["ripgrep_path"] = text
        self._int(tools, "commandTimeout", "command_timeout", 1, _MAX_COMMAND_TIMEOUT)
        self._int(
            _section(layer, "context"), "maxChars", "context_max_chars", 1, _MAX_CONTEXT_CHARS
        )

    def _int(self, section: dict[str, Any], key: str, name: str, low: int, high: int) -> None:
        value = section.get(key)
        if _is_int(value) and low <= value <= high:
            self.values[name] = value

    def _number(
        self,
        section: dict[str, Any],
        key: str,
        name: str,
        low: float,
        high: float,
        *,
        low_open: bool = False,
    ) -> None:
        value = section.get(key)
        if not _is_number(value) or value != value:  # NaN
            return
        if (low < value if low_open else low <= value) and value <= high:
            self.values[name] = float(value)

    def _choice(
        self, section: dict[str, Any], key: str, name: str, options: tuple[str, ...]
    ) -> None:
        value = section.get(key)
        if isinstance(value, str) and value in options:
            self.values[name] = value

    def settings(self) -> Settings:
        v = self.values
        defaults = Settings()
        return Settings(
            model=self.model,
            base_url=self.base_url,
            memory_char_limit=v.get("memory_char_limit", defaults.memory_char_limit),
            user_char_limit=v.get("user_char_limit", defaults.user_char_limit),
            near_budget_share=v.get("near_budget_share", defaults.near_budget_share),
            untrusted_folders=frozenset(self.untrusted),
            chat=ChatSettings(
                context_window=v.get("context_window", 0),
                compact_at=v.get("compact_at", ChatSettings.compact_at),
                max_sessions=v.get("max_sessions", ChatSettings.max_sessions),
                max_age_days=v.get("max_age_days", ChatSettings.max_age_days),
            ),
            tools=ToolSettings(
                approve_edits=v.get("approve_edits", False),
                allowed_commands=self.allowed or (),
                ripgrep_path=v.get("ripgrep_path"),
                command_timeout=v.get("command_timeout", ToolSettings.command_timeout),
            ),
            layer=MemoryLayerSettings(
                approval=v.get("approval", MemoryLayerSettings.approval),
                provider=v.get("provider"),
                postgres_dsn=v.get("postgres_dsn"),
                postgres_project=v.get("postgres_project"),
                semantic=v.get("semantic", False),
                user_profile=v.get("user_profile", "workspace"),
            ),
            context_max_chars=v.get("context_max_chars", defaults.context_max_chars),
            app_root=self.app_root,
        )


def _section(layer: dict[str, Any], key: str) -> dict[str, Any]:
    value = layer.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    """A non-blank setting string of a sane length, stripped; None for anything else."""
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_TEXT:
        return None
    if "\x00" in value:
        return None
    return value.strip()


def _patterns(value: list[Any]) -> tuple[str, ...]:
    """Allowed-command patterns: trimmed, deduplicated, bounded (as the client does)."""
    out: list[str] = []
    for item in value:
        if isinstance(item, str):
            pattern = item.strip()
            if pattern and len(pattern) <= _MAX_PATTERN_CHARS and pattern not in out:
                out.append(pattern)
    return tuple(out[:_MAX_PATTERNS])


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
