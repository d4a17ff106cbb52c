"""A do-nothing pygls language server: the floor `bench/lsp.py` measures ours against.

It keeps each open document in sync exactly (one string per document; a change's range is found
by walking line breaks from the top, which is all a top-of-file edit needs) and answers every
`didOpen` / `didChange` with an empty `publishDiagnostics`. What it costs is what any pygls
server pays for the same traffic: reading and decoding the message, structuring it, the string
splice, encoding the answer. It reads stdin with the same frame reader as our server
(`my_agent_core.lsp.framing`), so the ratio shows our work per edit, not a faster reader.
Run: `python bench/floor_server.py` (stdio).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import threading
from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from my_agent_core.lsp.framing import FrameReader, serve_frames

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def offset_of(text: str, position: types.Position) -> int:
    """Code-point offset of a UTF-16 position, walking line breaks from the start."""
    start = 0
    for _ in range(position.line):
        found = _LINE_BREAK.search(text, start)
        if found is None:
            return len(text)
        start = found.end()
    found = _LINE_BREAK.search(text, start)
    end = found.start() if found else len(text)
    line = text[start:end]
    units = position.character
    if _ASTRAL.search(line) is None:
        return start + min(units, len(line))
    count = 0
    for ch in line:
        width = 2 if ord(ch) > 0xFFFF else 1
        if width > units:
            break
        units -= width
        count += 1
    return start + count


class FloorProtocol(LanguageServerProtocol):
    """Document sync without pygls' per-keystroke line splitting (so the floor stays a floor)."""

    documents: dict[str, str]

    def _docs(self) -> dict[str, str]:
        if not hasattr(self, "documents"):
            self.documents = {}
        return self.documents

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        self._docs()[params.text_document.uri] = params.text_document.text
        self._publish(params.text_document.uri, params.text_document.version)
        yield from ()

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        docs = self._docs()
        uri = params.text_document.uri
        text = docs.get(uri, "")
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = offset_of(text, change.range.start)
                end = offset_of(text, change.range.end)
                text = text[:start] + change.text + text[end:]
            else:
                text = change.text
        docs[uri] = text
        self._publish(uri, params.text_document.version)
        yield from ()

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        self._docs().pop(params.text_document.uri, None)
        yield from ()

    def _publish(self, uri: str, version: int) -> None:
        self.notify(
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=version),
        )


def main() -> None:
    server = LanguageServer(
        "floor",
        "1",
        text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        protocol_cls=FloorProtocol,
    )
    stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt, SystemExit):
        asyncio.run(serve_frames(stop, FrameReader(sys.stdin.fileno()), server.protocol))


if __name__ == "__main__":
    main()
