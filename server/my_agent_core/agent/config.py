"""How an Agent is configured (`AgentConfig`) and what its configuration resolves to (`AgentParts`).

One typed configuration object for every way an agent is built (the documented keywords of
`Agent(...)`, the terminal chat, the editor's sessions, a sub-agent): `resolve()` is where the
defaults, the environment, the checks and the disk come in (the model from MY_AGENT_MODEL, the
client from OPENAI_API_KEY / OPENAI_BASE_URL, `memory_dir=None` meaning "<cwd>/.my_agent_core/memory
if it exists", the memory store, its tool and the session's trust policy), so the `Agent` only
assembles resolved parts and then starts or resumes its session (`Agent.from_config`,
`build_agent`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..layout import memory_dir_of
from ..memory.memory_tool import make_memory_tool
from ..memory.provenance import APPROVAL_MODES
from ..memory.store import MemoryStore
from ..private import make_memory_dir
from ..tools import Tool, tool
from .client import ModelClient, build_client
from .compaction import CompactionSettings
from .default_provider import choose_provider
from .errors import AgentConfigError
from .events import EventCallback
from .usage import CachePolicy

if TYPE_CHECKING:
    from ..approval import Approver, DecisionListener
    from ..memory.provenance import ApprovalMode
    from ..memory.providers import MemoryManager
    from ..trust import TaintTracker
    from .sessions import SessionRecord, SessionStore

__all__ = [
    "DEFAULT_MAX_STEPS",
    "MEMORY_TOOL_NAME",
    "AgentConfig",
    "AgentParts",
    "CancelEvent",
    "MemoryDir",
    "resolve",
    "resolve_memory_dir",
]

DEFAULT_MAX_STEPS = 20
MEMORY_TOOL_NAME = "memory"
CancelEvent = threading.Event
#: None: `<cwd>/.my_agent_core/memory` if it exists, else no memory; False: no memory; a path:
#: that folder, created if missing (docs/contract.md).
MemoryDir = str | os.PathLike[str] | bool | None


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """Everything an agent can be given; every field optional (see docs/agent.md "Building an agent").

    `memory_store` wins over `memory_dir`; `resume` (a `SessionRecord` loaded from `sessions`)
    continues that session with its original system prompt, tool schemas and history; `provider`
    adds recall and archiving (None: the archive when memory is on, `"none"`: off, see
    default_provider.py); `session_meta` is persisted with the session (JSON data).

    Memory writes follow `memory_approval` (`myAgent.memory.approval`: "untrusted", the default,
    asks `memory_approver` before a write that may carry untrusted text and refuses it when there
    is no approver; "ask" asks before every write; "auto" never asks); `on_approval` hears every
    decision. `memory_tool` replaces the built-in tool altogether (then the policy is the caller's:
    build it with `make_memory_tool(store, trust=MemoryTrust(mode, tracker))` and pass the same
    `trust` tracker here, which the agent feeds)."""

    model: str | None = None
    client: ModelClient | None = None
    memory_dir: MemoryDir = None
    tools: Sequence[Tool | Callable[..., Any]] = ()
    max_steps: int = DEFAULT_MAX_STEPS
    on_event: EventCallback | None = None
    instructions: str | None = None
    memory_store: MemoryStore | None = None
    memory_tool: Tool | None = None
    memory_approval: ApprovalMode = "untrusted"
    memory_approver: Approver | None = None
    on_approval: DecisionListener | None = None
    trust: TaintTracker | None = None
    request_options: Mapping[str, Any] | None = None
    context_block: str | None = None
    provider: MemoryManager | str | None = None  # None: the archive (default_provider.py)
    sessions: SessionStore | None = None
    session_id: str | None = None
    session_meta: Mapping[str, Any] | None = None
    resume: SessionRecord | None = None
    cancel_token: CancelEvent | None = None
    compaction: CompactionSettings | None = None
    cache_policy: CachePolicy | None = None
    clock: Callable[[], float] = time.time


@dataclass(frozen=True, kw_only=True)
class AgentParts:
    """A configuration resolved: nothing left to look up, create or check."""

    model: str
    client: ModelClient
    max_steps: int
    on_event: EventCallback | None
    instructions: str | None
    context_block: str | None
    request_options: dict[str, Any]
    session_meta: dict[str, Any]
    compaction: CompactionSettings
    cache_policy: CachePolicy
    cancel_token: CancelEvent
    clock: Callable[[], float]
    memory_store: MemoryStore | None
    memory_tool: Tool | None
    trust: (
        TaintTracker | None
    )  # the session's taint tracker (None without memory): the agent feeds it
    tools: list[
        Tool
    ]  # the caller's tools (the memory tool and memory_search are added by the agent)
    provider: MemoryManager | None
    sessions: SessionStore | None
    owns_provider: bool = False  # the agent made `provider` (the default): it shuts it down


def resolve(config: AgentConfig) -> AgentParts:
    """Check `config` and resolve its defaults: the model, the client, the memory folder (created
    when a path is given), the store and its `memory` tool. Raises AgentConfigError (no model or
    endpoint), ValueError / TypeError (an option that cannot work), OSError (the memory folder)."""
    resume = config.resume
    model = config.model or (resume.model if resume is not None else None)
    model = model or os.environ.get("MY_AGENT_MODEL") or None
    if not model:
        raise AgentConfigError("No model configured: pass model= or set MY_AGENT_MODEL.")
    if config.max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    if resume is not None and config.sessions is None:
        raise ValueError("resume= needs sessions= (the store the session is persisted in)")
    client = config.client if config.client is not None else build_client()
    session_meta = dict(config.session_meta or {})
    try:
        json.dumps(session_meta)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"session_meta must be JSON data (it is persisted): {exc}") from None
    tools = [t if isinstance(t, Tool) else tool(t) for t in config.tools]
    if config.memory_approval not in APPROVAL_MODES:
        raise ValueError(f"memory_approval must be one of {', '.join(APPROVAL_MODES)}")
    store = config.memory_store if config.memory_store is not None else _store(config.memory_dir)
    cancel_token = config.cancel_token if config.cancel_token is not None else CancelEvent()
    trust = _tracker(store, config.trust)
    provider, owns_provider = choose_provider(config.provider, store)
    return AgentParts(
        model=model,
        client=client,
        max_steps=config.max_steps,
        on_event=config.on_event,
        instructions=config.instructions,
        context_block=config.context_block,
        request_options=dict(config.request_options or {}),
        session_meta=session_meta,
        compaction=config.compaction or CompactionSettings(),
        cache_policy=config.cache_policy or CachePolicy(),
        cancel_token=cancel_token,
        clock=config.clock,
        memory_store=store,
        memory_tool=_memory_tool(store, config, trust, cancel_token),
        trust=trust,
        tools=tools,
        provider=provider,
        sessions=config.sessions,
        owns_provider=owns_provider,
    )


def resolve_memory_dir(memory_dir: MemoryDir) -> Path | None:
    """The memory folder `memory_dir` names (created when it is a path, never through a link a
    repository planted: `private.make_memory_dir`), None for no memory."""
    if memory_dir is False:
        return None
    if memory_dir is None:
        candidate = memory_dir_of(Path.cwd())
        return candidate if candidate.is_dir() else None
    if memory_dir is True or not isinstance(memory_dir, (str, os.PathLike)):
        raise TypeError("memory_dir must be None, False or a path")
    return make_memory_dir(Path(memory_dir).expanduser())


def _store(memory_dir: MemoryDir) -> MemoryStore | None:
    path = resolve_memory_dir(memory_dir)
    if path is None:
        return None
    return MemoryStore(path)


def _tracker(store: MemoryStore | None, given: TaintTracker | None) -> TaintTracker | None:
    """The session's taint tracker: `given`, else a new one; none for an agent without memory."""
    if given is not None or store is None:
        return given
    from ..trust import TaintTracker  # here: an agent without memory never loads the policy

    return TaintTracker()


def _memory_tool(
    store: MemoryStore | None,
    config: AgentConfig,
    trust: TaintTracker | None,
    cancel: CancelEvent,
) -> Tool | None:
    """The `memory` tool of `store`: the caller's own (`memory_tool=`), or the built-in one under
    the session's trust policy (`memory_approval`, asking `memory_approver`)."""
    given = config.memory_tool
    if given is not None and (store is None or given.name != MEMORY_TOOL_NAME):
        raise ValueError("memory_tool= is the `memory` tool of memory_store= (pass both)")
    if store is None or trust is None:
        return None
    if given is not None:
        return given
    from ..trust import MemoryTrust  # here: an agent without memory never loads the policy

    return make_memory_tool(
        store,
        approver=config.memory_approver,
        cancel=cancel,
        on_decision=config.on_approval,
        trust=MemoryTrust(config.memory_approval, trust),
    )
