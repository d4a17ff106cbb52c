"""Memory that nothing untrusted writes: the structural wall between what the model reads and what
goes into every future prompt.

- `sources.py`: what a piece of untrusted text is and where it came from (a file and its lines, a
  command, a search, a context file, an attachment, a recalled item);
- `text.py`: what "a run of words" is (folded tokens; CJK by characters);
- `taint.py`: one session's tracker (rule (a): untrusted text received in this turn; rule (b):
  a run shared with any untrusted text of the session), fed by the agent;
- `history.py`: the tracker rebuilt from a persisted session (a resume is no way around it);
- `policy.py`: the decision for one write (apply, or ask first) under `myAgent.memory.approval`,
  the approval's words and the provenance kept in the journal.

The `memory` tool consults `MemoryTrust` (policy.py) through `make_memory_tool(..., trust=...)`;
the phrase scanner (`memory/safety.py`) stays as the tripwire behind it. docs/safety.md "Trust".
"""

from __future__ import annotations

from my_agent_core.memory.provenance import APPROVAL_MODES, ApprovalMode

from .history import rebuild
from .policy import Judgement, MemoryTrust
from .sources import (
    Source,
    from_attachment,
    from_context_block,
    from_recall_block,
    from_tool_result,
)
from .taint import Copy, Taint, TaintTracker
from .text import DEFAULT_RULE, RunRule

__all__ = [
    "APPROVAL_MODES",
    "DEFAULT_RULE",
    "ApprovalMode",
    "Copy",
    "Judgement",
    "MemoryTrust",
    "RunRule",
    "Source",
    "Taint",
    "TaintTracker",
    "from_attachment",
    "from_context_block",
    "from_recall_block",
    "from_tool_result",
    "rebuild",
]
