"""Code actions end to end: each quick fix and the fix-all, applied to the text, give the expected file."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from conftest import apply_lsp_edits, start_server, stop_server
from lsprotocol import types
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIX_ALL = "source.fixAll.myAgent"
_ids = itertools.count()


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    assert isinstance(action, types.CodeAction), action  # never a bare Command
    assert action.command is None
    edit = action.edit
    assert edit is not None
    if edit.document_changes:
        [doc_edit] = edit.document_changes
        assert doc_edit.text_document.uri == uri
        return list(doc_edit.edits)
    return list(edit.changes[uri])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LanguageClient]:
    folder = tmp_path_factory.mktemp("actions")
    c = await start_server([folder], pull=True)
    yield c
    await stop_server(c)


async def open_doc(
    client: LanguageClient, tmp: Path, text: str
) -> tuple[str, list[types.Diagnostic]]:
    uri = (tmp / f"ws{next(_ids)}" / ".my_agent_core" / "memory" / "MEMORY.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
    )
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return uri, list(report.items)


async def actions(
    client: LanguageClient,
    uri: str,
    diagnostics: list[types.Diagnostic],
    rng: types.Range | None = None,
    only: list[str] | None = None,
) -> list[Any]:
    if rng is None:
        rng = (
            diagnostics[0].range
            if diagnostics
            else types.Range(types.Position(0, 0), types.Position(0, 0))
        )
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=rng,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )
    return list(result or [])


QUICK_FIXES = [
    ("dup", "a\n§\nb\n§\na\n", "duplicate-entry", "a\n§\nb\n"),
    ("dup-middle", "a\n§\na\n§\nb\n", "duplicate-entry", "a\n§\nb\n"),
    ("padded", "a\n  §  \nb\n", "malformed-delimiter", "a\n§\nb\n"),
    ("repeated", "a\n§§\nb\n", "malformed-delimiter", "a\n§\nb\n"),
    ("glued-end", "a §\nb\n", "malformed-delimiter", "a\n§\nb\n"),
    ("glued-start", "a\n§ b\n", "malformed-delimiter", "a\n§\nb\n"),
    ("empty", "a\n§\n§\nb\n", "empty-entry", "a\n§\nb\n"),
    ("leading", "§\na\n", "empty-entry", "a\n"),
    ("invisible", "a\u200bb\n", "unsafe-content", "ab\n"),
    ("emoji-invisible", "🎉🎉\u2060 party\n", "unsafe-content", "🎉🎉 party\n"),
    ("crlf", "a\r\n§ \r\nb\r\n", "malformed-delimiter", "a\r\n§\r\nb\r\n"),
]


@pytest.mark.parametrize(
    ("name", "text", "code", "expected"), QUICK_FIXES, ids=[q[0] for q in QUICK_FIXES]
)
async def test_preferred_quick_fix_gives_expected_text(
    client: LanguageClient, tmp_path: Path, name: str, text: str, code: str, expected: str
) -> None:
    uri, diags = await open_doc(client, tmp_path, text)
    [diag] = [d for d in diags if d.code == code]
    found = await actions(client, uri, [diag], diag.range, only=[types.CodeActionKind.QuickFix])
    preferred = [a for a in found if a.is_preferred]
    assert len(preferred) == 1
    fix = preferred[0]
    assert fix.kind == types.CodeActionKind.QuickFix
    assert [d.code for d in fix.diagnostics] == [code]
    assert apply_lsp_edits(text, edits_of(fix, uri)) == expected


async def test_prose_section_sign_and_over_budget_have_no_quick_fix(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri, diags = await open_doc(client, tmp_path, "see §3\n")
    assert [d.code for d in diags] == ["malformed-delimiter"]
    assert await actions(client, uri, diags, only=[types.CodeActionKind.QuickFix]) == []


async def test_fix_all_source_action_fixes_everything(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "keep 🎉\n §\nkeep 🎉\n§\n§\nnext §\nlast\u200b one\n§\nsee §3\n"
    uri, diags = await open_doc(client, tmp_path, text)
    found = await actions(client, uri, diags, only=["source.fixAll"])
    [fix_all] = found
    assert fix_all.kind == FIX_ALL
    fixed = apply_lsp_edits(text, edits_of(fix_all, uri))
    assert fixed == "keep 🎉\n§\nnext\n§\nlast one\n§\nsee §3\n"
    # the same request as VS Code's codeActionsOnSave, on the fixed buffer: nothing left to do
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    assert await actions(client, uri, [], only=[FIX_ALL]) == []


async def test_fix_all_of_one_code_and_lightbulb_listing(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "a\n§\nb\n§\na\n§\nb\n§\nc\n"
    uri, diags = await open_doc(client, tmp_path, text)
    assert [d.code for d in diags] == ["duplicate-entry", "duplicate-entry"]
    found = await actions(client, uri, diags[:1])  # no `only`: the lightbulb
    titles = [a.title for a in found]
    assert titles == [
        "Remove this duplicate entry",
        "Fix all duplicate-entry problems",
        "Fix all my-agent problems",
        "Move this entry to AGENTS.md (a rule for the whole team)",  # lsp/promote.py
    ]
    by_title = {a.title: a for a in found}
    assert (
        apply_lsp_edits(text, edits_of(by_title["Fix all duplicate-entry problems"], uri))
        == "a\n§\nb\n§\nc\n"
    )
    assert (
        apply_lsp_edits(text, edits_of(by_title["Remove this duplicate entry"], uri))
        == "a\n§\nb\n§\nb\n§\nc\n"
    )


async def test_actions_without_diagnostics_use_the_range(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "a\n§\n§\nb\n"
    uri, _ = await open_doc(client, tmp_path, text)
    rng = types.Range(types.Position(1, 0), types.Position(1, 0))
    found = await actions(client, uri, [], rng, only=[types.CodeActionKind.QuickFix])
    assert [a.title for a in found] == ["Remove the extra delimiter"]


async def test_quick_fix_after_an_edit_matches_the_current_version(
    client: LanguageClient, tmp_path: Path
) -> None:
    text = "a\n§\na\n"
    uri, _ = await open_doc(client, tmp_path, text)
    new_text = "zz\n§\na\n§\na\n"
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="zz\n§\n"
                )
            ],
        )
    )
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    [diag] = report.items
    found = await actions(client, uri, [diag], only=[types.CodeActionKind.QuickFix])
    [fix] = [a for a in found if a.is_preferred]
    edit = fix.edit.document_changes[0]
    assert edit.text_document.version == 2
    assert apply_lsp_edits(new_text, edit.edits) == "zz\n§\na\n"
    await asyncio.sleep(0)
