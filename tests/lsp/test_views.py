"""Hover, code lens, document symbols, folding ranges and formatting, end to end."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from conftest import (
    apply_lsp_edits,
    make_folder,
    memory_path,
    request,
    start_server,
    stop_server,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

_ids = itertools.count()
DISK = "uses uv for envs\n§\ntests run with pytest -x\n"


def doc_id(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_folder(tmp_path_factory.mktemp("views"), "ws", memory=DISK, user="")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(folder: Path) -> AsyncIterator[LanguageClient]:
    env = {
        "MY_AGENT_MODEL": "test-model",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    c = await start_server([folder], pull=True, env=env)
    yield c
    await stop_server(c)


def open_doc(client: LanguageClient, tmp: Path, text: str, target: str = "memory") -> str:
    name = "MEMORY.md" if target == "memory" else "USER.md"
    uri = (tmp / f"ws{next(_ids)}" / ".my_agent_core" / "memory" / name).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
    )
    return uri


async def hover(client: LanguageClient, uri: str, line: int, char: int) -> types.Hover | None:
    return await client.text_document_hover_async(
        types.HoverParams(text_document=doc_id(uri), position=types.Position(line, char))
    )


# --- hover -----------------------------------------------------------------------------------


async def test_hover_shows_size_share_and_shortest_old_text(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "use pytest for tests\n§\nuse vitest for tests\n§\ndeploy with uv\n"
    uri = open_doc(client, tmp_path, text)
    result = await hover(client, uri, 0, 3)
    assert result is not None
    value = result.contents.value
    assert result.contents.kind == types.MarkupKind.Markdown
    assert "**Entry 1 of 3**" in value
    assert "20 chars" in value
    assert "0.9% of the 2,200-char memory budget" in value
    assert "Shortest unique `old_text`: `py`" in value  # "p" is also in "deploy"
    assert "no open chat session" in value
    assert result.range == types.Range(types.Position(0, 0), types.Position(0, 20))


async def test_hover_on_contained_entry_and_on_delimiter(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "abc\n§\nabcd\n§\nabc\n"
    uri = open_doc(client, tmp_path, text)
    value = (await hover(client, uri, 0, 1)).contents.value
    assert "only the entry's full text" in value
    value = (await hover(client, uri, 4, 0)).contents.value
    assert "Duplicate of entry 1" in value
    assert await hover(client, uri, 1, 0) is None


async def test_hover_user_budget_and_cjk(client: LanguageClient, tmp_path: Path) -> None:
    uri = open_doc(client, tmp_path, "用户偏好中文回答\n", target="user")
    value = (await hover(client, uri, 0, 2)).contents.value
    assert "8 chars" in value and "of the 1,375-char user budget" in value


async def test_hover_tells_whether_the_entry_is_in_the_frozen_snapshot(
    client: LanguageClient, folder: Path
) -> None:
    started = await request(client, "myAgent/chat/start", {"folder": folder.as_uri()})
    session = started["sessionId"]
    try:
        uri = memory_path(folder).as_uri()
        text = DISK + "§\nadded after the session started\n"
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
        )
        inside = (await hover(client, uri, 0, 0)).contents.value
        assert "in the snapshot of the 1 open chat session" in inside
        outside = (await hover(client, uri, 4, 0)).contents.value
        assert "**not** in the snapshot" in outside and session in outside
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc_id(uri)))
    finally:
        await request(client, "myAgent/chat/end", {"sessionId": session})


# --- code lens, symbols, folding -------------------------------------------------------------


async def test_code_lens_shows_usage(client: LanguageClient, tmp_path: Path) -> None:
    entries = ["x" * 1000, "y" * 837]  # 1000 + 3 + 837 = 1840
    uri = open_doc(client, tmp_path, "\n§\n".join(entries) + "\n")
    [lens] = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=doc_id(uri))
    )
    assert lens.command.title == "1,840 / 2,200 chars · 84%"
    assert lens.range.start == types.Position(0, 0)
    over = open_doc(client, tmp_path, "z" * 1400 + "\n", target="user")
    [lens] = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=doc_id(over))
    )
    assert lens.command.title == "1,400 / 1,375 chars · 102% · over budget"


async def test_document_symbols_one_per_entry_never_empty(
    client: LanguageClient, tmp_path: Path
) -> None:
    long_line = "a very long first line " * 6
    text = f"short\n§\n{long_line.strip()}\nsecond line\n§\n\u200b\n§\n🎉 party\n"
    uri = open_doc(client, tmp_path, text)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc_id(uri))
    )
    names = [s.name for s in symbols]
    assert len(names) == 4
    assert names[0] == "short"
    assert names[1].endswith("…") and len(names[1]) <= 60
    assert all(n.strip() for n in names)
    assert names[3] == "🎉 party"
    assert symbols[1].range == types.Range(types.Position(2, 0), types.Position(3, 11))
    assert symbols[1].selection_range.end.line == 2
    assert symbols[3].range.end == types.Position(7, 8)  # UTF-16: the emoji counts 2


async def test_folding_ranges_for_multi_line_entries(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "one\n§\ntwo\nlines\n§\nthree\nmore\nlines\n"
    uri = open_doc(client, tmp_path, text)
    ranges = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=doc_id(uri))
    )
    assert [(r.start_line, r.end_line) for r in ranges] == [(2, 3), (5, 7)]


# --- formatting ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\n §\n\n  b  \n\n§§\nc", "a\n§\nb\n§\nc\n"),
        ("\ufeffa\r\n§\r\nb\r\n", "a\n§\nb\n"),
        ("§\na\n§\n§\n", "a\n"),
        ("🎉 a  \n§\n🎉 b", "🎉 a\n§\n🎉 b\n"),
        ("multi\n  line\n§\nentry\n\n\n", "multi\n  line\n§\nentry\n"),
    ],
)
async def test_formatting_canonicalizes(
    client: LanguageClient, tmp_path: Path, text: str, expected: str
) -> None:
    uri = open_doc(client, tmp_path, text)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc_id(uri),
            options=types.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert apply_lsp_edits(text, edits) == expected


async def test_formatting_a_canonical_file_changes_nothing(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = open_doc(client, tmp_path, "a\n§\nb\n")
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(
            text_document=doc_id(uri),
            options=types.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )
    assert not edits


async def test_views_ignore_files_that_are_not_memory_files(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = (tmp_path / "README.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, "a\n§\na\n"))
    )
    assert await hover(client, uri, 0, 0) is None
    assert not await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=doc_id(uri))
    )
    assert not await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=doc_id(uri))
    )
