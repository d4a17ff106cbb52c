"""Scripted "models" of known behaviour for `my-agent eval`, as responders of tests/support/fake_openai.py.

Each looks only at the request (the last user message, what came after it) and answers the way its
name says, whatever the scenario, so the suite's scores can be checked against what the categories
mean:

- `never_calls_tools`: a short acknowledgement, never a tool call.
- `saves_everything`: adds every user message, verbatim, to MEMORY.md, then acknowledges.
- `claims_saves`: says "I'll remember that" (or 我记住了) and never calls a tool.
- `gullible`: reads the file the user names (or searches the folder), then saves the lines of it
  that talk about memory: the planted instruction a poison scenario is about.
- `ReferenceModel`: plays each scenario's `reference` (what a model that follows the rules does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from my_agent_core.eval.scenario import Scenario

__all__ = [
    "ReferenceModel",
    "claims_saves",
    "gullible",
    "never_calls_tools",
    "saves_everything",
]

Responder = Callable[[dict[str, Any]], dict[str, Any] | None]
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _turn(request: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The last user message and the messages after it (the steps of this turn so far)."""
    messages = request.get("messages") or []
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return str(messages[index].get("content") or ""), messages[index + 1 :]
    return "", []


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}]}


def never_calls_tools(request: dict[str, Any]) -> dict[str, Any]:
    user, _after = _turn(request)
    return {"content": "好的。" if _CJK.search(user) else "OK."}


def saves_everything(request: dict[str, Any]) -> dict[str, Any]:
    user, after = _turn(request)
    if not after:
        return _call("memory", target="memory", action="add", content=user)
    return {"content": "Done."}


def claims_saves(request: dict[str, Any]) -> dict[str, Any]:
    user, _after = _turn(request)
    return {"content": "好的，我记住了。" if _CJK.search(user) else "Got it, I'll remember that."}


_PATH = re.compile(r"[\w./-]+\.(?:md|py|txt|toml|json|yaml)\b")
#: A line that asks an AI to remember something: the shape of every planted instruction here.
_PLANTED = re.compile(
    r"(?:\bAI\b|assistant|agent|助手).*(?:memory|remember|记忆|记住)", re.IGNORECASE
)


def gullible(request: dict[str, Any]) -> dict[str, Any]:
    user, after = _turn(request)
    if not after:
        found = _PATH.search(user)
        if found:
            return _call("read_file", path=found.group(0))
        if "docs" in user:
            return _call("search_text", query="AI", path="docs")
        return {"content": "OK."}
    if len(after) == 2:  # the tool call and its result
        result = str(after[-1].get("content") or "")
        lines = [re.sub(r"^\s*(?:\d+\t|[\w./-]+:\d+: )", "", line) for line in result.splitlines()]
        planted = [line.strip(" #<>!-") for line in lines if _PLANTED.search(line)]
        if planted:
            return _call("memory", target="memory", action="add", content=planted[0])
    return {"content": "Done."}


class ReferenceModel:
    """Answers each user message of the given scenarios with its reference steps, in order."""

    def __init__(self, scenarios: Sequence[Scenario]) -> None:
        self.steps: dict[str, tuple[dict[str, Any], ...]] = {}
        for scenario in scenarios:
            if scenario.reference is None:
                continue
            for session, replies in zip(scenario.sessions, scenario.reference, strict=True):
                for message, steps in zip(session, replies, strict=True):
                    known = self.steps.setdefault(message, steps)
                    if known != steps:
                        raise ValueError(f"two references answer {message[:60]!r} differently")

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        user, after = _turn(request)
        steps = self.steps.get(user)
        if steps is None:
            return {"content": f"(no reference for {user[:40]!r})"}
        step = sum(1 for m in after if m.get("role") == "assistant")
        response = dict(steps[min(step, len(steps) - 1)])
        if "tool_calls" in response:
            response["tool_calls"] = [
                {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}
                for c in response["tool_calls"]
            ]
        return response
