"""Diagnostics end to end: push and pull, unsaved buffers, saves, settings, UTF-16 columns."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from conftest import (
    request,
    start_server,
    stop_server,
    utf16_offset,
    vscode_capabilities,
    wait_until,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

from my_agent_core.memory.document import parse
from my_agent_core.memory.lint import lint

pytestmark = pytest.mark.asyncio(loop_scope="module")

_ids = itertools.count()


def new_uri(tmp: Path, target: str = "memory") -> str:
    """A fresh memory-file URI (each test its own folder, so a shared server never mixes them)."""
    name = "MEMORY.md" if target == "memory" else "USER.md"
    return (tmp / f"ws{next(_ids)}" / ".my_agent_core" / "memory" / name).as_uri()


def text_at(text: str, rng: types.Range) -> str:
    return text[utf16_offset(text, rng.start) : utf16_offset(text, rng.end)]


def record_pushes(client: LanguageClient) -> None:
    """Log every publishDiagnostics as (uri, version, params): waiting on the next notification
    races when a server publishes several files back to back."""
    log: list[Any] = []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def publish(params: types.PublishDiagnosticsParams) -> None:
        log.append(params)
        original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    client.pushes = log  # type: ignore[attr-defined]


async def push_open(client: LanguageClient, uri: str, text: str, version: int = 1) -> Any:
    """didOpen and wait for the pushed diagnostics of that uri."""
    mark = len(client.pushes)  # type: ignore[attr-defined]
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="markdown", version=version, text=text)
        )
    )
    return await wait_push(client, uri, version, mark)


async def wait_push(
    client: LanguageClient, uri: str, version: int | None = None, mark: int = 0
) -> Any:
    """The first push for `uri` (and `version`) logged after position `mark`."""
    log = client.pushes  # type: ignore[attr-defined]
    for _ in range(1000):
        for params in log[mark:]:
            if params.uri == uri and (version is None or params.version == version):
                return params
        await asyncio.sleep(0.01)
    raise AssertionError(f"no diagnostics pushed for {uri} v{version}")


def mark(client: LanguageClient) -> int:
    return len(client.pushes)  # type: ignore[attr-defined]


def change(client: LanguageClient, uri: str, version: int, changes: list[Any]) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=changes,
        )
    )


def partial(
    l1: int, c1: int, l2: int, c2: int, text: str
) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(l1, c1), types.Position(l2, c2)), text=text
    )


async def pull(client: LanguageClient, uri: str, previous: str | None = None) -> Any:
    return await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous
        )
    )


@pytest.fixture(scope="module")
def push_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("push")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def push(push_folder: Path) -> AsyncIterator[LanguageClient]:
    client = await start_server([push_folder], pull=False)
    record_pushes(client)
    yield client
    await stop_server(client)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def puller(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LanguageClient]:
    folder = tmp_path_factory.mktemp("pull")
    caps = vscode_capabilities(pull=True)
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    client = await start_server([folder], capabilities=caps)
    yield client
    await stop_server(client)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


# --- push ------------------------------------------------------------------------------------


async def test_push_on_open_with_source_codes_severities_and_ranges(
    push: LanguageClient, tmp: Path
) -> None:
    uri = new_uri(tmp)
    text = "uses uv\n§\nuses uv\n §\nsee §3\n"
    params = await push_open(push, uri, text)
    got = [(d.code, d.severity, text_at(text, d.range)) for d in params.diagnostics]
    assert got == [
        ("duplicate-entry", types.DiagnosticSeverity.Warning, "uses uv"),
        ("malformed-delimiter", types.DiagnosticSeverity.Warning, " §"),
        ("malformed-delimiter", types.DiagnosticSeverity.Information, "§"),
    ]
    assert {d.source for d in params.diagnostics} == {"my-agent"}
    dup = params.diagnostics[0]
    assert list(dup.tags) == [types.DiagnosticTag.Unnecessary]
    assert dup.related_information and dup.related_information[0].location.uri == uri
    assert text_at(text, dup.related_information[0].location.range) == "uses uv"


async def test_clean_file_publishes_empty_list_and_other_files_are_ignored(
    push: LanguageClient, tmp: Path
) -> None:
    uri = new_uri(tmp)
    params = await push_open(push, uri, "a\n§\nb\n")
    assert list(params.diagnostics) == []
    other = (tmp / "notes" / "MEMORY.md").as_uri()  # not under .my_agent_core/memory
    push.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(other, "markdown", 1, "a\n§\na\n"))
    )
    marker = new_uri(tmp)
    await push_open(push, marker, "x\n")  # diagnostics are in order: none came for `other`
    assert other not in push.diagnostics


async def test_push_follows_unsaved_changes_incrementally(push: LanguageClient, tmp: Path) -> None:
    uri = new_uri(tmp)
    await push_open(push, uri, "alpha\n§\nbeta\n")
    m = mark(push)
    change(push, uri, 2, [partial(2, 0, 2, 4, "alpha")])  # beta -> alpha: a duplicate
    params = await wait_push(push, uri, None, m)
    assert [d.code for d in params.diagnostics] == ["duplicate-entry"]
    assert params.diagnostics[0].range == types.Range(types.Position(2, 0), types.Position(2, 5))
    m = mark(push)
    change(push, uri, 3, [partial(2, 5, 2, 5, " two"), partial(0, 0, 0, 0, "§ ")])
    params = await wait_push(push, uri, None, m)
    codes = [d.code for d in params.diagnostics]
    assert codes == ["malformed-delimiter"]  # "§ alpha" (glued); "alpha two" is no duplicate
    m = mark(push)
    change(push, uri, 4, [types.TextDocumentContentChangeWholeDocument(text="x\n§\nx\n")])
    params = await wait_push(push, uri, None, m)
    assert [d.code for d in params.diagnostics] == ["duplicate-entry"]


async def test_save_relints_and_close_clears(push: LanguageClient, tmp: Path) -> None:
    uri = new_uri(tmp)
    await push_open(push, uri, "a\n§\na\n")
    m = mark(push)
    push.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [d.code for d in (await wait_push(push, uri, None, m)).diagnostics] == [
        "duplicate-entry"
    ]
    m = mark(push)
    push.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert list((await wait_push(push, uri, None, m)).diagnostics) == []


async def test_utf16_columns_with_emoji(push: LanguageClient, tmp: Path) -> None:
    uri = new_uri(tmp)
    text = "😀😀 ok\n§\n😀😀 ok\n§\n🎉 x\u200by\n"
    params = await push_open(push, uri, text)
    dup, invisible = params.diagnostics
    assert dup.code == "duplicate-entry"
    assert dup.range == types.Range(types.Position(2, 0), types.Position(2, 7))  # 4 + 3 units
    assert invisible.code == "unsafe-content"
    assert invisible.range == types.Range(types.Position(4, 4), types.Position(4, 5))
    # an incremental change placed after the emoji, in UTF-16 columns
    m = mark(push)
    change(push, uri, 2, [partial(4, 4, 4, 5, "")])  # delete the zero-width space
    assert [d.code for d in (await wait_push(push, uri, None, m)).diagnostics] == [
        "duplicate-entry"
    ]
    m = mark(push)
    change(push, uri, 3, [partial(2, 5, 2, 7, "no")])  # "😀😀 ok" -> "😀😀 no"
    assert list((await wait_push(push, uri, None, m)).diagnostics) == []


async def test_cjk_budget_counts_characters(push: LanguageClient, tmp: Path) -> None:
    uri = new_uri(tmp, "user")
    entry = "用户偏好简洁的中文回答" * 125  # 1375 characters: exactly the USER.md budget
    params = await push_open(push, uri, entry + "\n")
    assert [d.code for d in params.diagnostics] == ["near-budget"]
    assert "1375/1375" in params.diagnostics[0].message
    m = mark(push)
    change(push, uri, 2, [partial(0, 0, 0, 0, "我")])
    params = await wait_push(push, uri, None, m)
    assert [d.code for d in params.diagnostics] == ["over-budget"]
    assert params.diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert "1376/1375" in params.diagnostics[0].message


async def test_config_change_relints_open_files(push: LanguageClient, tmp: Path) -> None:
    uri = new_uri(tmp)
    await push_open(push, uri, "x" * 60 + "\n")
    m = mark(push)
    push.set_configuration({"memory": {"memoryCharLimit": 50}}, section="myAgent")
    push.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    params = await wait_push(push, uri, None, m)
    assert [d.code for d in params.diagnostics] == ["over-budget"]
    assert "60/50" in params.diagnostics[0].message
    m = mark(push)
    push.set_configuration(
        {"memory": {"memoryCharLimit": 64, "nearBudgetShare": 0.5}}, section="myAgent"
    )
    push.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    params = await wait_push(push, uri, None, m)
    assert [d.code for d in params.diagnostics] == ["near-budget"]
    push.set_configuration({}, section="myAgent")
    m = mark(push)
    push.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    assert list((await wait_push(push, uri, None, m)).diagnostics) == []


async def test_workspace_copy_stays_exact_for_server_merges(
    push: LanguageClient, push_folder: Path
) -> None:
    """A panel edit is merged into the dirty buffer from pygls' copy of it, which we keep equal to
    our buffer; U+2028 is a line break for `str.splitlines` (pygls) but not for LSP."""
    path = push_folder / ".my_agent_core" / "memory" / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("disk entry\n", encoding="utf-8")
    uri = path.as_uri()
    await push_open(push, uri, "disk entry\n§\nA\u2028B unsaved\n")
    m = mark(push)
    change(push, uri, 2, [partial(2, 4, 2, 4, "!")])
    await wait_push(push, uri, 2, m)
    dirty = "disk entry\n§\nA\u2028B !unsaved\n"
    push.applied_edits.clear()  # type: ignore[attr-defined]
    params = {"folder": push_folder.as_uri(), "target": "memory", "action": "add"}
    await request(push, "myAgent/memory/edit", {**params, "content": "from the panel"})
    await wait_until(lambda: push.applied_edits)  # type: ignore[attr-defined]
    (applied,) = push.applied_edits  # type: ignore[attr-defined]
    edit = applied.edit
    edits = edit.document_changes[0].edits if edit.document_changes else edit.changes[uri]
    merged = dirty
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        merged = (
            merged[: utf16_offset(merged, e.range.start)]
            + e.new_text
            + merged[utf16_offset(merged, e.range.end) :]
        )
    assert merged == dirty + "§\nfrom the panel\n"
    push.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


async def test_big_buffer_edits_match_a_full_lint(push: LanguageClient, tmp: Path) -> None:
    """The buffer re-parses only around an edit: on a big file the result must equal a full lint."""
    uri = new_uri(tmp)
    entries = [f"entry {i}: some durable fact about the project number {i * 7}" for i in range(700)]
    text = "\n§\n".join(entries) + "\n"
    assert len(text) > 40_000
    await push_open(push, uri, text)
    edits = [
        (400, "entry 1: some durable fact about the project number 7"),  # a duplicate
        (300, "x §"),  # a glued delimiter
        (500, "entry 2"),  # contained in another entry
        (1, "§"),  # a delimiter line in place of an entry: an empty entry
    ]
    for version, (index, new_entry) in enumerate(edits, start=2):
        line = index * 2
        old_len = len(text.split("\n")[line])
        lines = text.split("\n")
        lines[line] = new_entry
        text = "\n".join(lines)
        m = mark(push)
        change(push, uri, version, [partial(line, 0, line, old_len, new_entry)])
        params = await wait_push(push, uri, version, m)
        expected = [(f.code, f.start) for f in lint(parse(text), limit=2200)]
        got = [(d.code, utf16_offset(text, d.range.start)) for d in params.diagnostics]
        assert got == expected


# --- pull ------------------------------------------------------------------------------------


async def test_pull_reports_buffer_and_never_pushes(puller: LanguageClient, tmp: Path) -> None:
    uri = new_uri(tmp)
    puller.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, "a\n§\na\n"))
    )
    report = await pull(puller, uri)
    assert report.kind == "full"
    assert [d.code for d in report.items] == ["duplicate-entry"]
    assert report.items[0].source == "my-agent"
    again = await pull(puller, uri, report.result_id)
    assert again.kind == "unchanged" and again.result_id == report.result_id
    change(puller, uri, 2, [partial(2, 0, 2, 1, "b")])
    fresh = await pull(puller, uri, report.result_id)
    assert fresh.kind == "full" and list(fresh.items) == []
    assert uri not in puller.diagnostics


async def test_pull_unknown_document_gives_empty_report(puller: LanguageClient, tmp: Path) -> None:
    report = await pull(puller, new_uri(tmp))
    assert report.kind == "full" and list(report.items) == []


async def test_pull_config_change_asks_the_client_to_refresh(
    puller: LanguageClient, tmp: Path
) -> None:
    uri = new_uri(tmp)
    puller.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, "y" * 40))
    )
    first = await pull(puller, uri)
    assert list(first.items) == []
    before = puller.diagnostic_refresh_count
    puller.set_configuration({"memory": {"memoryCharLimit": 30}}, section="myAgent")
    puller.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(500):
        if puller.diagnostic_refresh_count > before:
            break
        await asyncio.sleep(0.01)
    assert puller.diagnostic_refresh_count > before
    report = await pull(puller, uri, first.result_id)
    assert report.kind == "full" and [d.code for d in report.items] == ["over-budget"]
    puller.set_configuration({}, section="myAgent")
    puller.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
