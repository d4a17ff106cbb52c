"""`my-agent chat`: a terminal chat with the agent on the current folder: its memory and its files.

Reply text streams to stdout as it arrives; tool activity is shown on stderr. The workspace tools
(read, list, search, edit, write, run) work on the current folder; before an edit (the diff is shown)
or a command (the command line and folder) the chat asks y/N, unless a flag pre-approves it. A
memory write that may carry text the model read (`--memory-approval untrusted`, the default; `ask`:
every write; `auto`: none) is asked the same way, with the sources its text may come from.
Sessions are saved as they go in `.my_agent_core/sessions/` (the same files the editor lists):
`--list` shows them, `--resume [ID]` continues one (the latest without an id) with its original
system prompt, so the provider's prompt cache still hits.
Commands: see `SLASH_COMMANDS`. Ctrl-C during a reply cancels that reply (a running command's whole
process group is stopped); Ctrl-C or Ctrl-D at the prompt leaves. Everything shown passes
`terminal_text.visible` (a reply, a diff or a command line cannot drive the terminal), and the API
key never comes from the command line (`api_key.py`). `my-agent` imports this module to build its
parser, so the agent (and openai) are imported inside the functions that run the chat: start-up time
of every other command.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from .approval import ApprovalRequest, Decision
from .chat_endpoint import EndpointProblem, add_endpoint_arguments, connect
from .layout import memory_dir_of
from .prompt_text import coding_instructions
from .terminal_text import VisibleStream, as_visible, is_terminal

if TYPE_CHECKING:
    from .agent import Agent, AgentEvent, SessionInfo, SessionRecord, SessionStore
    from .tools import Tool

__all__ = ["add_arguments", "run"]

EXIT_CONFIG = 2
#: The chat's own commands, for the start-up line, /help and `chat --help`.
SLASH_COMMANDS: tuple[tuple[str, str], ...] = (
    ("/new", "start a new session with memory reloaded (the last one stays saved)"),
    ("/compact", "summarise the older turns now"),
    ("/sessions", "list the saved sessions of this folder"),
    ("/memory", "show memory usage and entries"),
    ("/usage", "show token usage and prompt-cache hits"),
    ("/help", "list these commands"),
    ("/exit", "leave the chat (also /quit, Ctrl-D, or Ctrl-C at the prompt)"),
)
HELP = (
    "Commands: " + ", ".join(name for name, _what in SLASH_COMMANDS) + " (/help says what they do)"
)
DESCRIPTION = """\
Chat with the agent in this terminal, on the current folder: its memory
(.my_agent_core/memory) and its files. Replies stream to stdout, tool activity to
stderr. Before an edit (its diff is shown) or a command (its line and folder) the chat
asks y/N, unless --approve-edits or --allow-command pre-approves it. A memory write made
after the model read files, command output or search results (or that repeats their
words) is asked y/N too, with where its text may come from (--memory-approval).

