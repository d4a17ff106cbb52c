"""The request loop stays free while a pathological workspace is checked: with the per-entry
checks of the workspace rules held (they cannot have finished), `myAgent/memory/state` is answered;
once they go on, the findings arrive. The workspace is the hostile clone of issue 17 (a
backtracking .gitignore glob against a long name, a Makefile line of 400,000 blanks, an entry
naming a path 7,000 folders deep). A hang fails the test by pytest-timeout: no timed assertions.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tests.lsp.conftest as lsp_conftest
from lsprotocol import types
from tests.lsp.conftest import (
    make_folder,
    memory_path,
    request,
    start_server,
    stop_server,
    wait_until,
)

DELIM = "\n§\n"
HELD_SERVER = [sys.executable, str(Path(__file__).with_name("held_rules_server.py"))]


def hostile_clone(tmp_path: Path) -> tuple[Path, str]:
    entries = [
        "Run `make test` before pushing; `make lint` too",
        "See " + "src/" * 7000 + "main.py for details",
        "The entry point is src/gone.py",
    ]
    text = DELIM.join(entries) + "\n"
    folder = make_folder(tmp_path, "clone", memory=text)
    (folder / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*a*b\n", encoding="utf-8")
    (folder / ("a" * 250)).write_text("x", encoding="utf-8")
    (folder / "Makefile").write_text("test:\n\tpytest\nx" + " " * 400_000 + "y\n")
    (folder / "src").mkdir()
    (folder / "src" / "main.py").write_text("", encoding="utf-8")
    return folder, text


@pytest.mark.timeout(120)
async def test_requests_are_answered_while_the_workspace_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, text = hostile_clone(tmp_path)
    entered, release = tmp_path / "entered", tmp_path / "release"
    monkeypatch.setattr(lsp_conftest, "SERVER_COMMAND", HELD_SERVER)
    client = await start_server(
        [folder],
        pull=False,
        env={"HELD_RULES_ENTERED": str(entered), "HELD_RULES_RELEASE": str(release)},
    )
    try:
        uri = memory_path(folder).as_uri()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "markdown", 1, text))
        )
        await wait_until(entered.exists, timeout=60)  # the workspace checks run, and are held
        state = await request(client, "myAgent/memory/state", {"folder": folder.as_uri()})
        assert not release.exists()  # answered while the checks could not have finished
        assert state is not None
        release.touch()

        def stale() -> list[str]:
            found = client.diagnostics.get(uri, [])
            return [d.message for d in found if d.code == "stale-reference"]

        await wait_until(lambda: len(stale()) == 2, timeout=60)
        assert "target `lint`" in stale()[0] and "src/gone.py" in stale()[1]
    finally:
        release.touch()
        await stop_server(client)
