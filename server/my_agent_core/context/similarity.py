"""Does a memory entry repeat what a context file already says?

AGENTS.md (and CLAUDE.md ...) go into every prompt next to memory, so an entry that restates one of
their lines spends memory's small budget on nothing; the design's SKIP list says not to save it.
A repeat is found on a normalised form of both texts (folded like the safety scanner folds, so
case, emphasis, bullets, backticks and spacing do not matter; Chinese, Japanese and Korean
characters are tokens on their own): the entry is contained in one paragraph or line, or it is
nearly the same token sequence as one (with or without the heading above it, which is how
imported items read).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from my_agent_core.context.files import ContextText
from my_agent_core.memory.similar import tokens

__all__ = ["MIN_TOKENS", "ContextCorpus", "ContextMatch", "tokens"]

#: Entries shorter than this (in tokens) are never reported: "use uv" is in half the world's files.
MIN_TOKENS = 5
_PRECISION = 0.85  # share of the entry's tokens found, in order, in the unit
_RECALL = 0.6  # share of the unit's tokens the entry covers (else it is a small part of it)
# The start of an ATX heading; its title is cut by `_heading_title` (a regex `(.*?)\s*#*\s*$`
# tries every split of a long line of blanks: minutes on one line of a cloned AGENTS.md).
_HEADING = re.compile(r"\s{0,3}#{1,6}(?:\s+|$)")


def _heading_title(line: str) -> str | None:
    """The title of a Markdown heading line (closing `#`s dropped), or None for other lines."""
    found = _HEADING.match(line)
    if found is None:
        return None
    return line[found.end() :].rstrip().rstrip("#").rstrip()


@dataclass(frozen=True, slots=True)
class ContextMatch:
    """Where a context file says the same: the file's name, the 1-based line, and how."""

    name: str
    line: int
    how: Literal["contained", "similar"]


@dataclass(frozen=True, slots=True)
class _Unit:
    name: str
    line: int
    tokens: tuple[str, ...]
    joined: str  # " a b c " for containment on token boundaries
    heading: tuple[str, ...]


class ContextCorpus:
    """The paragraphs and lines of the context files, indexed by token for quick lookups."""

    def __init__(self, texts: Sequence[ContextText]) -> None:
        self._units: list[_Unit] = []
        self._by_token: dict[str, set[int]] = {}
        for item in texts:
            self._add_file(item.name, item.text)

    def __len__(self) -> int:
        return len(self._units)

    def _add_file(self, name: str, text: str) -> None:
        heading: tuple[str, ...] = ()
        paragraph: list[str] = []
        start = 0
        lines = text.split("\n")
        for number, line in enumerate(lines, start=1):
            title = _heading_title(line)
            if title is not None or not line.strip():
                self._add_unit(name, start, paragraph, heading)
                paragraph = []
                if title is not None:
                    heading = tuple(tokens(title))
                continue
            if not paragraph:
                start = number
            paragraph.append(line)
            self._add_unit(name, number, [line], heading, single=True)  # every line is a unit
        self._add_unit(name, start, paragraph, heading)

    def _add_unit(
        self,
        name: str,
        line: int,
        lines: list[str],
        heading: tuple[str, ...],
        *,
        single: bool = False,
    ) -> None:
        if not lines or (not single and len(lines) == 1):
            return  # a paragraph of one line is already in as that line
        found = tuple(tokens("\n".join(lines)))
        if not found:
            return
        unit_id = len(self._units)
        self._units.append(_Unit(name, line, found, f" {' '.join(found)} ", heading))
        for token in set(found) | set(heading):  # an imported item carries its heading
            self._by_token.setdefault(token, set()).add(unit_id)

    def find(self, entry: str) -> ContextMatch | None:
        """The first unit (in file order) the entry repeats, or None."""
        words = tokens(entry)
        if len(words) < MIN_TOKENS:
            return None
        counts: dict[int, int] = {}
        for token in set(words):
            for unit_id in self._by_token.get(token, ()):
                counts[unit_id] = counts.get(unit_id, 0) + 1
        distinct = len(set(words))
        needle = f" {' '.join(words)} "
        for unit_id in sorted(u for u, n in counts.items() if n >= distinct * _PRECISION):
            unit = self._units[unit_id]
            if needle in unit.joined:
                return ContextMatch(unit.name, unit.line, "contained")
            if _similar(words, unit.tokens) or (
                unit.heading and _similar(words, unit.heading + unit.tokens)
            ):
                return ContextMatch(unit.name, unit.line, "similar")
        return None


def _similar(entry: Sequence[str], unit: Sequence[str]) -> bool:
    matcher = SequenceMatcher(None, entry, unit, autojunk=False)
    matched = sum(block.size for block in matcher.get_matching_blocks())
    return matched >= _PRECISION * len(entry) and matched >= _RECALL * len(unit)