The model: --model or $MY_AGENT_MODEL. The endpoint: --base-url or $OPENAI_BASE_URL
(any OpenAI-compatible server: OpenAI, llama.cpp, Ollama, vLLM). The key: $OPENAI_API_KEY,
--api-key-file PATH, or a hidden prompt; never on the command line (--api-key is refused:
every program you run can read a command line)."""


def _commands_table() -> str:
    """One line per slash command: for /help and for `chat --help`."""
    width = max(len(name) for name, _what in SLASH_COMMANDS)
    return "\n".join(f"  {name:<{width}}  {what}" for name, what in SLASH_COMMANDS)


def _epilog() -> str:
    return (
        f"commands in the chat:\n{_commands_table()}\n"
        "Ctrl-C during a reply cancels it (a running command's process group is stopped).\n\n"
        "exit codes: 0 the chat ended; 2 no model or endpoint, an endpoint that cannot be\n"
        "reached or that refuses the key, a key that cannot be read, or a session that cannot be\n"
        "resumed; 130 interrupted."
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `my-agent chat`, its description and the list of its slash commands."""
    parser.description = DESCRIPTION
    parser.epilog = _epilog()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_endpoint_arguments(parser)
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--memory-dir",
        type=Path,
        metavar="PATH",
        help="memory folder (default: ./.my_agent_core/memory, created when missing)",
    )
    group.add_argument("--no-memory", action="store_true", help="chat without long-term memory")
    parser.add_argument(
        "--memory-approval",
        choices=("untrusted", "ask", "auto"),
        default="untrusted",
        help="which memory writes ask y/N first: untrusted (default: a write that may carry text "
        "the model read, not your own words), ask (every write) or auto (none)",
    )
    parser.add_argument(
        "--provider",
        metavar="NAME",
        help="memory provider for recall and the archive: archive (the default), postgres (DSN "
        "from MY_AGENT_PG_DSN), none (off), or a plug-in's name (default: "
        "$MY_AGENT_MEMORY_PROVIDER, else archive)",
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, metavar="N", help="tool steps per reply at most"
    )
    sessions = parser.add_argument_group("sessions (saved in .my_agent_core/sessions)")
    sessions.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="continue a saved session: its id or a unique start of it (default: the latest)",
    )
    sessions.add_argument("--list", action="store_true", help="list the saved sessions and exit")
    sessions.add_argument(
        "--context-window",
        type=int,
        default=0,
        metavar="TOKENS",
        help="the model's context window (default: from the model's name, else 128000)",
    )
    tools = parser.add_argument_group("workspace tools (on the current folder)")
    tools.add_argument(
        "--no-tools", action="store_true", help="no file or command tools (memory only)"
    )
    tools.add_argument(
        "--approve-edits", action="store_true", help="apply edits and writes without asking"
    )
    tools.add_argument(
        "--allow-command",
        action="append",
        default=[],
        metavar="PATTERN",
        help="run matching simple commands without asking, e.g. 'pytest*' (repeatable)",
    )
    tools.add_argument("--ripgrep", metavar="PATH", help="the rg to search with (default: PATH)")


