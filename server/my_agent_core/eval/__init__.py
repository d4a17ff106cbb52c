"""`my-agent eval`: measure how a model handles long-term memory, on the user's own endpoint.

Scenarios are data (`scenario.py`, one JSON file each under `scenarios/`), run in temporary
workspaces (`runner.py`, agents built in `agents.py`), scored by deterministic checks (`checks.py`)
and reported as tables, JSON or a self-contained HTML page (`report.py`). See docs/eval.md.
Names load on first use, so `my-agent --help` does not import the runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from my_agent_core.lazy import lazy_exports

if TYPE_CHECKING:
    from my_agent_core.eval.agents import AgentSettings, build_agent
    from my_agent_core.eval.checks import CLAIMS, CheckResult, Outcome, evaluate
    from my_agent_core.eval.report import html_report, summary, tables
    from my_agent_core.eval.runner import CaseResult, Progress, run_case, run_suite
    from my_agent_core.eval.scenario import (
        BUILTIN_DIR,
        CATEGORIES,
        Check,
        Scenario,
        ScenarioError,
        builtin_scenarios,
        load_file,
        load_scenarios,
    )

__getattr__ = lazy_exports(
    __name__,
    {
        "AgentSettings": "agents",
        "build_agent": "agents",
        "CLAIMS": "checks",
        "CheckResult": "checks",
        "Outcome": "checks",
        "evaluate": "checks",
        "html_report": "report",
        "summary": "report",
        "tables": "report",
        "CaseResult": "runner",
        "Progress": "runner",
        "run_case": "runner",
        "run_suite": "runner",
        "BUILTIN_DIR": "scenario",
        "CATEGORIES": "scenario",
        "Check": "scenario",
        "Scenario": "scenario",
        "ScenarioError": "scenario",
        "builtin_scenarios": "scenario",
        "load_file": "scenario",
        "load_scenarios": "scenario",
    },
)

__all__ = [
    "BUILTIN_DIR",
    "CATEGORIES",
    "CLAIMS",
    "AgentSettings",
    "CaseResult",
    "Check",
    "CheckResult",
    "Outcome",
    "Progress",
    "Scenario",
    "ScenarioError",
    "build_agent",
    "builtin_scenarios",
    "evaluate",
    "html_report",
    "load_file",
    "load_scenarios",
    "run_case",
    "run_suite",
    "summary",
    "tables",
]
