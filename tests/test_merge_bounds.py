"""The merge driver's pairing of edited entries is bounded: the files that took minutes to hours
(entries of 4,000 characters over two letters, every one edited on both sides) merge at once, and
every entry's text is still kept; a long entry with a small edit still keeps its place.

A hang fails these tests by pytest-timeout; nothing here measures time."""

from __future__ import annotations

import random

import pytest

from my_agent_core.memory.document import serialize
from my_agent_core.memory.merge import merge_entries, merge_texts

pytestmark = pytest.mark.timeout(60)


def hostile(count: int, size: int, seed: int = 3) -> tuple[list[str], list[str], list[str]]:
    rnd = random.Random(seed)
    base = ["".join(rnd.choice("ab") for _ in range(size)) for _ in range(count)]
    return base, [e[:-1] + "O" for e in base], [e[:-1] + "T" for e in base]


@pytest.mark.parametrize(("count", "size"), [(2, 16_000), (8, 4000), (64, 4000), (3200, 80)])
def test_the_worst_pairing_keeps_every_entry(count: int, size: int) -> None:
    base, ours, theirs = hostile(count, size)
    merged = merge_texts(serialize(base), serialize(ours), serialize(theirs))
    assert set(merged.entries) == set(ours) | set(theirs)  # both versions of every edit
    assert not set(merged.entries) & set(base)


def test_a_small_edit_of_a_long_entry_keeps_its_place() -> None:
    words = [
        "run",
        "the",
        "tests",
        "with",
        "pytest",
        "before",
        "pushing",
        "and",
        "keep",
        "the",
        "config",
        "in",
        "app",
        "toml",
    ]
    rnd = random.Random(1)
    long = [" ".join(rnd.choice(words) for _ in range(700)) for _ in range(3)]
    base = ["first fact", *long, "last fact"]
    ours = list(base)
    ours[2] = long[1][:2000] + " (edited)" + long[1][2000:]
    theirs = [*base, "theirs: added"]
    merged = merge_entries(base, ours, theirs)
    assert merged.entries == (*ours, "theirs: added")