def run(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run the chat loop; 0 on a normal exit, 2 when no model or endpoint is configured, the
    endpoint cannot be reached, the key cannot be read or the session to resume cannot be.
    Everything it prints passes `terminal_text.visible`."""
    stdin = stdin or sys.stdin
    raw_out = stdout or sys.stdout
    interactive = stdin is sys.stdin and raw_out is sys.stdout and is_terminal(stdin)
    out, err = as_visible(raw_out), as_visible(sys.stderr)
    try:
        return _chat(args, stdin, out, err, interactive)
    finally:
        for stream in (out, err):
            if isinstance(stream, VisibleStream):
                stream.release()


def _chat(
    args: argparse.Namespace, stdin: TextIO, out: TextIO, err: TextIO, interactive: bool
) -> int:
    from .agent import (  # here: start-up time (see the top)
        DEFAULT_MAX_STEPS,
        AgentConfig,
        AgentError,
        CompactionSettings,
        SessionError,
        SessionStore,
        build_agent,
    )
    from .paths import PathRefused

    store = SessionStore(Path.cwd())
    if getattr(args, "list", False):
        try:
            print(_sessions_report(store.list()), file=out)
        except (SessionError, PathRefused) as exc:
            print(f"my-agent: {exc}", file=err)
            return EXIT_CONFIG
        return 0
    record = None
    resume = getattr(args, "resume", None)
    if resume is not None:
        try:
            record = store.load(_resolve_id(store, resume))
        except (SessionError, PathRefused) as exc:
            print(f"my-agent: {exc}", file=err)
            return EXIT_CONFIG
    model = getattr(args, "model", None) or os.environ.get("MY_AGENT_MODEL")
    model = model or (record.model if record is not None else None)
    if not model:
        print("my-agent: no model configured: pass --model or set MY_AGENT_MODEL.", file=err)
        return EXIT_CONFIG
    try:
        client = connect(
            getattr(args, "base_url", None),
            getattr(args, "api_key_file", None),
            stdin=stdin,
            interactive=interactive,
        )
    except EndpointProblem as exc:
        print(f"my-agent: {exc}", file=err)
        return EXIT_CONFIG

    memory_dir: Path | Literal[False] = False
    if not getattr(args, "no_memory", False):
        memory_dir = getattr(args, "memory_dir", None) or memory_dir_of(Path.cwd())
    view = _View(out, err)
    cancel = threading.Event()
    approver = TerminalApprover(cancel)
    tools: list[Tool] = []
    instructions = None
    if not getattr(args, "no_tools", False):
        tools, instructions = _workspace_tools(args, approver, cancel, memory_dir is not False)
    config = AgentConfig(
        model=model,
        client=client,
        memory_dir=memory_dir,  # created when missing; a resumed session gets the same store
        tools=tools,
        max_steps=getattr(args, "max_steps", None) or DEFAULT_MAX_STEPS,
        on_event=view.on_event,
        instructions=instructions,
        sessions=store,
        resume=record,
        provider=getattr(args, "provider", None),  # None: $MY_AGENT_MEMORY_PROVIDER, else archive
        cancel_token=cancel,
        compaction=CompactionSettings(context_window=getattr(args, "context_window", 0) or 0),
        memory_approval=getattr(args, "memory_approval", None) or "untrusted",
        memory_approver=approver,
    )
    try:
        agent = build_agent(config)
    except (AgentError, SessionError, OSError, ValueError) as exc:
        print(f"my-agent: {exc}", file=err)
        return EXIT_CONFIG

    where = agent.memory_store.mem_dir if agent.memory_store is not None else "off"
    folder = f" · tools on {Path.cwd()}" if tools else " · tools off"
    active = agent.provider is not None and agent.provider.active
    recall = f" · recall {agent.provider.manager.name}" if agent.provider and active else ""
    print(f"my-agent chat · model {model} · memory {where}{recall}{folder}", file=err)
    if record is not None:
        print(_resumed_report(record), file=err)
    print(HELP, file=err)
    answers = _Answers(stdin, interactive)
    if interactive:
        with contextlib.suppress(ImportError):
            import readline  # noqa: F401  (here: a terminal only; line editing and history)
    try:
        return _loop(agent, store, stdin, out, view, interactive, answers, approver, cancel)
    finally:
        agent.close()


def _loop(
    agent: Agent,
    store: SessionStore,
    stdin: TextIO,
    out: TextIO,
    view: _View,
    interactive: bool,
    answers: _Answers,
    approver: TerminalApprover,
    cancel: threading.Event,
) -> int:
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
                print("(new session: memory reloaded; the last one stays saved)", file=out)
            elif command == "/compact":
                _work(agent, agent.compact, view, approver, cancel, answers, _compacted(out))
            elif command == "/sessions":
                print(_sessions_report(store.list(), current=agent.session_id), file=out)
            elif command == "/memory":
                print(_memory_report(agent), file=out)
            elif command == "/usage":
                print(_usage_report(agent), file=out)
            else:
                print(f"Commands:\n{_commands_table()}", file=out)
            continue
        _work(agent, functools.partial(agent.run, text), view, approver, cancel, answers)


def _resolve_id(store: SessionStore, wanted: str) -> str:
    """The session `wanted` names: an id, a unique start of one, or "" for the latest."""
    from .agent import SessionNotFound  # here: start-up time (see the top)

    infos = store.list()
    if not wanted:
        latest = next((info for info in infos if info.error is None), None)
        if latest is None:
            raise SessionNotFound("there is no saved session in this folder to resume")
        return latest.id
    matches = [info.id for info in infos if info.id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionNotFound(f"no saved session starts with {wanted!r} (see --list)")
    raise SessionNotFound(
        f"{len(matches)} saved sessions start with {wanted!r}; give more of the id (see --list)"
    )


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def _sessions_report(infos: list[SessionInfo], current: str | None = None) -> str:
    if not infos:
        return "No saved sessions in this folder."
    lines = ["Saved sessions, newest first (resume one with: my-agent chat --resume ID):"]
    for info in infos:
        mark = "*" if info.id == current else " "
        state = f"cannot be resumed: {info.error}" if info.error else (info.title or "(untitled)")
        busy = " [open]" if info.open and info.id != current else ""
        lines.append(
            f"{mark} {info.id[:12]}  {_when(info.updated)}  {info.messages:>4} msgs  "
            f"{_one_line(state)}{busy}"
        )
    return "\n".join(lines)


def _one_line(text: str, width: int = 160) -> str:
    """A title or a reply from a file on one line (the stream makes it visible)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _resumed_report(record: SessionRecord) -> str:
    head = (
        f"(resumed session {record.id[:12]} · {_plural(len(record.messages), 'message', 'messages')} · "
        f"{_one_line(record.title) or 'untitled'} · last active {_when(record.updated)})"
    )
    last = next(
        (m for m in reversed(record.messages) if m["role"] == "assistant" and m.get("content")),
        None,
    )
    if last is None:
        return head
    first_line = _one_line(str(last["content"]).strip().splitlines()[0])
    return f"{head}\n  last reply: {first_line}"


def _compacted(out: TextIO) -> Callable[[Any], None]:
    def show(result: Any) -> None:
        if result.compacted:
            after = _plural(result.after, "message", "messages")
            print(f"(compacted: {result.before} -> {after})", file=out)
        else:
            print("(nothing to compact yet)", file=out)

    return show


def _workspace_tools(
    args: argparse.Namespace, approver: TerminalApprover, cancel: threading.Event, memory: bool
) -> tuple[list[Tool], str]:
    from .coding_tools import (  # here: start-up time (see the top)
        DiskApplier,
        WorkspaceSettings,
        make_workspace_tools,
    )

    settings = WorkspaceSettings(
        approve_edits=bool(getattr(args, "approve_edits", False)),
        allowed_commands=tuple(getattr(args, "allow_command", None) or ()),
        ripgrep=getattr(args, "ripgrep", None),
    )
    tools = make_workspace_tools(
        Path.cwd(),
        approver=approver,
        applier=DiskApplier(),
        settings=settings,
        cancel=cancel,
        memory_hints=memory,
    )
    return tools, coding_instructions(Path.cwd())


def _work(
    agent: Any,
    job: Callable[[], Any],
    view: _View,
    approver: TerminalApprover,
    cancel: threading.Event,
    answers: _Answers,
    on_result: Callable[[Any], None] | None = None,
) -> None:
    """One reply (or compaction), run in a thread so Ctrl-C in the main thread can cancel it
    cleanly; approval questions from the tools are asked here, on the main thread, where Ctrl-C
    reaches them."""
    from .agent import AgentCancelled, AgentError  # here: start-up time (see the top)

    outcome: dict[str, Any] = {}
    # Completion is an Event, not Thread.join(timeout): a join interrupted by Ctrl-C can mark a
    # still-running thread as finished (CPython's bpo-45274 handling), ending the turn too early.
    finished = threading.Event()

    def work() -> None:
        try:
            outcome["result"] = job()
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            finished.set()

    def stop() -> None:
        cancel.set()
        agent.cancel()

    worker = threading.Thread(target=work, daemon=True)
    current: _Question | None = None
    with _CtrlC() as ctrl_c:
        worker.start()
        while True:
            # The whole wait, its loop test included, is inside the try: Ctrl-C landing between two
            # waits must cancel the turn, not escape it and end the chat.
            try:
                while not finished.is_set():
                    if ctrl_c.pressed and not cancel.is_set():
                        stop()  # the press whose KeyboardInterrupt something else swallowed
                    finished.wait(0.05)
                    current = approver.next_question()
                    if current is not None:
                        view.end_reply()
                        current.answer(_ask(current.request, view.err, answers))
                        current = None
                break
            except KeyboardInterrupt:
                if current is not None and not current.done.is_set():
                    current.answer(Decision.deny("cancelled", "the user pressed Ctrl-C"))
                current = None
                stop()
    view.end_reply()
    error = outcome.get("error")
    if isinstance(error, AgentCancelled):
        print("[cancelled]", file=view.err)
    elif isinstance(error, AgentError):
        print(f"[error] {error}", file=view.err)
    elif error is not None:
        print(f"[error] {type(error).__name__}: {error}", file=view.err)
    elif on_result is not None:
        on_result(outcome.get("result"))


class _CtrlC:
    """Ctrl-C while a reply runs, recorded before it is raised.

    A KeyboardInterrupt can be lost on its way: raised inside a finalizer the garbage collector runs
    on the main thread, it is printed and dropped, and a handler another library left installed may
    not raise at all. So for the reply's duration the press is also a flag the wait loop reads, and
    the turn is cancelled either way. Outside the main thread (an embedding) nothing is installed.
    """

    def __init__(self) -> None:
        self.pressed = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> _CtrlC:
        # A handler set outside Python (getsignal() is None) could not be put back: left alone.
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGINT) is not None:
            self._previous = signal.signal(signal.SIGINT, self._on_press)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)

    def _on_press(self, signum: int, frame: object) -> None:
        self.pressed = True  # a plain assignment: no lock a signal could find held
        raise KeyboardInterrupt


