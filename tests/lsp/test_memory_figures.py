"""One figure: `myAgent/memory/buffer` gives an open memory file's figure as the editor holds it
(unsaved edits included), the same one its code lens and over-budget diagnostic show, while
`myAgent/memory/state` keeps the disk's. The editor shows the buffer's while the file has unsaved
edits, labelled, and the disk's otherwise (client/src/memoryFigures.ts)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import DELIM, make_folder, memory_path, request, start_server, stop_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

ON_DISK = (
    "uses uv" + DELIM + "tests run with pytest\n"
)  # 7 + 3 + 21 = 31 chars; + 3 + 2,366 = 2,400


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_folder(tmp_path_factory.mktemp("figures"), "ws", memory=ON_DISK, user="")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(folder: Path) -> AsyncIterator[Any]:
    c = await start_server([folder], pull=True)
    yield c
    await stop_server(c)


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def lens_figure(client: Any, uri: str) -> tuple[int, int]:
    [lens] = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=doc(uri))
    )
    used, limit = re.findall(r"[\d,]+", lens.command.title)[:2]
    return int(used.replace(",", "")), int(limit.replace(",", ""))


async def over_budget_figure(client: Any, uri: str) -> tuple[int, int] | None:
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=doc(uri))
    )
    for d in report.items:
        if d.code == "over-budget":
            used, limit = re.search(r"(\d+)/(\d+) chars", d.message).groups()  # type: ignore[union-attr]
            return int(used), int(limit)
    return None


async def disk_figure(client: Any, folder: Path) -> tuple[int, int]:
    state = await request(client, "myAgent/memory/state", {"folder": folder.as_uri()})
    store = state["stores"][0]
    return store["used"], store["limit"]


async def test_the_buffer_figure_is_the_one_the_lens_and_diagnostics_show(
    client: Any, folder: Path
) -> None:
    uri = memory_path(folder).as_uri()
    # Unsaved: the file on disk holds 31 chars, the editor 2,400 (over the 2,200 budget).
    unsaved = ON_DISK + "§\n" + "x" * 2366 + "\n"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, unsaved))
    )
    buffer = await request(client, "myAgent/memory/buffer", {"uri": uri})
    assert buffer == {"uri": uri, "version": 1, "target": "memory", "used": 2400, "limit": 2200}
    assert await lens_figure(client, uri) == (2400, 2200)
    assert await over_budget_figure(client, uri) == (2400, 2200)
    assert await disk_figure(client, folder) == (31, 2200)  # the disk is another figure

    # Typing changes the buffer's figure and version, and the lens follows the same number.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(4, 0), types.Position(4, 300)), text=""
                )
            ],
        )
    )
    buffer = await request(client, "myAgent/memory/buffer", {"uri": uri})
    assert (buffer["version"], buffer["used"]) == (2, 2100)
    assert await lens_figure(client, uri) == (2100, 2200)
    assert await over_budget_figure(client, uri) is None

    # A repeated entry counts once, in the buffer's figure as in the store's.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text=ON_DISK + "§\nuses uv\n")
            ],
        )
    )
    buffer = await request(client, "myAgent/memory/buffer", {"uri": uri})
    assert (buffer["version"], buffer["used"]) == (3, 31)
    assert await lens_figure(client, uri) == (31, 2200) == await disk_figure(client, folder)

    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(uri)))
    assert await request(client, "myAgent/memory/buffer", {"uri": uri}) is None


async def test_a_file_that_is_not_open_or_not_memory_has_no_buffer_figure(
    client: Any, folder: Path
) -> None:
    assert (
        await request(client, "myAgent/memory/buffer", {"uri": (folder / "USER.md").as_uri()})
        is None
    )
    other = (folder / "notes.md").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(other, "markdown", 1, "hello"))
    )
    assert await request(client, "myAgent/memory/buffer", {"uri": other}) is None


@pytest.mark.parametrize("params", [None, {}, {"uri": 3}, {"uri": ["x"]}, [], "uri"])
async def test_bad_params_are_refused(client: Any, params: Any) -> None:
    with pytest.raises(JsonRpcException) as info:
        await request(client, "myAgent/memory/buffer", params)
    assert info.value.code == -32602
