"""The editor's re-parse (`reparse` of the edited pieces) gives exactly what a full `parse()` gives,
and it really is what runs: an edit of a big buffer never parses the whole text again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from my_agent_core.lsp.chunked_text import ChunkedText
from my_agent_core.memory import document
from my_agent_core.memory.document import Piece, parse, reparse, retype_piece, split_pieces

PIECES = [
    "a",
    "b",
    "ab c",
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
edits = st.tuples(st.floats(0, 1), st.floats(0, 1), texts)


def chunker(window: str, at_start: bool, at_end: bool) -> list[Piece] | None:
    return reparse(window, at_file_start=at_start, at_file_end=at_end)


def views(pieces: list[Piece]) -> list[tuple[object, ...]]:
    return [p.view() for p in pieces]


@given(texts)
@settings(max_examples=500, deadline=None)
def test_pieces_concatenate_to_the_text_and_parse_alone_as_in_the_file(text: str) -> None:
    pieces = split_pieces(parse(text))
    assert "".join(p.text for p in pieces) == text
    assert [p.index for p in pieces] == list(range(len(pieces)))
    assert all(p.delimiter is not None for p in pieces[:-1]) and pieces[-1].delimiter is None
    for k, piece in enumerate(pieces):
        alone = split_pieces(parse(piece.text, at_file_start=k == 0))
        assert alone[0].view() == piece.view()  # the piece parses on its own as in the file
        assert len(alone) == (1 if k == len(pieces) - 1 else 2)


@given(texts, st.lists(edits, min_size=1, max_size=6))
@settings(max_examples=1500, deadline=None)
def test_edited_pieces_equal_a_fresh_parse(
    text: str, changes: list[tuple[float, float, str]]
) -> None:
    rope = ChunkedText(text, chunker)
    for a, b, insert in changes:
        start, end = sorted((int(a * len(text)), int(b * len(text))))
        rope.replace(start, end, insert)
        text = text[:start] + insert + text[end:]
        assert rope.text == text
        assert views(rope.chunks) == views(split_pieces(parse(text)))
        assert [p.index for p in rope.chunks] == list(range(len(rope.chunks)))


def test_a_window_that_lost_its_closing_delimiter_is_refused() -> None:
    assert reparse("one\n§\n", at_file_start=True, at_file_end=False) is not None
    assert reparse("one\n§ x\n", at_file_start=True, at_file_end=False) is None  # § glued to text
    assert reparse("one\n", at_file_start=False, at_file_end=False) is None
    assert reparse("", at_file_start=False, at_file_end=True) is not None


def test_a_bom_is_the_files_only_at_its_start() -> None:
    [head, _] = split_pieces(parse("\ufeff§\n", at_file_start=True))
    [middle, _] = split_pieces(parse("\ufeff§\n", at_file_start=False))
    assert head.delimiter is not None and head.delimiter.kind.value == "canonical"
    assert middle.delimiter is not None and middle.delimiter.kind.value == "padded"


def test_typing_in_a_big_buffer_parses_only_the_edited_pieces(monkeypatch) -> None:
    entries = [f"entry {i}: the project uses pytest and uv" for i in range(5000)]
    text = "\n§\n".join(entries) + "\n"
    rope = ChunkedText(text, chunker)
    parsed: list[int] = []
    real_parse = document.parse

    def counting_parse(source: str, **kw: bool) -> document.MemoryDocument:
        parsed.append(len(source))
        return real_parse(source, **kw)

    monkeypatch.setattr(document, "parse", counting_parse)
    for offset in (0, 1, len(text) // 2, len(text) - 1):  # the top, the middle, the end
        rope.replace(offset, offset, "x")
        rope.replace(offset, offset + 1, "")
    rope.replace(len(text) // 2, len(text) // 2, "\n§\nnew entry\n§\n")  # two new delimiters
    assert rope.text.count("\n§\n") == 5001
    assert parsed and max(parsed) < 200  # a few entries at a time, never the 230 KB file
    assert len(parsed) <= 12


def test_typing_inside_an_entry_takes_the_shortcut() -> None:
    [piece, tail] = split_pieces(parse("use uv here\n§\n"))
    typed = retype_piece(piece, 4, 4, "pip and ")
    assert (
        typed is not None
        and typed.view() == split_pieces(parse("use pip and uv here\n§\n"))[0].view()
    )
    assert retype_piece(piece, 0, 0, " ") is None  # a blank at the edge: the parser decides
    assert retype_piece(piece, 3, 3, "\n") is None  # a line break: the parser decides
    assert retype_piece(piece, 3, 3, "§") is None
    assert retype_piece(piece, 11, 13, "") is None  # reaches into the delimiter line
    assert retype_piece(tail, 0, 0, "x") is None  # no entry to type into
