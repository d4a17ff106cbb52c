"""Compaction: when a long session compacts (`planner`: the window it plans with, the token estimate)
and how (`summary`: older turns become a summary the model writes, the system message unchanged)."""

from .planner import MIN_COMPACTION_SHARE, SUMMARY_VIEW_SHARE, SessionCompactor
from .summary import (
    DEFAULT_COMPACT_AT,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_KEEP_SHARE,
    SAVE_NOTE,
    CompactionHost,
    CompactionPlan,
    CompactionReason,
    CompactionResult,
    CompactionSettings,
    TokenEstimate,
    context_window_for,
    plan_compaction,
    run_compaction,
)

__all__ = [
    "DEFAULT_COMPACT_AT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_KEEP_SHARE",
    "MIN_COMPACTION_SHARE",
    "SAVE_NOTE",
    "SUMMARY_VIEW_SHARE",
    "CompactionHost",
    "CompactionPlan",
    "CompactionReason",
    "CompactionResult",
    "CompactionSettings",
    "SessionCompactor",
    "TokenEstimate",
    "context_window_for",
    "plan_compaction",
    "run_compaction",
]
