"""Document sync: the exact text of every document open in the editor, unsaved edits included.

The server's protocol routes `didOpen` / `didChange` / `didClose` here instead of pygls' own
workspace copy (which re-splits every line on each keystroke and splits lines where LSP does not).
Changes are applied with LSP's line rules (`\\n`, `\\r\\n`, `\\r` only) in the negotiated position
encoding, whole-text or incremental alike. Memory files get their lint state on top
(`memory_buffer.MemoryBuffer`). Other threads (a chat turn reading the file the user has open)
read through `text_of(path)` / `text_of_uri(uri)`, which take the document's lock: an edit is
applied whole or not at all as far as a reader can tell.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .chunked_text import ChunkedText, Splice, split_lines
from .convert import UTF16, minimal_edit
from .memory_buffer import MemoryBuffer, memory_text
from .uris import norm_path, uri_to_path

if TYPE_CHECKING:
    from .hooks import ServerHooks

__all__ = ["Buffers", "OpenDocument"]

logger = logging.getLogger(__name__)


class OpenDocument:
    """One open document: its exact text (as chunks), version and language, behind a lock."""

    def __init__(
        self,
        uri: str,
        text: str,
        version: int | None,
        language_id: str | None,
        encoding: str,
        memory: MemoryBuffer | None = None,
        rope: ChunkedText[Any] | None = None,
    ) -> None:
        self.uri = uri
        self.path = uri_to_path(uri)
        self.version = version
        self.language_id = language_id
        self.encoding = encoding
        self.memory = memory
        self.rope: ChunkedText[Any] = rope if rope is not None else ChunkedText(text, split_lines)
        self.lock = threading.Lock()

    @property
    def text(self) -> str:
        """The whole current text (joined once per version; safe from any thread)."""
        with self.lock:
            return self.rope.text

    def text_in(self, rng: types.Range) -> str:
        """The text of an LSP range of the current version (a selection the chat reads)."""
        with self.lock:
            start = self.rope.offset(rng.start, self.encoding)
            end = self.rope.offset(rng.end, self.encoding)
            return self.rope.text[min(start, end) : max(start, end)]

    def apply(self, change: types.TextDocumentContentChangeEvent) -> None:
        """Apply one `didChange` content change: a range and its new text, or the whole text."""
        with self.lock:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = self.rope.offset(change.range.start, self.encoding)
                end = self.rope.offset(change.range.end, self.encoding)
                splice = self.rope.replace(min(start, end), max(start, end), change.text)
            else:  # whole text: replace only what differs, so the lint sees a small edit
                edit = minimal_edit(self.rope.text, change.text)
                if edit is None:
                    return
                splice = self.rope.replace(*edit, result=change.text)
            self._spliced(splice)

    def set_text(self, text: str) -> None:
        """Replace the whole text (e.g. the text a client sends with `didSave`)."""
        self.apply(types.TextDocumentContentChangeWholeDocument(text=text))

    def _spliced(self, splice: Splice[Any]) -> None:
        if self.memory is not None:
            self.memory.spliced(splice)


class Buffers:
    """The open documents of one server, by URI (and by path for readers in other threads)."""

    def __init__(self, ls: ServerHooks) -> None:
        self.ls = ls
        self._by_uri: dict[str, OpenDocument] = {}
        self._by_path: dict[Path, OpenDocument] = {}
        self._lock = threading.Lock()
        self._generation = 0

    # ----- reads (any thread) ------------------------------------------------------------------------
    def get(self, uri: str) -> OpenDocument | None:
        with self._lock:
            return self._by_uri.get(uri)

    def memory(self, uri: str) -> MemoryBuffer | None:
        """The lint state of an open memory file (None for other documents)."""
        doc = self.get(uri)
        return doc.memory if doc is not None else None

    def memory_buffers(self) -> list[MemoryBuffer]:
        with self._lock:
            return [d.memory for d in self._by_uri.values() if d.memory is not None]

    def documents(self) -> list[OpenDocument]:
        with self._lock:
            return list(self._by_uri.values())

    def __iter__(self) -> Iterator[OpenDocument]:
        return iter(self.documents())

    def text_of_uri(self, uri: str) -> str | None:
        """The editor's current text of an open document (unsaved edits included), else None."""
        doc = self.get(uri)
        return doc.text if doc is not None else None

    def text_in(self, uri: str, rng: types.Range) -> str | None:
        """The text of a range of an open document (positions in the negotiated encoding)."""
        doc = self.get(uri)
        return doc.text_in(rng) if doc is not None else None

    def text_of(self, path: Path | str) -> str | None:
        """The editor's text of the file at `path` when it is open there, else None (read disk).

        Matches the path as the editor named it and its real location, so a tool that resolved
        symbolic links still finds the buffer.
        """
        doc = self.document_at(path)
        return doc.text if doc is not None else None

    def open_paths(self) -> list[Path]:
        """The paths of the open documents that are files (untitled ones have none)."""
        return [doc.path for doc in self.documents() if doc.path is not None]

    def document_at(self, path: Path | str) -> OpenDocument | None:
        with self._lock:
            doc = self._by_path.get(norm_path(path))
            if doc is None:
                doc = self._by_path.get(norm_path(os.path.realpath(path)))
            return doc

    # ----- sync (the event loop) ---------------------------------------------------------------------
    def open(self, item: types.TextDocumentItem) -> OpenDocument:
        """`didOpen`: track the document (a memory file also gets its lint state)."""
        encoding = self._encoding()
        memory = None
        rope: ChunkedText[Any] | None = None
        mf = self._memory_file(item.uri)
        if mf is not None:
            rope = memory_text(item.text)
            limit, share = self.ls.config.limit(mf.target), self.ls.config.near_budget_share
            self._generation += 1000  # result ids of a reopened file never repeat
            memory = MemoryBuffer(
                uri=item.uri,
                folder=mf.folder,
                target=mf.target,
                rope=rope,
                version=item.version,
                limit=limit,
                near_share=share,
                encoding=encoding,
                generation=self._generation,
            )
        doc = OpenDocument(
            item.uri, item.text, item.version, item.language_id, encoding, memory, rope
        )
        with self._lock:
            old = self._by_uri.pop(item.uri, None)
            if old is not None:
                self._unindex(old)
            self._by_uri[item.uri] = doc
            for key in self._path_keys(doc):
                self._by_path[key] = doc
        return doc

    def change(self, params: types.DidChangeTextDocumentParams) -> OpenDocument | None:
        """`didChange`: apply the content changes in order, then take the new version."""
        doc = self.get(params.text_document.uri)
        if doc is None:
            logger.warning(
                "didChange for a document that is not open: %s", params.text_document.uri
            )
            return None
        for change in params.content_changes:
            doc.apply(change)
        doc.version = params.text_document.version
        if doc.memory is not None:
            doc.memory.version = doc.version
        return doc

    def close(self, uri: str) -> OpenDocument | None:
        """`didClose`: forget the document."""
        with self._lock:
            doc = self._by_uri.pop(uri, None)
            if doc is not None:
                self._unindex(doc)
        return doc

    def _unindex(self, doc: OpenDocument) -> None:
        for key in self._path_keys(doc):
            if self._by_path.get(key) is doc:
                del self._by_path[key]

    @staticmethod
    def _path_keys(doc: OpenDocument) -> set[Path]:
        if doc.path is None:
            return set()
        try:
            real = norm_path(os.path.realpath(doc.path))
        except (OSError, ValueError):
            real = doc.path
        return {doc.path, real}

    def _encoding(self) -> str:
        try:
            return self.ls.position_encoding
        except Exception:
            return UTF16

    def _memory_file(self, uri: str) -> Any:
        try:
            return self.ls.memory_file(uri)
        except Exception:
            logger.exception("memory_file(%s) failed", uri)
            return None