class _View:
    """Prints agent events: reply deltas to stdout, tool activity to stderr."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._mid_line = False

    def on_event(self, event: AgentEvent) -> None:
        if event["kind"] == "delta":
            self.out.write(event["text"])
            self.out.flush()
            self._mid_line = not event["text"].endswith("\n")
        elif event["kind"] == "tool_call":
            self._break()
            args = event["arguments"]
            shown = args if len(args) <= 160 else args[:157] + "..."
            print(f"  -> {event['name']} {shown}", file=self.err, flush=True)
        elif event["kind"] == "tool_result":
            content = event["content"].splitlines()
            first = content[0] if content else ""
            mark = "ok" if event["ok"] else "failed"
            print(f"  <- {event['name']} {mark}: {first[:160]}", file=self.err, flush=True)
        elif event["kind"] == "compacted":
            self._break()
            print(
                f"  (conversation compacted ({event['reason']}): {event['before']} -> "
                f"{event['after']} messages; the latest turns are kept word for word)",
                file=self.err,
                flush=True,
            )
        elif event["kind"] == "session_error" or event["kind"] == "provider_error":
            self._break()
            print(f"  [warning] {event['message']}", file=self.err, flush=True)

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
        count = _plural(len(state.entries), "entry", "entries")
        lines.append(f"  {name}: {state.used}/{state.limit} chars, {count}")
        lines.extend(f"    - {_entry_line(entry)}" for entry in state.entries)
    lines.append("(the current session sees the snapshot taken when it started; /new reloads)")
    return "\n".join(lines)


def _entry_line(entry: str) -> str:
    """An entry's first line, or the mark of an entry the scanner keeps out of every prompt."""
    from .memory.safety import describe, scan  # here: start-up time (see the top)

    issues = scan(entry)
    first = _one_line((entry.splitlines() or [""])[0], 100)
    return f"[BLOCKED: {describe(issues)}] {first}" if issues else first


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _usage_report(agent: Any) -> str:
    usage = agent.usage
    rate = usage.cache_hit_rate
    cached = "n/a" if usage.cached_tokens is None else f"{usage.cached_tokens} ({rate:.0%})"
    drops = ""
    if usage.cache_drops:
        reasons = ", ".join(drop.reason for drop in usage.cache_drops[-3:])
        drops = f" · cache drops {len(usage.cache_drops)} (latest: {reasons})"
    return (
        f"requests {usage.requests} · prompt {usage.prompt_tokens} · cached {cached} · "
        f"completion {usage.completion_tokens} · window {agent.context_window}{drops}"
    )


