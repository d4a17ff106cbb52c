"""One session's taint tracker: what untrusted text the model has received, and whether a memory
write may carry it.

Two rules (docs/safety.md "Trust"):
- (a) TURN: since the user's last message the model received a tool result other than the `memory`
  tool's own, an attachment or recalled items. A write in such a turn may paraphrase what it read,
  so it is tainted whatever its words (this covers paraphrases and planted removals alike).
- (b) COPY: the write's new text shares a run of words (`text.py`) with any untrusted text of the
  session: every source of (a), and the context files frozen into the system prompt and the
  summaries of compactions. This covers copies made in a later turn.

The agent feeds the tracker from its typed seams (`receive`, `begin_turn`); a resumed session
rebuilds it from its persisted history (`history.rebuild`). The index of rule (b) is bounded: past
`max_chars` of indexed text the tracker fails closed (every later write counts as possibly
copied) rather than forgetting what it read.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from my_agent_core.memory.provenance import SourceRef

from .sources import Source
from .text import DEFAULT_RULE, RunRule, joined, token_starts, tokens, units, windows

__all__ = ["MAX_INDEX_CHARS", "Copy", "Taint", "TaintTracker"]

#: Characters of folded untrusted text the copy index keeps per session (about 8 MB); past it the
#: tracker treats every write as possibly copied.
MAX_INDEX_CHARS = 8_000_000
#: Copies reported per write (the first per source, newest sources first).
MAX_COPIES = 8


@dataclass(frozen=True, slots=True)
class Copy:
    """A run a new text shares with a source: the source, where in it, and that line."""

    source: Source
    ref: SourceRef
    line: str


@dataclass(frozen=True, slots=True)
class Taint:
    """What a write may derive from: `read` (rule a: received since the user's last message),
    `copied` (rule b: runs it shares), `unindexed` (rule b could not be checked: the index is full)."""

    read: tuple[Source, ...] = ()
    copied: tuple[Copy, ...] = ()
    unindexed: bool = False

    @property
    def tainted(self) -> bool:
        return bool(self.read or self.copied or self.unindexed)

    def refs(self) -> list[SourceRef]:
        """Every source as a journal reference: copies (with their line) first."""
        out = [copy.ref for copy in self.copied]
        if self.unindexed:
            out.append(SourceRef("unindexed", "earlier text", "copied"))
        out += [source.ref("read") for source in self.read]
        return out


@dataclass(slots=True)
class _Indexed:
    source: Source
    joined: str


@dataclass(eq=False)
class TaintTracker:
    """The state of rules (a) and (b) for one session; thread-safe (the turn's thread feeds and
    asks, another thread may read `session`)."""

    rule: RunRule = DEFAULT_RULE
    max_chars: int = MAX_INDEX_CHARS
    #: The session's id and title, for the journal's provenance (set by the agent).
    session_id: str | None = None
    title: str | None = None
    _turn: list[Source] = field(default_factory=list)
    _index: list[_Indexed] = field(default_factory=list)
    _seen: set[int] = field(default_factory=set)
    _chars: int = 0
    _unindexed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ----- feeding ---------------------------------------------------------------------------
    def clear(self) -> None:
        """A new session (or one about to be rebuilt from its history): nothing received yet."""
        with self._lock:
            self._turn = []
            self._index = []
            self._seen = set()
            self._chars = 0
            self._unindexed = False

    def begin_turn(self) -> None:
        """The user sent a message: rule (a) starts over."""
        with self._lock:
            self._turn = []

    def receive(self, source: Source, *, this_turn: bool = True) -> None:
        """The model received `source`: indexed for rule (b), and counted for rule (a) unless it
        is not part of the turn (a context file, a summary)."""
        if not source.text.strip():
            if this_turn:
                with self._lock:
                    self._turn.append(source)
            return
        text = joined(tokens(source.text))
        with self._lock:
            if this_turn:
                self._turn.append(source)
            key = hash(text)
            if key in self._seen:
                return
            if self._chars + len(text) > self.max_chars:
                self._unindexed = True  # fail closed: never forget what was read
                return
            self._seen.add(key)
            self._chars += len(text)
            self._index.append(_Indexed(source, text))

    def receive_all(self, sources: Iterable[Source], *, this_turn: bool = True) -> None:
        for source in sources:
            self.receive(source, this_turn=this_turn)

    # ----- asking ------------------------------------------------------------------------------
    @property
    def turn_sources(self) -> tuple[Source, ...]:
        with self._lock:
            return tuple(self._turn)

    @property
    def indexed_chars(self) -> int:
        return self._chars

    def assess(self, new_texts: Sequence[str]) -> Taint:
        """Rules (a) and (b) for a write whose new texts are `new_texts` (none for a remove)."""
        with self._lock:
            read = tuple(self._turn)
            index = list(self._index)
            unindexed = self._unindexed
        copies: list[Copy] = []
        keys = [key for text in new_texts for key in self._keys(text)]
        if keys:
            for item in reversed(index):  # newest first: the likeliest origin
                at = next((pos for key in keys if (pos := item.joined.find(key)) >= 0), -1)
                if at >= 0:
                    copies.append(_copy(item, at))
                    if len(copies) >= MAX_COPIES:
                        break
        return Taint(read, tuple(copies), unindexed and bool(new_texts))

    def _keys(self, text: str) -> list[str]:
        """The runs of `text` to look for: its windows, or the whole text when it is too short
        for one but weighs at least `whole_min_units`."""
        toks = tokens(text)
        keys = list(dict.fromkeys(key for _start, key in windows(toks, self.rule)))
        if keys:
            return keys
        weight = sum(units(t) for t in toks)
        if self.rule.whole_min_units and weight >= self.rule.whole_min_units:
            return [joined(toks)]
        return []


def _copy(item: _Indexed, at: int) -> Copy:
    """The copy found at offset `at` of an item's joined tokens, placed in its original text."""
    token = item.joined.count(" ", 0, at)  # joined is " t0 t1 ... ": spaces before = token index
    starts = token_starts(item.source.text)
    offset = starts[token] if token < len(starts) else 0
    return Copy(item.source, item.source.place_at(offset), item.source.line_at(offset))
