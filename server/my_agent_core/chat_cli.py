"""`my-agent chat`: a terminal chat with the agent on the current folder's memory.

Reply text streams to stdout as it arrives; tool activity is shown on stderr. Commands: /new (new
session: memory reloaded), /memory (memory usage), /usage (token usage), /help, /exit. Ctrl-C during a
reply cancels that reply; Ctrl-C or Ctrl-D at the prompt leaves.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

__all__ = ["add_arguments", "run"]

EXIT_CONFIG = 2
HELP = (
    "Commands: /new (new session, reload memory), /memory (memory usage), /usage (token usage), "
    "/help, /exit"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `my-agent chat`."""
    parser.add_argument("--model", help="model name (default: $MY_AGENT_MODEL)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    parser.add_argument("--api-key", help="API key (default: $OPENAI_API_KEY)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--memory-dir",
        type=Path,
        help="memory folder (default: ./.my_agent_core/memory, created when missing)",
    )
    group.add_argument("--no-memory", action="store_true", help="chat without long-term memory")
    parser.add_argument("--max-steps", type=int, default=None, help="tool steps per reply")


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the chat loop; 0 on a normal exit, 2 when no model or endpoint is configured."""
    from .agent import DEFAULT_MAX_STEPS, Agent, AgentCancelled, AgentError, build_client

    stdin = stdin or sys.stdin
    out = stdout or sys.stdout
    err = sys.stderr
    model = getattr(args, "model", None) or os.environ.get("MY_AGENT_MODEL")
    if not model:
        print("my-agent chat: no model configured: pass --model or set MY_AGENT_MODEL.", file=err)
        return EXIT_CONFIG
    try:
        client = build_client(getattr(args, "api_key", None), getattr(args, "base_url", None))
    except AgentError as exc:
        print(f"my-agent chat: {exc} (or pass --api-key / --base-url)", file=err)
        return EXIT_CONFIG

    memory_dir: Any = False
    if not getattr(args, "no_memory", False):
        memory_dir = getattr(args, "memory_dir", None) or Path.cwd() / ".my_agent_core" / "memory"
    view = _View(out, err)
    try:
        agent = Agent(
            model=model,
            client=client,
            memory_dir=memory_dir,
            max_steps=getattr(args, "max_steps", None) or DEFAULT_MAX_STEPS,
            on_event=view.on_event,
        )
    except (AgentError, OSError) as exc:
        print(f"my-agent chat: {exc}", file=err)
        return EXIT_CONFIG

    where = agent.memory_store.mem_dir if agent.memory_store is not None else "off"
    print(f"my-agent chat · model {model} · memory {where}", file=err)
    print(HELP, file=err)
    interactive = stdin is sys.stdin and out is sys.stdout and _isatty(stdin)
    if interactive:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (line editing and history for input())
    while True:
        try:
            if interactive:
                line = input("\n> ") + "\n"
            else:
                out.write("\n> ")
                out.flush()
                line = stdin.readline()
        except (KeyboardInterrupt, EOFError):
            out.write("\n")
            return 0
        if not line:
            out.write("\n")
            return 0
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            command = text.split()[0].lower()
            if command in ("/exit", "/quit"):
                return 0
            if command == "/new":
                agent.reset()
                print("(new session: memory reloaded)", file=out)
            elif command == "/memory":
                print(_memory_report(agent), file=out)
            elif command == "/usage":
                print(_usage_report(agent), file=out)
            else:
                print(HELP, file=out)
            continue
        _turn(agent, text, view, AgentCancelled, AgentError)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _turn(agent: Any, text: str, view: _View, cancelled: type, failed: type) -> None:
    """One reply, run in a thread so Ctrl-C in the main thread can cancel it cleanly."""
    outcome: dict[str, BaseException] = {}

    def work() -> None:
        try:
            agent.run(text)
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    while worker.is_alive():
        try:
            worker.join(0.1)
        except KeyboardInterrupt:
            agent.cancel()
    view.end_reply()
    error = outcome.get("error")
    if isinstance(error, cancelled):
        print("[cancelled]", file=view.err)
    elif isinstance(error, failed):
        print(f"[error] {error}", file=view.err)
    elif error is not None:
        print(f"[error] {type(error).__name__}: {error}", file=view.err)


class _View:
    """Prints agent events: reply deltas to stdout, tool activity to stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._mid_line = False

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "delta":
            self.out.write(event["text"])
            self.out.flush()
            self._mid_line = not event["text"].endswith("\n")
        elif kind == "tool_call":
            self._break()
            args = event.get("arguments") or ""
            shown = args if len(args) <= 160 else args[:157] + "..."
            print(f"  -> {event['name']} {shown}", file=self.err, flush=True)
        elif kind == "tool_result":
            content = str(event.get("content") or "").splitlines()
            first = content[0] if content else ""
            mark = "ok" if event.get("ok") else "failed"
            print(f"  <- {event['name']} {mark}: {first[:160]}", file=self.err, flush=True)

    def _break(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False

    def end_reply(self) -> None:
        self._break()


def _memory_report(agent: Any) -> str:
    store = agent.memory_store
    if store is None:
        return "Memory is off."
    lines = [f"Memory folder: {store.mem_dir}"]
    for target in ("memory", "user"):
        state = store.state(target)
        name = Path(state.path).name
        if not state.available:
            lines.append(f"  {name}: unavailable ({state.error})")
            continue
        lines.append(f"  {name}: {state.used}/{state.limit} chars, {len(state.entries)} entries")
        lines.extend(f"    - {entry.splitlines()[0][:100]}" for entry in state.entries)
    lines.append("(the current session sees the snapshot taken when it started; /new reloads)")
    return "\n".join(lines)


def _usage_report(agent: Any) -> str:
    usage = agent.usage
    return (
        f"requests {usage.requests} · prompt {usage.prompt_tokens} · cached {usage.cached_tokens} "
        f"({usage.cache_hit_rate:.0%}) · completion {usage.completion_tokens}"
    )
