"""What the language server adds to a chat turn, against the same agent run in-process (the peer).

Both sides run the same trusted-folder session (memory store, the six workspace tools, persistence)
against the same zero-latency local endpoint (tests/support/fake_openai.py), turn by turn in
alternating order so machine noise hits both alike:
- a plain turn: `myAgent/chat/send` through real stdio (events streamed as notifications) vs
  `agent.run` in this process;
- a tool turn with an approval: the model calls `write_file`; the server asks the client with
  `myAgent/chat/approve` (answered at once) and writes the file; the peer's approver is a stub;
- a resume: `myAgent/chat/resume` of a 200-message session (load, rebuild the agent, the history
  as JSON) vs `SessionStore.load` + `Agent.resume` in-process.
It prints p50 / p90 of each side and the ratio of the p50s (no targets are asserted: the machine is
shared; the figures are for the lead to compare on a quiet machine).

    .venv/bin/python bench/chat_lsp.py [--turns 60] [--resumes 15] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "server")]

import openai  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402

import quick  # noqa: E402
from my_agent_core.agent import Agent, SessionStore, coding_instructions  # noqa: E402
from my_agent_core.coding_tools import (  # noqa: E402
    ApprovalRequest,
    Decision,
    DiskApplier,
    make_workspace_tools,
)
from my_agent_core.lsp.params import to_plain  # noqa: E402
from my_agent_core.memory import MemoryStore  # noqa: E402

SERVER = [sys.executable, "-m", "my_agent_core", "serve"]
REPLY = "The tests run with pytest; the CI job is in .github/workflows/ci.yml. " * 3
TURNS_PER_SESSION = 20


class Allow:
    """The peer's approver: approves at once (the server's client does the same)."""

    def approve(self, request: ApprovalRequest) -> Decision:
        return Decision.allow("user")


def responder(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return {"content": "Written."}
    text = str(last.get("content") or "")
    if text.startswith("write "):
        name = text.split()[1]
        call = {"name": "write_file", "arguments": {"path": f"out/{name}.txt", "content": text}}
        return {"tool_calls": [call]}
    return {"content": REPLY}


class Client:
    """The editor side: a pygls client that approves every card at once."""

    def __init__(self) -> None:
        self.client = LanguageClient("bench-chat", "1")

        @self.client.feature("myAgent/chat/approve")
        def approve(params: Any) -> dict[str, bool]:
            return {"approved": True}

        @self.client.feature("myAgent/chat/event")
        def event(params: Any) -> None:
            return None

    async def start(self, folder: Path, base_url: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MY_AGENT_"))}
        await self.client.start_io(*SERVER, env={**env, "OPENAI_API_KEY": "bench"})
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    workspace=types.WorkspaceClientCapabilities(
                        apply_edit=True,
                        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                    )
                ),
                root_uri=folder.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
                initialization_options={
                    "myAgent": {
                        "model": "fake-model",
                        "baseUrl": base_url,
                        "memory": {"provider": "none"},
                    }
                },
            )
        )
        self.client.initialized(types.InitializedParams())

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """A request's result as plain data (pygls gives custom results as namedtuples)."""
        return to_plain(await self.client.protocol.send_request_async(method, params))

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        finally:
            await self.client.stop()


def peer_agent(folder: Path, base_url: str) -> Agent:
    sdk = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    tools = make_workspace_tools(folder, approver=Allow(), applier=DiskApplier())
    return Agent(
        model="fake-model",
        client=sdk,
        memory_dir=False,
        memory_store=MemoryStore(folder / ".my_agent_core" / "memory"),
        tools=tools,
        instructions=coding_instructions(folder),
        sessions=SessionStore(folder),
    )


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.9) - 1)]