# --- approval in the terminal -------------------------------------------------------------------------

DIFF_LINES_SHOWN = 200


@dataclass
class _Question:
    request: ApprovalRequest
    decision: Decision | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def answer(self, decision: Decision) -> None:
        self.decision = decision
        self.done.set()


class TerminalApprover:
    """The terminal's Approver: the tool's worker thread hands each question to the main thread
    (which owns stdin and receives Ctrl-C) and waits for the answer."""

    def __init__(self, cancel: threading.Event) -> None:
        self._questions: queue.Queue[_Question] = queue.Queue()
        self._cancel = cancel

    def approve(self, request: ApprovalRequest) -> Decision:
        question = _Question(request)
        self._questions.put(question)
        while not question.done.wait(0.1):
            if self._cancel.is_set():  # answered here, so the main thread never asks it late
                question.answer(Decision.deny("cancelled", "the turn was cancelled"))
        return question.decision or Decision.deny("error", "no answer")

    def next_question(self) -> _Question | None:
        """The oldest question still waiting for an answer, if any."""
        while True:
            try:
                question = self._questions.get_nowait()
            except queue.Empty:
                return None
            if not question.done.is_set():
                return question


class _Answers:
    """Lines typed by the user: input() on a terminal (line editing, Ctrl-C), else read lines."""

    def __init__(self, stdin: TextIO, interactive: bool) -> None:
        self._stdin = stdin
        self._interactive = interactive

    def read(self, prompt: str, err: TextIO) -> str | None:
        """The answer without its line end; None at end of input."""
        if self._interactive:
            try:
                return input(prompt)
            except EOFError:
                return None
        err.write(prompt)
        err.flush()
        line = self._stdin.readline()
        return None if not line else line.rstrip("\n")


