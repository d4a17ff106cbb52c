"""The windowed re-parse of big buffers gives exactly what a full `parse()` gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from my_agent_core.memory.document import parse, reparse

PIECES = [
    "a",
    "b",
    " ",
    "§",
    "\n",
    "\r\n",
    "\r",
    "\n§\n",
    "\n §\n",
    "\n§§\n",
    "\ufeff",
    "\t",
    "😀",
    "x §",
]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


@given(texts, st.floats(0, 1), st.floats(0, 1), texts)
@settings(max_examples=3000, deadline=None)
def test_reparse_equals_a_full_parse(text: str, a: float, b: float, insert: str) -> None:
    start, end = sorted((int(a * len(text)), int(b * len(text))))
    expected = parse(text[:start] + insert + text[end:])
    got = reparse(parse(text), start, end, insert)
    if got is not None:
        assert got == expected


@given(texts, st.floats(0, 1), st.integers(0, 3), texts)
@settings(max_examples=3000, deadline=None)
def test_reparse_of_typing_sized_edits(text: str, a: float, length: int, insert: str) -> None:
    start = int(a * len(text))
    end = min(len(text), start + length)
    expected = parse(text[:start] + insert + text[end:])
    got = reparse(parse(text), start, end, insert)
    if got is not None:
        assert got == expected


def test_reparse_is_used_between_delimiters() -> None:
    text = "one\n§\ntwo\n§\nthree\n§\nfour\n"
    start = text.index("three")
    got = reparse(parse(text), start, start + 5, "3\n§\nthree and a half")
    assert got == parse(text[:start] + "3\n§\nthree and a half" + text[start + 5 :])
    assert got is not None and [e.text for e in got.entries][2:4] == ["3", "three and a half"]