def report(name: str, ours: list[float], peer: list[float]) -> None:
    o50, o90 = _stats(ours)
    p50, p90 = _stats(peer)
    print(
        f"{name:<38} server p50 {o50 * 1e3:7.2f} ms  p90 {o90 * 1e3:7.2f} ms | in-process "
        f"p50 {p50 * 1e3:7.2f} ms  p90 {p90 * 1e3:7.2f} ms | ratio {o50 / p50:5.2f}x  "
        f"(+{(o50 - p50) * 1e3:.2f} ms)"
    )


async def turns(
    client: Client, agent: Agent, folder: Path, count: int, message: str
) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    peer: list[float] = []
    session = ""
    loop = asyncio.get_running_loop()
    for number in range(count):
        if number % TURNS_PER_SESSION == 0:
            session = (await client.call("myAgent/chat/start", {"folder": folder.as_uri()}))[
                "sessionId"
            ]
            await loop.run_in_executor(None, agent.reset)
        text = message.format(n=number)
        first_ours = number % 2 == 0
        for side in ("ours", "peer") if first_ours else ("peer", "ours"):
            start = time.perf_counter()
            if side == "ours":
                await client.call("myAgent/chat/send", {"sessionId": session, "message": text})
                ours.append(time.perf_counter() - start)
            else:
                await loop.run_in_executor(None, agent.run, text.replace("write ", "write p"))
                peer.append(time.perf_counter() - start)
    return ours, peer


async def resumes(
    client: Client, folder: Path, base_url: str, count: int, messages: int
) -> tuple[list[float], list[float]]:
    """Resume of a session of `messages` messages: through the server vs SessionStore.load +
    Agent.resume."""
    loop = asyncio.get_running_loop()
    ours: list[float] = []
    peer: list[float] = []
    store = SessionStore(folder)
    sdk = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)
    session = (await client.call("myAgent/chat/start", {"folder": folder.as_uri()}))["sessionId"]
    for number in range(messages // 2):
        await client.call("myAgent/chat/send", {"sessionId": session, "message": f"q {number}"})
    await client.call("myAgent/chat/end", {"sessionId": session})

    def in_process() -> float:
        began = time.perf_counter()
        record = store.load(session)
        agent = Agent.resume(
            record,
            sessions=store,
            client=sdk,
            memory_store=MemoryStore(folder / ".my_agent_core" / "memory"),
            tools=make_workspace_tools(folder, approver=Allow(), applier=DiskApplier()),
        )
        history = agent.messages[1:]
        took = time.perf_counter() - began
        agent.close()
        assert len(history) == messages
        return took

    for _ in range(count):
        start = time.perf_counter()
        resumed = await client.call("myAgent/chat/resume", {"sessionId": session})
        ours.append(time.perf_counter() - start)
        assert len(resumed["messages"]) == messages
        await client.call("myAgent/chat/end", {"sessionId": session})
        peer.append(await loop.run_in_executor(None, in_process))
    return ours, peer


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--resumes", type=int, default=15)
    parser.add_argument("--resume-messages", type=int, default=200)
    args = quick.parse(parser, {"turns": 3, "resumes": 2, "resume_messages": 20}, argv)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(responder=responder) as fake:
        folder = Path(tmp) / "proj"
        (folder / ".my_agent_core" / "memory").mkdir(parents=True)
        (folder / ".my_agent_core" / "memory" / "MEMORY.md").write_text("uses pytest\n")
        client = Client()
        await client.start(folder, fake.base_url)
        agent = peer_agent(folder, fake.base_url)
        try:
            await turns(client, agent, folder, 6, "warm up {n}")  # imports, first connections
            plain = await turns(
                client, agent, folder, args.turns, "question {n}: where are the tests?"
            )
            tool = await turns(client, agent, folder, args.turns, "write f{n} please")
            resume = await resumes(
                client, folder, fake.base_url, args.resumes, args.resume_messages
            )
        finally:
            agent.close()
            await client.stop()
    print(f"chat turns through the language server vs in-process ({args.turns} each, interleaved)")
    report("plain turn (1 request)", *plain)
    report("tool turn: write_file + approval", *tool)
    report(f"resume a {args.resume_messages}-message session", *resume)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