def _ask(request: ApprovalRequest, err: TextIO, answers: _Answers) -> Decision:
    """Show what is asked (the diff of an edit, the command line and folder) and read y/N."""
    if request.kind == "command":
        lines = request.detail.split("\n")
        print(f"\n  The agent wants to run, in {request.cwd}:", file=err)
        for line in lines:
            print(f"    {line}", file=err)
        what = "it" if len(lines) == 1 else f"all {len(lines)} lines above"
        prompt = f"  Run {what}? [y/N, or say why not] "
    else:
        print(f"\n  {request.title}:", file=err)
        _show_diff(request.detail, err, DIFF_LINES_SHOWN)
        question = "Save this to memory?" if request.kind == "memory" else "Apply this change?"
        prompt = f"  {question} [y/N/d = show the whole diff, or say why not] "
    while True:
        answer = answers.read(prompt, err)
        if answer is None:
            print("  (no answer: declined)", file=err)
            return Decision.deny("user", "no answer (end of input)")
        word = answer.strip()
        if word.lower() in ("y", "yes"):
            return Decision.allow("user")
        if word.lower() == "d" and request.kind != "command":
            _show_diff(request.detail, err, None)
            continue
        if word.lower() in ("", "n", "no"):
            return Decision.deny("user")
        return Decision.deny("user", word)


def _show_diff(diff: str, err: TextIO, limit: int | None) -> None:
    lines = diff.splitlines()
    shown = lines if limit is None else lines[:limit]
    for line in shown:
        print(f"    {line}", file=err)
    if len(shown) < len(lines):
        more = _plural(len(lines) - len(shown), "more line", "more lines")
        print(f"    ... {more} (answer d to see them all)", file=err)
