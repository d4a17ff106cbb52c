"""The workspace rules in the editor: diagnostics of an open memory file follow the workspace
(file watcher events, editor renames, task-file edits) without polling, with quick fixes; pull
clients see them too; a folder the editor does not have open is never walked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import make_folder, memory_path, start_server, stop_server, wait_until

DELIM = "\n§\n"
ENTRIES = DELIM.join(
    [
        "Run scripts/test.sh before pushing",
        "Lint with `make lint`",
        "Prefers short answers",
    ]
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = make_folder(tmp_path, "repo", memory=ENTRIES + "\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "build.sh").write_text("", encoding="utf-8")
    (folder / "Makefile").write_text("test:\n\tpytest\n", encoding="utf-8")
    return folder


@pytest_asyncio.fixture
async def push(repo: Path) -> AsyncIterator[LanguageClient]:
    client = await start_server([repo], pull=False)
    yield client
    await stop_server(client)


def codes(client: LanguageClient, uri: str) -> list[str]:
    return [str(d.code) for d in client.diagnostics.get(uri, [])]


def open_memory(client: LanguageClient, folder: Path, text: str = ENTRIES) -> str:
    uri = memory_path(folder).as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
    )
    return uri


def watched(client: LanguageClient, *changes: tuple[Path, types.FileChangeType]) -> None:
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=path.as_uri(), type=kind) for path, kind in changes]
        )
    )


async def test_diagnostics_follow_the_workspace(push: LanguageClient, repo: Path) -> None:
    uri = open_memory(push, repo)
    await wait_until(lambda: codes(push, uri).count("stale-reference") == 2, timeout=30)
    messages = [d.message for d in push.diagnostics[uri] if d.code == "stale-reference"]
    assert "`scripts/test.sh` does not exist" in messages[0]
    assert "Makefile defines no target `lint`" in messages[1]
    assert all(d.source == "my-agent" for d in push.diagnostics[uri])
    # the file appears: the watcher tells the server, which re-publishes without an edit
    (repo / "scripts" / "test.sh").write_text("", encoding="utf-8")
    watched(push, (repo / "scripts" / "test.sh", types.FileChangeType.Created))
    await wait_until(lambda: codes(push, uri).count("stale-reference") == 1, timeout=30)
    # the Makefile gains the target
    (repo / "Makefile").write_text("test:\n\tpytest\nlint:\n\truff check .\n", encoding="utf-8")
    watched(push, (repo / "Makefile", types.FileChangeType.Changed))
    await wait_until(lambda: "stale-reference" not in codes(push, uri), timeout=30)


async def test_an_editor_rename_offers_the_new_path(push: LanguageClient, repo: Path) -> None:
    text = "Build with scripts/build.sh" + DELIM + "Prefers short answers"
    uri = open_memory(push, repo, text)
    await wait_until(lambda: push.diagnostics.get(uri) is not None, timeout=30)
    (repo / "scripts" / "build.sh").rename(repo / "scripts" / "compile.sh")
    push.workspace_did_rename_files(
        types.RenameFilesParams(
            files=[
                types.FileRename(
                    old_uri=(repo / "scripts" / "build.sh").as_uri(),
                    new_uri=(repo / "scripts" / "compile.sh").as_uri(),
                )
            ]
        )
    )
    await wait_until(lambda: "stale-reference" in codes(push, uri), timeout=30)
    (diag,) = [d for d in push.diagnostics[uri] if d.code == "stale-reference"]
    assert "renamed to `scripts/compile.sh`" in diag.message
    actions = await push.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert titles[:2] == ["Replace with `scripts/compile.sh`", "Remove this entry"]
    replace = next(a for a in actions if isinstance(a, types.CodeAction) and a.is_preferred)
    assert replace.edit is not None
    edits = _edits_of(replace.edit)
    assert [e.new_text for e in edits] == ["scripts/compile.sh"]


def _edits_of(edit: types.WorkspaceEdit) -> list[Any]:
    if edit.document_changes:
        change = edit.document_changes[0]
        assert isinstance(change, types.TextDocumentEdit)
        return list(change.edits)
    assert edit.changes is not None
    return [e for edits in edit.changes.values() for e in edits]


async def test_pull_clients_get_them_too(repo: Path) -> None:
    client = await start_server([repo], pull=True)
    try:
        uri = open_memory(client, repo)
        found: list[str] = []

        async def pulled() -> list[str]:
            report = await client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
            )
            assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
            return [str(d.code) for d in report.items]

        for _ in range(300):
            found = await pulled()
            if found.count("stale-reference") == 2:
                break
            await _sleep(0.05)
        assert found.count("stale-reference") == 2
    finally:
        await stop_server(client)


async def test_the_watcher_covers_the_workspace_once_memory_is_open(
    push: LanguageClient, repo: Path
) -> None:
    def globs() -> list[str]:
        return [
            watcher["globPattern"]  # the client sees the options as plain JSON
            for r in push.registrations  # type: ignore[attr-defined]
            if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
            for watcher in r.register_options["watchers"]
        ]

    await wait_until(lambda: "**/.my_agent_core/memory/*.md" in globs(), timeout=30)
    assert "**/*" not in globs(), "no memory file open yet: the workspace is not watched"
    open_memory(push, repo)
    await wait_until(lambda: "**/*" in globs(), timeout=30)
    assert globs().count("**/*") == 1


async def test_a_folder_the_editor_does_not_have_open_is_not_indexed(
    push: LanguageClient, tmp_path: Path
) -> None:
    other = make_folder(tmp_path, "elsewhere", memory="")
    uri = open_memory(push, other, "Run scripts/none.sh today")
    await wait_until(lambda: "volatile-content" in codes(push, uri), timeout=30)
    await _sleep(0.3)
    assert "stale-reference" not in codes(push, uri)


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)
