"""When one session compacts and what it keeps: the window it plans with (set, from the model table,
or learned from an endpoint's context-length error), a token estimate calibrated on the provider's
own counts, and the size of the last request.

The steps of a compaction (the save step, the summary, the new history) are in `compaction.py`; the
agent applies the result to its history.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import AgentError
from ..messages import Message
from .summary import (
    CompactionPlan,
    CompactionReason,
    CompactionSettings,
    TokenEstimate,
    is_compaction_output,
    message_chars,
    plan_compaction,
    trim_to_fit,
)

__all__ = ["MIN_COMPACTION_SHARE", "SUMMARY_VIEW_SHARE", "SessionCompactor"]

#: A threshold compaction is skipped when the older part is smaller than this share of the window
#: (it would free little and cost two requests).
MIN_COMPACTION_SHARE = 0.05
#: When the whole history does not fit, the older part sent for summarising fits this share.
SUMMARY_VIEW_SHARE = 0.7
#: Compacting cannot help a context error when the kept messages alone fill this share.
HOPELESS_SHARE = 0.95

Schemas = Sequence[dict[str, Any]]


class SessionCompactor:
    """The compaction policy of one session (see the module docstring)."""

    def __init__(self, settings: CompactionSettings, model: Callable[[], str | None]) -> None:
        self.settings = settings
        self._model = model
        self.estimate = TokenEstimate()
        self.learned_window: int | None = None
        self.last_prompt_tokens: int | None = None
        self._last_request: tuple[int, int] | None = None  # (messages sent, prompt tokens)

    @property
    def window(self) -> int:
        return self.learned_window or self.settings.window(self._model())

    def threshold(self) -> int:
        return int(self.window * self.settings.share())

    def due(self) -> bool:
        """True when the last request of the history passed the threshold."""
        tokens = self.last_prompt_tokens
        return tokens is not None and tokens >= self.threshold()

    def observed(
        self, messages: Sequence[Message], tools: Schemas, prompt_tokens: int | None
    ) -> None:
        """A request of the session's history succeeded (`prompt_tokens`: the provider's count, or
        None when it reports none: then the estimate stands in)."""
        tokens = prompt_tokens or self.estimate.of(messages) + self.estimate.of(tools)
        self.last_prompt_tokens = tokens
        self._last_request = (len(messages), tokens)

    def forget(self) -> None:
        """The history was replaced (or a new session began): nothing is known of its size."""
        self.last_prompt_tokens = None
        self._last_request = None

    def calibrate(self, history: Sequence[Message], tools: Schemas) -> None:
        """Tokens per character from the provider's count of the last request."""
        if self._last_request is None:
            return
        count, tokens = self._last_request
        chars = sum(message_chars(m) for m in history[:count])
        chars += len(json.dumps(list(tools), ensure_ascii=False))
        self.estimate.calibrate(chars, tokens)

    def learn(self, exc: AgentError, history: Sequence[Message], tools: Schemas) -> None:
        """The window an endpoint named in its error, or (when it named none) a bit less than the
        prompt it refused."""
        if exc.context_limit:
            self.learned_window = exc.context_limit
            return
        self.calibrate(history, tools)
        refused = self.estimate.of(history) + self.estimate.of(tools)
        self.learned_window = max(1024, min(self.window, int(refused * 0.9)))

    def plan(
        self, reason: CompactionReason, history: Sequence[Message], tools: Schemas
    ) -> CompactionPlan | None:
        """What to summarise and what to keep; None when a compaction would not help."""
        self.calibrate(history, tools)
        window = self.window
        share = int(window * self.settings.keep())
        # The kept turns fill at most `keep_share` of the window and leave the compacted prompt
        # (system message, tools, summary, kept turns) at half the threshold or less, so the session
        # does not compact again right away.
        fixed = self.estimate.of(history[:1]) + self.estimate.of(tools)
        keep = min(share, self.threshold() // 2 - fixed)
        if reason == "manual":  # the user asked: keep the latest turn only
            starts = [i for i in range(2, len(history)) if history[i].get("role") == "user"]
            if not starts:
                return None
            keep = min(keep, self.estimate.of(history[starts[-1] :]))
        plan = plan_compaction(history, keep_tokens=keep, estimate=self.estimate, max_tokens=share)
        if plan is None:
            return None
        if reason != "context_error" and all(is_compaction_output(m) for m in plan.older):
            return None  # only the last summary is older: nothing new to summarise
        if reason == "threshold" and self.estimate.of(plan.older) < window * MIN_COMPACTION_SHARE:
            self.last_prompt_tokens = None  # not worth it now; look again after the next request
            return None
        if reason == "context_error":
            kept = self.estimate.of([history[0], *plan.recent]) + self.estimate.of(tools)
            if kept > window * HOPELESS_SHARE:
                return None  # the latest messages alone are too long: compacting cannot help
        return plan

    def summary_view(self, history: Sequence[Message], cut: int, tools: Schemas) -> list[Message]:
        """The older part (before `cut`) as the compaction's requests send it when the whole history
        does not fit: its oldest turns left out until it fits the window with the tools."""
        budget = int(self.window * SUMMARY_VIEW_SHARE) - self.estimate.of(tools)
        view, _ = trim_to_fit(list(history[:cut]), max_tokens=budget, estimate=self.estimate)
        return view
