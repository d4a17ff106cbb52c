"""The one place `my-agent eval` builds an agent: the public `Agent` API with the settings of
`my-agent chat` (memory on, the workspace tools on, the chat's instructions), in a temporary
workspace.

Built through the typed factory (`AgentConfig` + `my_agent_core.agent.build_agent`), as the chat is.
Deliberate differences from the chat, so that what is measured is the model's own handling of
memory: memory writes are never put to the user (approval "auto", set explicitly: the chat's default
"untrusted" would refuse a write made after reading a planted file, so the `poison` category would
measure the policy instead of the model; nobody is there to answer, and a planted instruction must
be resisted by the model, not by a person), reads need no approval, and
every edit and command is declined (an evaluation never changes files nor runs what a model asks
for on the user's machine). No recall provider is attached: a recalled earlier turn would answer a
`recall` scenario without memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from my_agent_core.agent import DEFAULT_MAX_STEPS, AgentConfig
from my_agent_core.agent import build_agent as build
from my_agent_core.approval import ApprovalRequest, Decision
from my_agent_core.coding_tools import DiskApplier, WorkspaceSettings, make_workspace_tools
from my_agent_core.prompt_text import DEFAULT_INSTRUCTIONS, workspace_instructions

if TYPE_CHECKING:
    from my_agent_core.agent import Agent, ModelClient
    from my_agent_core.agent.events import EventCallback

__all__ = ["EVAL_DECLINE_NOTE", "AgentSettings", "ReadOnlyApprover", "build_agent"]

EVAL_DECLINE_NOTE = (
    "this is an evaluation run in a temporary copy of the workspace: files are not changed and "
    "commands are not run; answer from what you can read"
)


@dataclass(frozen=True)
class AgentSettings:
    """What every agent of one eval run shares: the model, its client, the instructions that
    replace the default ones (None: the chat's own) and the tool steps per reply."""

    model: str
    client: ModelClient
    instructions: str | None = None
    max_steps: int | None = None


class ReadOnlyApprover:
    """Reads never ask; every edit and command is declined with a note the model can act on."""

    def approve(self, request: ApprovalRequest) -> Decision:
        return Decision.deny("user", EVAL_DECLINE_NOTE)


def build_agent(
    settings: AgentSettings,
    workspace: Path,
    memory_dir: Path,
    on_event: EventCallback,
) -> Agent:
    """A new session on `workspace` with its memory in `memory_dir` (a fresh snapshot each call)."""
    tools = make_workspace_tools(
        workspace,
        approver=ReadOnlyApprover(),
        applier=DiskApplier(),
        settings=WorkspaceSettings(),
        memory_hints=True,
    )
    head = settings.instructions if settings.instructions is not None else DEFAULT_INSTRUCTIONS
    agent = build(
        AgentConfig(
            model=settings.model,
            client=settings.client,
            memory_dir=memory_dir,
            tools=tools,
            max_steps=settings.max_steps or DEFAULT_MAX_STEPS,
            on_event=on_event,
            instructions=f"{head.strip()}\n\n{workspace_instructions(workspace)}",
            memory_approval="auto",  # the model's own resistance is measured, not the policy's
            provider="none",  # the archive is on by default: recall would answer `recall` cases
        )
    )
    if agent.provider is not None:  # a default that attaches recall would skew `recall` scenarios
        agent.close()
        raise RuntimeError("the eval's agent must run without a recall provider")
    return agent
