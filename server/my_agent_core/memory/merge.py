"""The entry-wise three-way merge of a memory file.

Git sees MEMORY.md as lines, so two people who each add a fact at the end get a conflict; the team
sees entries. This merge works on entries (read with the one parser) and never writes a conflict
marker nor drops the text of an entry that either side changed or added.

What ends up in the result follows set rules: an entry added on either side is kept once; an entry
of the base that one side removed (or changed) and the other kept unchanged is gone; an entry both
sides changed keeps both new versions; an entry changed on one side and removed on the other keeps
the change. Matching entries by identity (exact text first, then a similarity pairing) decides where
an edited entry stands: a small edit keeps its place instead of moving to the end of the file.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from enum import Enum
from itertools import pairwise

from my_agent_core.memory.document import normalize_entry, parse, serialize

__all__ = [
    "SIMILARITY_CUTOFF",
    "UNBASED_CUTOFF",
    "Matching",
    "Merged",
    "match_entries",
    "merge_entries",
    "merge_texts",
    "pair_additions",
]

#: An entry of a side pairs with a base entry it does not equal when difflib's ratio reaches this
#: (difflib's own default for close matches): "uses pytest" -> "uses pytest -q" is an edit.
SIMILARITY_CUTOFF = 0.6
#: Without a base (a git conflict block in the default style) two additions are taken for one
#: entry both sides edited only when closer than this and sharing a word: two facts added at one
#: spot ("Staging URL is ...", "Production URL is ...": 0.74) are often alike.
UNBASED_CUTOFF = 0.8
# Pairing compares unmatched base entries with unmatched side entries. difflib's ratio costs about
# W = sum over characters of (count in a) * (count in b) steps and more on repetitive text (two
# 4,000-char entries over two letters: seconds each), and git waits for the driver without a
# limit. So the pairing is bounded, deterministically: each side entry is compared with its nearest
# base entries only, a long entry by its head and tail only, and the whole merge spends at most
# `_MAX_RATIOS` ratio calls and `_WORK_BUDGET` of W. Pairing only decides where an edited entry
# stands and what is reported: an entry left unpaired reads as a removal plus an addition, which
# keeps both versions, so the merged set of entries is the same either way (placement may suffer,
# content never).
_NEAREST = 16  # base entries each side entry is compared with, nearest positions first
_WINDOW = 300  # a longer entry is compared by its first and last `_WINDOW` characters
_MAX_RATIOS = 64  # per side
_WORK_BUDGET = 150_000  # per side
_MAX_LOOKS = 2048  # candidate pairs put through the cheap filters, per side
# The second chance (`_pair_leftovers`): a base entry one side changed and the other has no match
# for is paired with that other side's new entry that stands where it stood and shares a word
# with it, so an entry edited on both sides is reported and placed as one (both versions next to
# each other), not as "changed on one side, removed on the other" plus a stray addition.
_LEFTOVER_NEAREST = 8  # new entries of a gap looked at per base entry
_LEFTOVER_LOOKS = 2048  # per side
_WORD = re.compile(r"\w{4,}")


class Side(str, Enum):
    OURS = "ours"
    THEIRS = "theirs"


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged entries, and what a person may want to look at afterwards."""

    entries: tuple[str, ...]
    #: (ours, theirs): both sides changed one base entry differently, so both versions were kept.
    both_changed: tuple[tuple[str, str], ...] = ()
    #: Changes kept although the other side removed the entry (text is never lost).
    kept_over_removal: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The canonical file text of the result (what the store would write)."""
        return serialize(list(self.entries))


@dataclass(frozen=True, slots=True)
class Matching:
    """Which base entry each entry of one side is (same text) or edits (similar text)."""

    side_to_base: tuple[int | None, ...]
    base_to_side: dict[int, int] = field(default_factory=dict)

    def keeps_order(self) -> bool:
        """True when the side's matched entries stand in the base's order (no reordering)."""
        order = [b for b in self.side_to_base if b is not None]
        return all(x < y for x, y in pairwise(order))


def match_entries(base: Sequence[str], side: Sequence[str]) -> Matching:
    """Match a side's (unique) entries to the base's: equal texts first, then the most similar
    unmatched pairs, greedily from the highest ratio (ties: nearest position, then file order)."""
    base_index = {text: i for i, text in enumerate(base)}
    side_to_base: list[int | None] = [base_index.get(text) for text in side]
    base_to_side = {b: j for j, b in enumerate(side_to_base) if b is not None}
    free_base = [i for i in range(len(base)) if i not in base_to_side]
    free_side = [j for j, b in enumerate(side_to_base) if b is None]
    for i, j in _similar_pairs(base, side, free_base, free_side):
        side_to_base[j] = i
        base_to_side[i] = j
    return Matching(tuple(side_to_base), base_to_side)


def _similar_pairs(
    base: Sequence[str], side: Sequence[str], free_base: list[int], free_side: list[int]
) -> list[tuple[int, int]]:
    if not free_base or not free_side:
        return []
    candidates: list[tuple[float, int, int, int]] = []
    ratios_left, work_left, looks_left = _MAX_RATIOS, _WORK_BUDGET, _MAX_LOOKS
    counts: dict[int, Counter[str]] = {}
    matcher = SequenceMatcher(None, autojunk=False)
    for j in free_side:
        if ratios_left <= 0 or work_left <= 0 or looks_left <= 0:
            break
        b_text = _compared(side[j])
        b_counts = Counter(b_text)
        seq2_set = False
        nearest = _nearest(free_base, j, _NEAREST)
        looks_left -= len(nearest)
        for i in nearest:
            a_text = _compared(base[i])
            a_len, b_len = len(a_text), len(b_text)
            if 2 * min(a_len, b_len) < SIMILARITY_CUTOFF * (a_len + b_len):
                continue  # real_quick_ratio: the lengths alone rule it out
            a_counts = counts.get(i)
            if a_counts is None:
                a_counts = counts[i] = Counter(a_text)
            common = sum(min(n, b_counts[ch]) for ch, n in a_counts.items())
            if 2 * common < SIMILARITY_CUTOFF * (a_len + b_len):
                continue  # quick_ratio: the characters alone rule it out
            work = sum(n * b_counts[ch] for ch, n in a_counts.items())
            if ratios_left <= 0:
                break
            if work > work_left:
                continue
            ratios_left -= 1
            work_left -= work
            if not seq2_set:
                matcher.set_seq2(b_text)  # difflib caches what it learns about seq2
                seq2_set = True
            matcher.set_seq1(a_text)
            ratio = matcher.ratio()
            if ratio >= SIMILARITY_CUTOFF:
                candidates.append((-ratio, abs(i - j), i, j))
    candidates.sort()
    used_base: set[int] = set()
    used_side: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for _, _, i, j in candidates:
        if i not in used_base and j not in used_side:
            used_base.add(i)
            used_side.add(j)
            pairs.append((i, j))
    return pairs


def _compared(text: str) -> str:
    """What the pairing compares of an entry: all of it, or the head and tail of a long one (an
    edit of a long entry usually leaves most of both)."""
    return text if len(text) <= 2 * _WINDOW else text[:_WINDOW] + text[-_WINDOW:]


def _nearest(ordered: list[int], j: int, count: int) -> list[int]:
    """The `count` values of the sorted list `ordered` closest to `j` (a window around it)."""
    at = bisect_left(ordered, j)
    return ordered[max(0, at - count // 2) : at + count - count // 2]


@dataclass(frozen=True, slots=True)
class _Slot:
    text: str
    base: int | None  # the base entry it derives from; None for an addition
    side: Side


def merge_entries(base: Iterable[str], ours: Iterable[str], theirs: Iterable[str]) -> Merged:
    """Merge three versions of a memory file's entries (see the module docstring for the rules).

    Order: the result follows ours, with theirs' contributions placed after the entry that precedes
    them in theirs (after ours' own additions at that spot). When only theirs reordered the shared
    entries, theirs' order is followed instead, so `merge(b, b, t) == t` and `merge(b, x, x) == x`.
    """
    b_list, o_list, t_list = _unique(base), _unique(ours), _unique(theirs)
    o_match, t_match = match_entries(b_list, o_list), match_entries(b_list, t_list)
    o_match, t_match = (
        _pair_leftovers(b_list, o_list, o_match, t_list, t_match),
        _pair_leftovers(b_list, t_list, t_match, o_list, o_match),
    )
    sides = {Side.OURS: (o_list, o_match), Side.THEIRS: (t_list, t_match)}
    only_theirs_reordered = (
        sides[Side.OURS][1].keeps_order() and not sides[Side.THEIRS][1].keeps_order()
    )
    primary = Side.THEIRS if only_theirs_reordered else Side.OURS
    other = Side.THEIRS if primary is Side.OURS else Side.OURS
    both_changed: list[tuple[str, str]] = []
    kept_over_removal: list[str] = []

    def version(side: Side, b: int) -> str | None:
        entries, matching = sides[side]
        j = matching.base_to_side.get(b)
        return None if j is None else entries[j]

    def versions(b: int) -> list[_Slot]:
        """What base entry `b` becomes; called once per base entry."""
        text = b_list[b]
        o, t = version(Side.OURS, b), version(Side.THEIRS, b)
        if o == text:  # unchanged by ours: theirs decides (kept, changed or removed)
            return [] if t is None else [_Slot(t, b, Side.THEIRS)]
        if t == text:
            return [] if o is None else [_Slot(o, b, Side.OURS)]
        if o is None and t is None:  # removed on both sides
            return []
        if o is None or t is None:  # changed on one side, removed on the other: keep the change
            kept, side = (o, Side.OURS) if o is not None else (t, Side.THEIRS)
            assert kept is not None
            kept_over_removal.append(kept)
            return [_Slot(kept, b, side)]
        if o == t:
            return [_Slot(o, b, Side.OURS)]
        both_changed.append((o, t))
        return [_Slot(o, b, Side.OURS), _Slot(t, b, Side.THEIRS)]

    # 1. Walk the primary side: its entries, each base entry as the rules make it.
    slots: list[_Slot] = []
    present: set[str] = set()
    pos_by_base: dict[int, int] = {}
    pos_by_text: dict[str, int] = {}
    p_entries, p_match = sides[primary]
    for j, text in enumerate(p_entries):
        b = p_match.side_to_base[j]
        for slot in [_Slot(text, None, primary)] if b is None else versions(b):
            if slot.text in present:
                continue
            present.add(slot.text)
            pos_by_text[slot.text] = len(slots)
            if slot.base is not None:
                pos_by_base[slot.base] = len(slots)
            slots.append(slot)

    # 2. The other side's contributions, each after the nearest entry before it (in that side's
    #    file) that the result already holds; consecutive ones stay together in their order, and
    #    those after the last such entry (appended, as the store's `add` does) go to the end.
    q_entries, q_match = sides[other]

    def held_at(k: int) -> int | None:
        b = q_match.side_to_base[k]
        found = [
            p
            for p in (pos_by_base.get(b) if b is not None else None, pos_by_text.get(q_entries[k]))
            if p is not None
        ]
        return max(found) if found else None

    held = [held_at(k) for k in range(len(q_entries))]
    last_held = max((k for k, p in enumerate(held) if p is not None), default=-1)
    end = len(slots) - 1
    inserts: dict[int, list[_Slot]] = {}
    anchor = -1
    for k, text in enumerate(q_entries):
        position = held[k]
        if position is not None:
            anchor = position
            continue
        b = q_match.side_to_base[k]
        if b is None:
            new = [_Slot(text, None, other)]
        elif b in p_match.base_to_side:
            new = []  # placed by the walk (and merged away)
        else:
            new = versions(b)
        for slot in new:
            if slot.text not in present:
                present.add(slot.text)
                inserts.setdefault(end if k > last_held else anchor, []).append(slot)

    # 3. Interleave: at one spot, ours' additions come before theirs'.
    out: list[str] = []
    pending = [slot.text for slot in inserts.get(-1, [])]
    for i, slot in enumerate(slots):
        ours_addition = slot.base is None and slot.side is Side.OURS
        if pending and not (other is Side.THEIRS and ours_addition):
            out += pending
            pending = []
        out.append(slot.text)
        pending += [s.text for s in inserts.get(i, [])]
    out += pending
    return Merged(tuple(out), tuple(both_changed), tuple(kept_over_removal))


def pair_additions(
    merged: Merged, base: Iterable[str], ours: Iterable[str], theirs: Iterable[str]
) -> Merged:
    """`merged` (of these three versions) with the entries only ours added and only theirs added
    that look like two versions of one entry (paired by the pairing's own rule and bounds, then
    at least `UNBASED_CUTOFF` alike and sharing a word of four or more letters) placed next to each other, theirs right after
    ours, and reported in `both_changed`.

    For a git conflict block written without its base (git's default conflict style): what both
    sides had there is unknown, so an entry both sides edited reads as two additions, and the
    similarity of the two is the only sign that they are one entry. The entries are the same
    either way; only their order and the report change."""
    b_set = set(_unique(base))
    o_list, t_list = _unique(ours), _unique(theirs)
    o_set, t_set = set(o_list), set(t_list)
    ours_added = [e for e in o_list if e not in b_set and e not in t_set]
    theirs_added = [e for e in t_list if e not in b_set and e not in o_set]
    if not ours_added or not theirs_added:
        return merged
    match = match_entries(ours_added, theirs_added)
    after = {
        ours_added[i]: theirs_added[j] for j, i in enumerate(match.side_to_base) if i is not None
    }
    present = set(merged.entries)
    after = {  # similar and sharing a word: "ours new" and "theirs new" are not one entry
        o: t
        for o, t in after.items()
        if o in present and t in present and _share_a_word(o, t) and _close(o, t)
    }
    if not after:
        return merged
    moved = set(after.values())
    out: list[str] = []
    for entry in merged.entries:
        if entry in moved:
            continue
        out.append(entry)
        if entry in after:
            out.append(after[entry])
    pairs = tuple((o, t) for o, t in after.items())
    return Merged(tuple(out), merged.both_changed + pairs, merged.kept_over_removal)


def merge_texts(base: str, ours: str, theirs: str) -> Merged:
    """Merge three memory-file texts (any shape a hand edit left them in: CRLF, a BOM, padded `§`)."""
    return merge_entries(*(parse(text).stored_texts for text in (base, ours, theirs)))


def _pair_leftovers(
    base: Sequence[str],
    side: Sequence[str],
    matching: Matching,
    other: Sequence[str],
    other_matching: Matching,
) -> Matching:
    """`matching` with a second chance for the base entries it left unpaired that the other side
    did not keep as they were (it changed them, or has no match either): each is paired with a
    new entry of this side that stands in its place (between the side's versions of the base
    entries around it) and shares a word of four or more letters with it or with the other side's
    version. Deterministic and bounded (`_LEFTOVER_NEAREST` candidates per entry, `_LEFTOVER_LOOKS`
    per side); the pairs keep the base's order, so a side that kept its order still does."""
    side_to_base = list(matching.side_to_base)
    base_to_side = dict(matching.base_to_side)
    matched = sorted(base_to_side)  # base entries this side has, in base order
    words: dict[str, frozenset[str]] = {}

    def words_of(text: str) -> frozenset[str]:
        found = words.get(text)
        if found is None:
            found = words[text] = frozenset(_WORD.findall(_compared(text).casefold()))
        return found

    looks = _LEFTOVER_LOOKS
    floor = -1  # the side position of the last pair made (pairs keep the base's order)
    for b in range(len(base)):
        if looks <= 0:
            break
        if b in base_to_side:
            continue
        o = other_matching.base_to_side.get(b)
        if o is not None and other[o] == base[b]:
            continue  # the other side kept it as it was: this side removed or rewrote it
        at = bisect_left(matched, b)
        low = base_to_side[matched[at - 1]] if at > 0 else -1
        high = base_to_side[matched[at]] if at < len(matched) else len(side)
        low = max(low, floor)
        if high <= low:
            continue  # this side reordered around it: no place to look in
        wanted = words_of(base[b]) | (words_of(other[o]) if o is not None else frozenset())
        if not wanted:
            continue
        best: tuple[int, int] | None = None  # (shared words, -position)
        seen = 0
        for j in range(low + 1, high):
            if seen >= _LEFTOVER_NEAREST or looks <= 0:
                break
            if side_to_base[j] is not None:
                continue
            seen += 1
            looks -= 1
            shared = len(wanted & words_of(side[j]))
            if shared and (best is None or shared > best[0]):
                best = (shared, j)
        if best is not None:
            j = best[1]
            side_to_base[j] = b
            base_to_side[b] = j
            floor = j
    if base_to_side == matching.base_to_side:
        return matching
    return Matching(tuple(side_to_base), base_to_side)


def _close(a: str, b: str) -> bool:
    """Similar enough to be taken for one entry without a base (`UNBASED_CUTOFF`), within the
    pairing's work bound (past it: not paired)."""
    x, y = _compared(a), _compared(b)
    counts = Counter(x)
    if sum(n * counts[ch] for ch, n in Counter(y).items()) > _WORK_BUDGET:
        return False
    return SequenceMatcher(None, x, y, autojunk=False).ratio() >= UNBASED_CUTOFF


def _share_a_word(a: str, b: str) -> bool:
    words = set(_WORD.findall(_compared(a).casefold()))
    return not words.isdisjoint(_WORD.findall(_compared(b).casefold()))


def _unique(entries: Iterable[str]) -> list[str]:
    """Normalised, non-empty, first copy of each: the entries as the store keeps them."""
    return list(dict.fromkeys(e for e in (normalize_entry(x) for x in entries) if e))
