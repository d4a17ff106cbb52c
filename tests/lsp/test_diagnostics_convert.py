"""Offsets <-> LSP positions in every position encoding, and the minimal edit between two texts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from my_agent_core.lsp.convert import UTF8, UTF16, UTF32, PositionConverter, minimal_edit
from my_agent_core.memory.document import parse


def P(line: int, char: int) -> types.Position:
    return types.Position(line=line, character=char)


TEXT = "a😀b\r\n用x\rz\n§\n"


@pytest.mark.parametrize(
    ("encoding", "offset", "expected"),
    [
        (UTF16, 1, P(0, 1)),
        (UTF16, 2, P(0, 3)),  # after the emoji: 2 code units
        (UTF16, 3, P(0, 4)),
        (UTF16, 5, P(1, 0)),  # after CRLF
        (UTF16, 7, P(1, 2)),
        (UTF16, 8, P(2, 0)),  # a lone CR breaks the line too
        (UTF8, 2, P(0, 5)),  # 'a' + 4-byte emoji
        (UTF8, 6, P(1, 3)),  # CJK: 3 bytes
        (UTF32, 2, P(0, 2)),
        (UTF32, len(TEXT), P(4, 0)),
    ],
)
def test_position_of_offset(encoding: str, offset: int, expected: types.Position) -> None:
    conv = PositionConverter(parse(TEXT), encoding)
    assert conv.position(offset) == expected
    assert conv.offset(expected) == offset


def test_offsets_clamp_like_lsp() -> None:
    conv = PositionConverter(parse(TEXT), UTF16)
    assert conv.offset(P(0, 99)) == 3  # past the line's end: its end (before the CRLF)
    assert conv.offset(P(0, 2)) == 1  # inside the surrogate pair: rounds down
    assert conv.offset(P(99, 0)) == len(TEXT)


def test_other_unicode_separators_are_not_line_breaks() -> None:
    text = "a\u2028b\x85c\x0bd\ne"
    conv = PositionConverter(parse(text), UTF16)
    assert conv.position(7) == P(0, 7)
    assert conv.position(8) == P(1, 0)


@given(st.text(alphabet=st.sampled_from(list("ab\r\n§😀用\u2028")), max_size=30), st.data())
@settings(max_examples=200, deadline=None)
def test_round_trip_in_every_encoding(text: str, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, len(text)))
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        offset -= 1  # no LSP position between CR and LF
    doc = parse(text)
    for encoding in (UTF8, UTF16, UTF32):
        conv = PositionConverter(doc, encoding)
        assert conv.offset(conv.position(offset)) == offset


@given(
    st.text(alphabet=st.sampled_from(list("ab\r\n")), max_size=20),
    st.text(alphabet=st.sampled_from(list("ab\r\n")), max_size=20),
)
@settings(max_examples=300, deadline=None)
def test_minimal_edit_turns_old_into_new_without_splitting_crlf(old: str, new: str) -> None:
    edit = minimal_edit(old, new)
    if old == new:
        assert edit is None
        return
    assert edit is not None
    start, end, text = edit
    assert old[:start] + text + old[end:] == new
    for cut in (start, end):
        assert not (0 < cut < len(old) and old[cut - 1] == "\r" and old[cut] == "\n")
