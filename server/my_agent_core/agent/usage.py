"""Token accounting for one session, and a cache meter that tells the truth.

Providers report prompt caching in different fields, or not at all: OpenAI and most compatible servers
`usage.prompt_tokens_details.cached_tokens`, DeepSeek `usage.prompt_cache_hit_tokens` /
`prompt_cache_miss_tokens`, llama.cpp `timings.cache_n` / `timings.prompt_n` beside the usage of its
last chunk. A provider that reports none gives `cached_tokens = None` ("unknown", shown as n/a), never
0, so a meter never claims a cache miss it cannot see. When a request reads much less from the cache
than an extension of the previous request should, the meter says why (`CacheDrop`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict

__all__ = [
    "CACHE_TTL_S",
    "CacheDrop",
    "CacheDropRecord",
    "CacheMeter",
    "CachePolicy",
    "DropReason",
    "LastRequest",
    "RequestUsage",
    "TurnUsage",
    "Usage",
    "UsageSummary",
    "read_usage",
]

#: Seconds a provider keeps a prompt prefix cached after its last use. OpenAI documents "5 to 10
#: minutes of inactivity" (up to an hour off-peak) and Anthropic 5 minutes, so a gap longer than the
#: lower bound explains a miss; DeepSeek keeps its disk cache for hours, llama.cpp until the slot is
#: reused. Configurable per session (`CachePolicy.ttl_s`).
CACHE_TTL_S = 300.0

UsageSource = Literal["openai", "deepseek", "llamacpp", "none"]
DropReason = Literal["compaction", "resume", "model_change", "expired", "unknown"]


class CacheDropRecord(TypedDict):
    """A `CacheDrop` as a `usage` event carries it."""

    reason: DropReason
    expected: int
    got: int


class UsageSummary(TypedDict):
    """Session totals as a `done` event carries them (`cached_tokens` / `cache_hit_rate` None:
    no provider reported its cache)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    requests: int
    cache_hit_rate: float | None


