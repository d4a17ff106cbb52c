"""Token accounting for one session: totals, per-turn figures and the prefix-cache hit rate."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["TurnUsage", "Usage", "usage_figures"]


@dataclass
class TurnUsage:
    """The tokens of the model requests of one `run()` (failed turns included, with what completed)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0

    def add(self, prompt: int, completion: int, cached: int) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_tokens += cached


@dataclass
class Usage:
    """Session totals; `requests` counts model requests whose response completed."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    turns: list[TurnUsage] = field(default_factory=list)

    @property
    def cache_hit_rate(self) -> float:
        """cached_tokens / prompt_tokens; 0.0 before anything was sent."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def record(self, turn: TurnUsage, prompt: int, completion: int, cached: int) -> None:
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.cached_tokens += cached
        turn.add(prompt, completion, cached)

    def count_request(self, turn: TurnUsage) -> None:
        self.requests += 1
        turn.requests += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "requests": self.requests,
            "cache_hit_rate": self.cache_hit_rate,
            "turns": [asdict(turn) for turn in self.turns],
        }

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]


def usage_figures(usage: Any) -> tuple[int, int, int] | None:
    """(prompt, completion, cached) from an SDK usage object; cached falls back to DeepSeek's field."""
    if usage is None:
        return None
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        extra = getattr(usage, "model_extra", None) or {}
        cached = extra.get("prompt_cache_hit_tokens")
    return prompt, completion, int(cached or 0)
