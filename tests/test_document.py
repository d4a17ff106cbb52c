"""The one parser (`memory.document`): hand-edited shapes, source ranges, and lossless round trips.

The store, the linter and the language server all read this parse, so a file a person left in any shape
must come out with every character accounted for and positions that point at the right text.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from my_agent_core.memory import ENTRY_DELIMITER
from my_agent_core.memory.document import (
    DelimiterKind,
    Pos,
    budget_used,
    normalize_entry,
    parse,
    serialize,
)

# ------------------------------------------------------------------------------------------ basics


def test_delimiter_constant() -> None:
    assert ENTRY_DELIMITER == "\n§\n"


def test_canonical_file_splits_into_multiline_entries() -> None:
    text = "项目构建规范：\n1. 必须使用 uv 管理依赖\n2. 运行 `uv run pytest`\n§\n数据库配置备忘：\n- 端口 5432\n"
    doc = parse(text)
    assert doc.entry_texts == [
        "项目构建规范：\n1. 必须使用 uv 管理依赖\n2. 运行 `uv run pytest`",
        "数据库配置备忘：\n- 端口 5432",
    ]
    assert doc.is_canonical()
    assert [d.kind for d in doc.delimiters] == [DelimiterKind.CANONICAL]
    assert doc.delimiters[0].line == 3
    assert not doc.stray_delimiters and not doc.empty_entries


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n", "\ufeff", "\ufeff\n"])
def test_empty_or_blank_file_has_no_entries(text: str) -> None:
    doc = parse(text)
    assert doc.entry_texts == []
    assert doc.empty_entries == ()


def test_bom_is_skipped_and_marks_the_file_non_canonical() -> None:
    doc = parse("\ufeffalpha\n§\nbeta\n")
    assert doc.entry_texts == ["alpha", "beta"]
    assert doc.has_bom
    assert not doc.is_canonical()


def test_bom_directly_before_a_delimiter_on_the_first_line() -> None:
    doc = parse("\ufeff§\nalpha")
    assert doc.entry_texts == ["alpha"]
    assert len(doc.empty_entries) == 1


def test_crlf_line_ends_are_read_and_normalised() -> None:
    doc = parse("a1\r\na2\r\n§\r\nb\r\n")
    assert doc.entry_texts == ["a1\na2", "b"]
    assert not doc.is_canonical()
    assert doc.delimiters[0].line == 2


def test_lone_cr_line_ends_are_line_breaks() -> None:
    doc = parse("a1\ra2\r§\rb")
    assert doc.entry_texts == ["a1\na2", "b"]
    assert doc.delimiters[0].line == 2


def test_mixed_line_ends() -> None:
    doc = parse("a\r\n§\nb\r§\r\nc\n")
    assert doc.entry_texts == ["a", "b", "c"]


@pytest.mark.parametrize("text", ["a\n§\nb", "a\n§\nb\n"])
def test_missing_or_single_trailing_newline_is_canonical(text: str) -> None:
    doc = parse(text)
    assert doc.entry_texts == ["a", "b"]
    assert doc.is_canonical()


@pytest.mark.parametrize("text", ["a\n§\nb\n\n", "a\n§\nb\n\n\n\n", "\n\na\n§\nb\n", "a \n§\nb"])
def test_extra_blank_space_is_read_but_not_canonical(text: str) -> None:
    doc = parse(text)
    assert doc.entry_texts == ["a", "b"]
    assert not doc.is_canonical()


@pytest.mark.parametrize("line", ["  §", "§  ", "\t§\t", " § "])
def test_padded_delimiter_still_splits(line: str) -> None:
    doc = parse(f"a\n{line}\nb\n")
    assert doc.entry_texts == ["a", "b"]
    assert [d.kind for d in doc.delimiters] == [DelimiterKind.PADDED]
    assert not doc.is_canonical()


@pytest.mark.parametrize("line", ["§§", "§ §", "§§§", " §§ "])
def test_repeated_delimiter_is_one_split(line: str) -> None:
    doc = parse(f"a\n{line}\nb\n")
    assert doc.entry_texts == ["a", "b"]
    assert [d.kind for d in doc.delimiters] == [DelimiterKind.REPEATED]


@pytest.mark.parametrize(
    ("text", "entries", "empties"),
    [
        ("a\n§\n§\nb\n", ["a", "b"], 1),
        ("a\n§\n\n  \n§\nb\n", ["a", "b"], 1),
        ("§\na\n", ["a"], 1),
        ("a\n§\n", ["a"], 1),
        ("a\n§", ["a"], 1),
        ("§\n", [], 1),
        ("§\n§\n§\n", [], 1),
        ("a\n§\n§\n§\nb", ["a", "b"], 1),
    ],
)
def test_empty_entries_are_reported_not_kept(text: str, entries: list[str], empties: int) -> None:
    doc = parse(text)
    assert doc.entry_texts == entries
    assert len(doc.empty_entries) >= empties
    assert not doc.is_canonical()


@pytest.mark.parametrize(
    ("text", "at_edge"),
    [
        ("see §3.2 of the spec for the rule", False),
        ("alpha §\nbeta", True),
        ("alpha\n§ beta", True),
        ("§alpha", True),
    ],
)
def test_stray_section_sign_does_not_split(text: str, at_edge: bool) -> None:
    doc = parse(text)
    assert len(doc.entries) == 1
    assert doc.entry_texts == [normalize_entry(text)]
    assert len(doc.stray_delimiters) == 1
    stray = doc.stray_delimiters[0]
    assert stray.at_edge is at_edge
    line_text = text.splitlines()[stray.line]
    assert line_text[stray.column] == "§"


def test_whitespace_inside_entries_is_kept() -> None:
    entry = "def f():\n    return 1\n\n\n    # indented tail"
    doc = parse(serialize([entry, "b"]))
    assert doc.entry_texts == [entry, "b"]


def test_duplicates_are_kept_by_the_parser_in_file_order() -> None:
    assert parse("b\n§\na\n§\nb\n").entry_texts == ["b", "a", "b"]


def test_normalize_entry() -> None:
    assert normalize_entry("  a\r\nb\rc  \n") == "a\nb\nc"
    assert normalize_entry("\t\n") == ""


def test_serialize_is_delimiter_join_plus_one_newline() -> None:
    assert serialize(["a", "b\nc"]) == "a\n§\nb\nc\n"
    assert serialize(["only"]) == "only\n"
    assert serialize([]) == ""


def test_budget_counts_delimiters_and_code_points() -> None:
    assert budget_used([]) == 0
    assert budget_used(["a"]) == 1
    assert budget_used(["a", "b"]) == 5
    assert budget_used(["中文", "日本語"]) == 2 + 3 + 3
    assert budget_used(["👨‍👩‍👧"]) == 5  # three emoji and two ZWJ: five code points
    assert parse("中文\n§\n日本語\n").used == 8


# ------------------------------------------------------------------------------------------ ranges


def test_entry_ranges_point_at_the_source_text() -> None:
    text = "\ufeff  first line\r\n  second\r\n §  \r\n\r\n中文 entry\n"
    doc = parse(text)
    assert doc.entry_texts == ["first line\n  second", "中文 entry"]
    first, second = doc.entries
    assert text[first.start : first.end] == "first line\r\n  second"
    assert text[second.start : second.end] == "中文 entry"
    assert doc.pos_at(first.start) == Pos(0, 3)
    assert doc.pos_at(second.start) == Pos(4, 0)
    assert doc.pos_at(second.start + 3) == Pos(4, 3)  # columns in code points
    d = doc.delimiters[0]
    assert d.line == 2
    assert text[d.start : d.end].strip() == "§"


def test_pos_at_and_offset_at_are_inverse() -> None:
    text = "ab\r\ncd\n§\n中文\rx"
    doc = parse(text)
    for offset in range(len(text) + 1):
        inside_crlf = offset > 0 and text[offset - 1] == "\r" and text[offset : offset + 1] == "\n"
        if inside_crlf:
            continue
        assert doc.offset_at(doc.pos_at(offset)) == offset, offset


def test_offset_at_clamps() -> None:
    doc = parse("ab\ncd")
    assert doc.offset_at(Pos(0, 99)) == 2
    assert doc.offset_at(Pos(99, 0)) == 5
    assert doc.offset_at(Pos(1, -3)) == 3
    assert doc.pos_at(5) == Pos(1, 2)


def test_entry_at_and_removal_span() -> None:
    text = "a\n§\nbb\n§\nc\n"
    doc = parse(text)
    b = doc.entries[1]
    assert doc.entry_at(b.start) == b
    start, end = doc.removal_span(b)
    assert parse(text[:start] + text[end:]).entry_texts == ["a", "c"]
    start, end = doc.removal_span(doc.entries[2])
    assert parse(text[:start] + text[end:]).entry_texts == ["a", "bb"]


# ------------------------------------------------------------------------------------------ properties

_ALPHABET = st.sampled_from(
    [
        "§",
        "§",
        "a",
        "b",
        "Z",
        "中",
        "é",
        " ",
        "\t",
        "\n",
        "\n",
        "\r",
        "\r\n",
        "\ufeff",
        "\x0b",
        "\u2028",
        "-",
    ]
)
_TEXTS = st.lists(_ALPHABET, max_size=60).map("".join)


def _visible(text: str) -> str:
    """The text without blanks; U+FEFF counts as blank (the parser strips a stray BOM like a space)."""
    return "".join(ch for ch in text if not ch.isspace() and ch != "\ufeff")


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_parse_is_lossless(text: str) -> None:
    """Every non-whitespace character lands in an entry, in order, or is the `§` of a delimiter line."""
    doc = parse(text)
    body_start = 1 if text.startswith("\ufeff") else 0
    outside_delimiters = []
    last = body_start
    for d in doc.delimiters:
        assert d.start >= last
        outside_delimiters.append(text[last : d.start])
        assert set(_visible(text[d.start : d.end])) == {"§"}, repr(text[d.start : d.end])
        last = d.end
    outside_delimiters.append(text[last:])
    assert _visible("".join(outside_delimiters)) == _visible("".join(doc.entry_texts))


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_entry_ranges_match_entry_texts(text: str) -> None:
    doc = parse(text)
    for n, entry in enumerate(doc.entries):
        assert entry.index == n
        assert entry.text
        assert normalize_entry(text[entry.start : entry.end]) == entry.text
        assert entry.segment_start <= entry.start <= entry.end <= entry.segment_end


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_serialize_of_parse_round_trips(text: str) -> None:
    """What the store writes for a parsed file parses back to the same entries (a fixed point)."""
    entries = parse(text).entry_texts
    written = serialize(entries)
    assert parse(written).entry_texts == entries
    assert serialize(parse(written).entry_texts) == written
    assert parse(written).is_canonical()
    assert written == (ENTRY_DELIMITER.join(entries) + "\n" if entries else "")


@pytest.mark.parametrize("text", ["a\n§\u00a0", "a\n\u00a0§\nb", "§\u2028", "x\n§\u3000\n"])
def test_unicode_blank_next_to_a_section_sign_survives_a_rewrite(text: str) -> None:
    """NBSP / ideographic space / U+2028 are stripped from entry edges but do not make a delimiter."""
    entries = parse(text).entry_texts
    assert parse(serialize(entries)).entry_texts == entries


_ENTRY = (
    st.lists(
        st.sampled_from(["a", "b", "中", "§", " ", "\n", "x§y", "-", "é"]), min_size=1, max_size=20
    )
    .map("".join)
    .map(normalize_entry)
    .filter(lambda e: parse(e).entry_texts == [e])
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ENTRY, max_size=8))
def test_serialize_parse_serialize_is_identity(entries: list[str]) -> None:
    written = serialize(entries)
    assert parse(written).entry_texts == entries
    assert serialize(parse(written).entry_texts) == written
    assert parse(written).used == len(ENTRY_DELIMITER.join(dict.fromkeys(entries)))


def test_used_counts_a_repeated_entry_once_like_the_store() -> None:
    doc = parse("alpha\n§\nbeta\n§\nalpha\n")
    assert doc.stored_texts == ["alpha", "beta"]
    assert doc.used == len("alpha\n§\nbeta")
