"""The agent loop: `Agent` runs a streaming ReAct loop with a frozen-memory system prompt.

Public names (CONTRACT.md): `Agent`, `AgentError`; also `AgentCancelled`, `AgentConfigError`, `Usage`.
"""

from .core import DEFAULT_MAX_STEPS, MEMORY_FAILURE_LIMIT, Agent, build_client
from .errors import AgentCancelled, AgentConfigError, AgentError
from .prompt import DEFAULT_INSTRUCTIONS, MEMORY_GUIDANCE, build_system_prompt
from .usage import TurnUsage, Usage

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_MAX_STEPS",
    "MEMORY_FAILURE_LIMIT",
    "MEMORY_GUIDANCE",
    "Agent",
    "AgentCancelled",
    "AgentConfigError",
    "AgentError",
    "TurnUsage",
    "Usage",
    "build_client",
    "build_system_prompt",
]
