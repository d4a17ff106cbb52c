"""`myAgent/memory/undo` after hand edits, through the real server: a change whose entry was edited
by hand is named and passed over (the editor's Undo is never stuck on it), and `id` undoes the
change the user chose on top of the file as it is."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException
from tests.lsp.conftest import DELIM, make_folder, memory_path, request, start_server, stop_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_folder(tmp_path_factory.mktemp("undo"), "ws")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(folder: Path) -> AsyncIterator[Any]:
    c = await start_server([folder])
    yield c
    await stop_server(c)


async def undo(client: Any, folder: Path, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await request(
        client, "myAgent/memory/undo", {"folder": folder.as_uri(), **extra}
    )
    return result


async def test_the_editors_undo_passes_over_an_entry_edited_by_hand(
    client: Any, folder: Path
) -> None:
    for text in ("keep", "original wording"):
        await request(
            client,
            "myAgent/memory/edit",
            {"folder": folder.as_uri(), "target": "memory", "action": "add", "content": text},
        )
    log = await request(client, "myAgent/memory/log", {"folder": folder.as_uri()})
    keep_id, edited_id = (e["id"] for e in log["entries"])
    path = memory_path(folder)
    path.write_text("keep" + DELIM + "reworded by hand\n", encoding="utf-8")
    with pytest.raises(JsonRpcException) as first:
        await undo(client, folder)
    assert first.value.code == -32003
    assert "original wording" in first.value.message and "marked skipped" in first.value.message
    with pytest.raises(JsonRpcException) as second:
        await undo(client, folder)
    assert keep_id in second.value.message and edited_id not in second.value.message
    done = await undo(client, folder, id=keep_id)  # the change the user chose, by its id
    assert done["message"] == "Undid: added 'keep' to MEMORY.md"
    assert done["state"]["stores"][0]["entries"] == ["reworded by hand"]
    assert path.read_text(encoding="utf-8") == "reworded by hand\n"
    with pytest.raises(JsonRpcException) as bad:
        await undo(client, folder, id=7)
    assert bad.value.code == -32602