@dataclass(frozen=True, slots=True)
class RequestUsage:
    """One request's tokens; `cached_tokens` None when the provider reported nothing about its cache."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None
    source: UsageSource


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, float) and value == value:  # not NaN
        return max(0, int(value))
    return None


def _field(obj: object, name: str) -> object:
    """A field of an SDK object (declared, or kept in pydantic's `model_extra`) or of a dict."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, Mapping):
            value = extra.get(name)
    return value


def read_usage(usage: object, timings: object = None) -> RequestUsage | None:
    """The figures of one response from its `usage` object and llama.cpp's `timings` (either may be
    missing; None when both are). The first field a provider fills wins: OpenAI's cached tokens,
    then DeepSeek's cache hits, then llama.cpp's `cache_n`."""
    if usage is None and timings is None:
        return None
    prompt = _int(_field(usage, "prompt_tokens"))
    completion = _int(_field(usage, "completion_tokens")) or 0
    cached = _int(_field(_field(usage, "prompt_tokens_details"), "cached_tokens"))
    source: UsageSource = "openai" if cached is not None else "none"
    if cached is None:
        hit = _int(_field(usage, "prompt_cache_hit_tokens"))
        if hit is not None:
            cached, source = hit, "deepseek"
            if prompt is None:
                prompt = hit + (_int(_field(usage, "prompt_cache_miss_tokens")) or 0)
    if cached is None and timings is not None:
        cache_n = _int(_field(timings, "cache_n"))
        if cache_n is not None:
            cached, source = cache_n, "llamacpp"
            if prompt is None:
                prompt = cache_n + (_int(_field(timings, "prompt_n")) or 0)
    if prompt is None:
        prompt = 0
    if cached is not None:
        cached = min(cached, prompt) if prompt else cached
    return RequestUsage(prompt, completion, cached, source)


@dataclass(frozen=True, slots=True)
class CacheDrop:
    """A request read `got` tokens from the cache where an extension of the previous one would have
    read about `expected`; `reason` says why as far as the agent can tell."""

    reason: DropReason
    expected: int
    got: int

    def as_dict(self) -> CacheDropRecord:
        return {"reason": self.reason, "expected": self.expected, "got": self.got}


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """When a smaller cached share counts as a drop. `min_tokens`: prefixes shorter than this are not
    cached by OpenAI (1,024), so nothing is expected of them; a drop is a shortfall of more than
    `slack_tokens` and `slack_share` of the expected figure (providers cache in blocks: OpenAI 128
    tokens, DeepSeek 64)."""

    ttl_s: float = CACHE_TTL_S
    min_tokens: int = 1024
    slack_tokens: int = 256
    slack_share: float = 0.1


@dataclass(frozen=True, slots=True)
class LastRequest:
    """The last successful request of a session: when (epoch seconds), its prompt size, its model."""

    at: float
    prompt_tokens: int
    model: str

    def as_dict(self) -> dict[str, Any]:
        return {"at": self.at, "prompt_tokens": self.prompt_tokens, "model": self.model}

    @classmethod
    def from_dict(cls, data: object) -> LastRequest | None:
        if not isinstance(data, Mapping):
            return None
        at, tokens, model = data.get("at"), _int(data.get("prompt_tokens")), data.get("model")
        if not isinstance(at, (int, float)) or tokens is None or not isinstance(model, str):
            return None
        return cls(float(at), tokens, model)


class CacheMeter:
    """Explains drops of the cached share from one request to the next (see `observe`)."""

    def __init__(
        self,
        policy: CachePolicy | None = None,
        last: LastRequest | None = None,
        *,
        resumed: bool = False,
    ) -> None:
        self.policy = policy or CachePolicy()
        self.last = last
        self._resumed = resumed
        self._compacted = False

    def note_compaction(self) -> None:
        """The history was replaced: the next request cannot reuse the old prefix."""
        self._compacted = True

    def observe(self, usage: RequestUsage, model: str, now: float) -> CacheDrop | None:
        """Record a successful request; a `CacheDrop` when it read clearly less from the cache than
        an extension of the previous request would (None when the provider reports no cache)."""
        previous, self.last = self.last, LastRequest(now, usage.prompt_tokens, model)
        compacted, resumed = self._compacted, self._resumed
        self._compacted = self._resumed = False
        if previous is None or usage.cached_tokens is None:
            return None
        expected = min(previous.prompt_tokens, usage.prompt_tokens)
        if expected < self.policy.min_tokens:
            return None
        got = usage.cached_tokens
        slack = max(self.policy.slack_tokens, int(expected * self.policy.slack_share))
        if expected - got <= slack:
            return None
        reason: DropReason
        if compacted:
            reason = "compaction"
        elif model != previous.model:
            reason = "model_change"
        elif now - previous.at > self.policy.ttl_s:
            reason = "expired"
        elif resumed:
            reason = "resume"
        else:
            reason = "unknown"
        return CacheDrop(reason, expected, got)


@dataclass
class TurnUsage:
    """The tokens of the model requests of one `run()` (failed turns included, with what completed)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    requests: int = 0

    def add(self, usage: RequestUsage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            self.cached_tokens = (self.cached_tokens or 0) + usage.cached_tokens


@dataclass
class Usage:
    """Session totals; `requests` counts model requests whose response completed.

    `cached_tokens` (tokens read from the cache) is None until a provider reports its cache;
    `cache_hit_rate` is cached / prompt tokens over the requests that reported it (None: none did)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    requests: int = 0
    reported_prompt_tokens: int = 0
    turns: list[TurnUsage] = field(default_factory=list)
    cache_drops: list[CacheDrop] = field(default_factory=list)

    @property
    def cache_hit_rate(self) -> float | None:
        if self.cached_tokens is None or not self.reported_prompt_tokens:
            return None
        return self.cached_tokens / self.reported_prompt_tokens

    def record(self, turn: TurnUsage, usage: RequestUsage) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            self.cached_tokens = (self.cached_tokens or 0) + usage.cached_tokens
            self.reported_prompt_tokens += usage.prompt_tokens
        turn.add(usage)

    def count_request(self, turn: TurnUsage) -> None:
        self.requests += 1
        turn.requests += 1

    def summary(self) -> UsageSummary:
        """The session totals of a `done` event (snake_case; the language server camel-cases)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "requests": self.requests,
            "cache_hit_rate": self.cache_hit_rate,
        }

    def as_dict(self) -> dict[str, Any]:
        return {**self.summary(), "turns": [asdict(turn) for turn in self.turns]}

    def totals(self) -> dict[str, Any]:
        """What a session file keeps, so a resumed session's meter continues where it stopped."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "requests": self.requests,
            "reported_prompt_tokens": self.reported_prompt_tokens,
        }

    @classmethod
    def from_totals(cls, data: object) -> Usage:
        """A meter restored from `totals()`; anything malformed counts as 0 (or unknown)."""
        if not isinstance(data, Mapping):
            return cls()
        cached = data.get("cached_tokens")
        return cls(
            prompt_tokens=_int(data.get("prompt_tokens")) or 0,
            completion_tokens=_int(data.get("completion_tokens")) or 0,
            cached_tokens=_int(cached) if cached is not None else None,
            requests=_int(data.get("requests")) or 0,
            reported_prompt_tokens=_int(data.get("reported_prompt_tokens")) or 0,
        )

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]
