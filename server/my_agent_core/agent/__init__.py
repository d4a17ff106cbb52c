"""The agent loop: `Agent` runs a streaming ReAct loop with a frozen-memory system prompt, persists its
sessions as they go, compacts long ones and meters the provider's prompt cache.

Public names (docs/contract.md): `Agent`, `AgentError`; also `AgentCancelled`, `AgentConfigError`, `Usage`;
one way to build an agent (`AgentConfig` + `build_agent`), the model-client seam (`ModelClient`), the
typed events (`AgentEvent`, `EventCallback`) and error kinds (`ErrorKind`); the session store
(`SessionStore`, `SessionRecord`, `SessionInfo`, errors), compaction settings and the cache meter's
types. See docs/agent.md.
"""

from ..memory.render import Attachment
from ..prompt_text import (
    DEFAULT_INSTRUCTIONS,
    MEMORY_GUIDANCE,
    build_system_prompt,
    coding_instructions,
)
from .client import ModelClient, build_client
from .compaction import (
    DEFAULT_COMPACT_AT,
    DEFAULT_CONTEXT_WINDOW,
    CompactionResult,
    CompactionSettings,
    context_window_for,
)
from .config import AgentConfig
from .core import DEFAULT_MAX_STEPS, MEMORY_FAILURE_LIMIT, Agent, CancelEvent, build_agent
from .errors import ERROR_KINDS, AgentCancelled, AgentConfigError, AgentError, ErrorKind
from .events import EVENT_KINDS, AgentEvent, EventCallback, EventKind
from .provider_session import WriteFanOut
from .sessions import (
    SessionBusy,
    SessionDamaged,
    SessionError,
    SessionInfo,
    SessionNotFound,
    SessionRecord,
    SessionStore,
)
from .usage import CACHE_TTL_S, CacheDrop, CachePolicy, RequestUsage, TurnUsage, Usage

__all__ = [
    "CACHE_TTL_S",
    "DEFAULT_COMPACT_AT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_MAX_STEPS",
    "ERROR_KINDS",
    "EVENT_KINDS",
    "MEMORY_FAILURE_LIMIT",
    "MEMORY_GUIDANCE",
    "Agent",
    "AgentCancelled",
    "AgentConfig",
    "AgentConfigError",
    "AgentError",
    "AgentEvent",
    "Attachment",
    "CacheDrop",
    "CachePolicy",
    "CancelEvent",
    "CompactionResult",
    "CompactionSettings",
    "ErrorKind",
    "EventCallback",
    "EventKind",
    "ModelClient",
    "RequestUsage",
    "SessionBusy",
    "SessionDamaged",
    "SessionError",
    "SessionInfo",
    "SessionNotFound",
    "SessionRecord",
    "SessionStore",
    "TurnUsage",
    "Usage",
    "WriteFanOut",
    "build_agent",
    "build_client",
    "build_system_prompt",
    "coding_instructions",
    "context_window_for",
]
