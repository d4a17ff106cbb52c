"""Run scenarios: each in a fresh temporary workspace, one agent session per scenario session.

Nothing outside the temporary folder is read or written: the workspace files and the starting
memory of the scenario are written there, the agent's memory folder is given explicitly (never the
current folder's), its workspace tools are rooted there, and the folder is removed afterwards.
What happened is recorded as an `Outcome` (checks.py) with the transcript and the provider's usage.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from my_agent_core.layout import FILE_NAMES
from my_agent_core.memory.document import ENTRY_DELIMITER
from my_agent_core.memory.store import MemoryStore
from my_agent_core.safe_write import write_atomic

from .agents import AgentSettings, build_agent
from .checks import CallRecord, CheckResult, Outcome, TurnRecord, evaluate
from .scenario import FILES, Scenario

if TYPE_CHECKING:
    from my_agent_core.agent.events import AgentEvent

__all__ = ["CaseResult", "Progress", "SessionLog", "run_case", "run_suite"]

#: The why of a passed case lists the checks' reasons up to this length.
WHY_CHARS = 400


@dataclass(frozen=True)
class Progress:
    """Where a run is: case `case` of `total`, its session and message, and what it waits for."""

    case: int
    total: int
    scenario: str
    category: str
    session: int
    sessions: int
    message: int
    messages: int
    activity: str


@dataclass
class SessionLog:
    """One session as the report shows it: the frozen system prompt, the messages sent and the
    provider's usage (`cached_tokens` None: the provider reported no cache figure)."""

    system_prompt: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    reported_prompt_tokens: int = 0
    cached_tokens: int | None = None


@dataclass
class CaseResult:
    scenario: Scenario
    passed: bool
    why: str
    checks: list[CheckResult]
    outcome: Outcome
    sessions: list[SessionLog]
    error: str | None = None
    seconds: float = 0.0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached / prompt tokens over the requests whose provider reported a cache figure."""
        cached = [s.cached_tokens for s in self.sessions if s.cached_tokens is not None]
        reported = sum(s.reported_prompt_tokens for s in self.sessions)
        if not cached or not reported:
            return None
        return sum(cached) / reported


def run_suite(
    scenarios: Sequence[Scenario],
    settings: AgentSettings,
    progress: Callable[[Progress], None] | None = None,
) -> list[CaseResult]:
    """Every scenario in order; a failing endpoint fails that case, never the run."""
    return [
        run_case(scenario, settings, progress, case=n, total=len(scenarios))
        for n, scenario in enumerate(scenarios, start=1)
    ]


def run_case(
    scenario: Scenario,
    settings: AgentSettings,
    progress: Callable[[Progress], None] | None = None,
    *,
    case: int = 1,
    total: int = 1,
) -> CaseResult:
    """One scenario in a temporary workspace that is removed afterwards."""
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="my-agent-eval-"))
    try:
        workspace = root / "workspace"
        memory_dir = workspace / ".my_agent_core" / "memory"
        _prepare(scenario, workspace, memory_dir)
        before = _entries(memory_dir)
        turns: list[TurnRecord] = []
        logs: list[SessionLog] = []
        error = _play(scenario, settings, workspace, memory_dir, turns, logs, progress, case, total)
        outcome = Outcome(before, _entries(memory_dir), turns, scenario.lang)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results = [evaluate(check, outcome) for check in scenario.checks]
    passed = error is None and all(r.passed for r in results)
    return CaseResult(
        scenario,
        passed,
        _why(results, error),
        results,
        outcome,
        logs,
        error,
        time.monotonic() - started,
    )


def _prepare(scenario: Scenario, workspace: Path, memory_dir: Path) -> None:
    memory_dir.mkdir(parents=True)
    for relative, text in scenario.files.items():
        path = workspace / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
    for name, entries in scenario.memory.items():
        if entries:
            write_atomic(memory_dir / name, (ENTRY_DELIMITER.join(entries) + "\n").encode("utf-8"))


def _entries(memory_dir: Path) -> dict[str, list[str]]:
    store = MemoryStore(memory_dir)
    store.load_from_disk()
    by_name = {name: target for target, name in FILE_NAMES.items()}
    return {name: store.entries(by_name[name]) for name in FILES}


def _play(
    scenario: Scenario,
    settings: AgentSettings,
    workspace: Path,
    memory_dir: Path,
    turns: list[TurnRecord],
    logs: list[SessionLog],
    progress: Callable[[Progress], None] | None,
    case: int,
    total: int,
) -> str | None:
    """Every session of the scenario; the error that stopped it, or None."""
    current: list[TurnRecord] = []
    calls: dict[str, CallRecord] = {}
    where: dict[str, int] = {}

    def tell(activity: str) -> None:
        if progress is not None:
            session = scenario.sessions[where["session"] - 1]
            progress(
                Progress(
                    case,
                    total,
                    scenario.id,
                    scenario.category,
                    where["session"],
                    len(scenario.sessions),
                    where["message"],
                    len(session),
                    activity,
                )
            )

    def on_event(event: AgentEvent) -> None:
        if event["kind"] == "tool_call" and current:
            call = CallRecord(event["name"], event["arguments"] or "")
            calls[event["call_id"]] = call
            current[-1].calls.append(call)
            tell(f"tool {call.name}")
        elif event["kind"] == "tool_result":
            found = calls.get(event["call_id"])
            if found is not None:
                found.ok = event["ok"]
                found.result = event["content"]
                tell("waiting for the model")

    for s, messages in enumerate(scenario.sessions, start=1):
        log = SessionLog()
        logs.append(log)
        where.update(session=s, message=1)
        tell("starting the session")
        try:
            agent = build_agent(settings, workspace, memory_dir, on_event)
        except Exception as exc:  # a model or client the Agent refuses
            return f"the agent could not start: {exc}"
        try:
            log.system_prompt = agent.system_prompt
            for m, message in enumerate(messages, start=1):
                where.update(message=m)
                turn = TurnRecord(s, m, message)
                turns.append(turn)
                current[:] = [turn]
                tell("waiting for the model")
                try:
                    turn.reply = agent.run(message)
                except Exception as exc:  # AgentError and anything a provider throws
                    turn.error = f"{type(exc).__name__}: {exc}"
                    return f"session {s}, message {m}: {turn.error}"
        finally:
            log.messages = agent.messages[1:]
            usage = agent.usage
            log.prompt_tokens = usage.prompt_tokens
            log.cached_tokens = usage.cached_tokens
            log.reported_prompt_tokens = usage.reported_prompt_tokens
            agent.close()
    return None


def _why(results: Sequence[CheckResult], error: str | None) -> str:
    """One line: the error, the first failed check, or the reasons the checks passed."""

    def said(result: CheckResult) -> str:
        label = result.check.why
        return f"{label}: {result.why}" if label else result.why

    if error is not None:
        return f"the run stopped: {error}"
    failed = [r for r in results if not r.passed]
    if failed:
        more = f" (and {len(failed) - 1} more failed)" if len(failed) > 1 else ""
        return said(failed[0]) + more
    text = "; ".join(said(r) for r in results)
    return text if len(text) <= WHY_CHARS else text[: WHY_CHARS - 1] + "…"
