"""Robustness: random text and random incremental edits never break the document features.

Hypothesis drives a real server through a client whose event loop runs in a thread, so the tests are
plain functions and failing cases shrink. After the edits, the server's view of the buffer must equal
the client's (formatting and diagnostics computed from our own copy of the text agree), and every
document feature must still answer.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from conftest import apply_lsp_edits, start_server, stop_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from my_agent_core.memory.document import parse, serialize
from my_agent_core.memory.lint import lint

T = TypeVar("T")
_ids = itertools.count()

# Delimiters, blanks, all three line breaks, astral (emoji), CJK, invisibles, and separators that
# str.splitlines() treats as line breaks but LSP does not.
ALPHABET = [*"ab§ \t\n\r", "\r\n", "😀", "用", "\u200b", "\u2028", "\x0b", "\x85", "\ufeff"]
texts = st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join)


class ThreadClient:
    """A pytest-lsp client living on an event loop in a background thread."""

    def __init__(self, folder: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = self.run(start_server([folder], pull=True))

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.run(stop_server(self.client))
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


@pytest.fixture(scope="module")
def tc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadClient]:
    c = ThreadClient(tmp_path_factory.mktemp("robust"))
    yield c
    c.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("docs")


def line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]


def utf16_position(text: str, offset: int) -> types.Position:
    """Oracle: the LSP position of a code-point offset (LSP line breaks only)."""
    starts = line_starts(text)
    line = max(i for i, s in enumerate(starts) if s <= offset)
    chunk = text[starts[line] : offset]
    return types.Position(line, len(chunk.encode("utf-16-le", "surrogatepass")) // 2)


def safe_offset(text: str, offset: int) -> int:
    """Positions cannot point between the \\r and \\n of a CRLF: step back before it."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


edits = st.lists(
    st.tuples(st.floats(0, 1), st.floats(0, 1), texts, st.booleans()), min_size=1, max_size=6
)


async def drive(
    client: Any, uri: str, initial: str, steps: list[Any]
) -> tuple[str, dict[str, Any]]:
    doc = types.TextDocumentIdentifier(uri=uri)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, initial))
    )
    text = initial
    for version, (a, b, insert, whole) in enumerate(steps, start=2):
        if whole:
            text = insert
            change: Any = types.TextDocumentContentChangeWholeDocument(text=insert)
        else:
            start = safe_offset(text, int(a * len(text)))
            end = safe_offset(text, int(b * len(text)))
            start, end = min(start, end), max(start, end)
            rng = types.Range(utf16_position(text, start), utf16_position(text, end))
            text = text[:start] + insert + text[end:]
            change = types.TextDocumentContentChangePartial(range=rng, text=insert)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[change],
            )
        )
    end_pos = utf16_position(text, len(text))
    everything = types.Range(types.Position(0, 0), end_pos)
    answers = {
        "diagnostics": await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=doc)
        ),
        "formatting": await client.text_document_formatting_async(
            types.DocumentFormattingParams(doc, types.FormattingOptions(4, True))
        ),
        "hover": await client.text_document_hover_async(types.HoverParams(doc, end_pos)),
        "hover0": await client.text_document_hover_async(
            types.HoverParams(doc, types.Position(0, 0))
        ),
        "symbols": await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(doc)
        ),
        "folding": await client.text_document_folding_range_async(types.FoldingRangeParams(doc)),
        "lens": await client.text_document_code_lens_async(types.CodeLensParams(doc)),
        "actions": await client.text_document_code_action_async(
            types.CodeActionParams(doc, everything, types.CodeActionContext(diagnostics=[]))
        ),
    }
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc))
    return text, answers


@given(initial=texts, steps=edits)
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_random_edits_keep_the_server_in_sync_and_answering(
    tc: ThreadClient, base: Path, initial: str, steps: list[Any]
) -> None:
    uri = (base / f"ws{next(_ids)}" / ".my_agent_core" / "memory" / "MEMORY.md").as_uri()
    text, answers = tc.run(drive(tc.client, uri, initial, steps))
    expected_codes = [f.code for f in lint(parse(text), limit=2200)]
    assert [d.code for d in answers["diagnostics"].items] == expected_codes
    formatted = apply_lsp_edits(text, answers["formatting"] or [])
    assert formatted == serialize(parse(text).entry_texts)
    assert len(answers["symbols"] or []) == len(parse(text).entries)
    assert all(s.name.strip() for s in answers["symbols"] or [])
    assert len(answers["lens"]) == 1
    for action in answers["actions"] or []:
        # the one action that carries a command (lsprotocol reads it as a Command here): promote
        promote = isinstance(action, types.Command) and "myAgent.memory.promote" in action.command
        assert isinstance(action, types.CodeAction) or promote
