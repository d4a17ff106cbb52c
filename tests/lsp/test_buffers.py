"""Document sync (`lsp/buffers.py`): the exact text of every open document, for every thread.

In process, against oracles: LSP's line rules (`\\n`, `\\r\\n`, `\\r` only) and position encodings
(UTF-16 by default, UTF-8 and UTF-32 when negotiated), incremental and whole-text changes alike;
memory files also keep their live lint equal to a fresh lint of the text.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from my_agent_core.lsp.buffers import Buffers
from my_agent_core.lsp.convert import UTF8, UTF16, UTF32
from my_agent_core.lsp.folders import MemoryFile, memory_file_of
from my_agent_core.lsp.settings import Settings
from my_agent_core.memory.document import parse
from my_agent_core.memory.lint import lint


class Hooks:
    """The parts of the server that `Buffers` uses."""

    def __init__(self, encoding: str = UTF16) -> None:
        self.config = Settings.resolve([], env={})
        self.position_encoding = encoding

    def memory_file(self, uri: str) -> MemoryFile | None:
        return memory_file_of(uri)


def oracle_offset(text: str, pos: types.Position, encoding: str) -> int:
    """Code-point offset of an LSP position, the slow and obvious way."""
    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]
    if pos.line >= len(starts):
        return len(text)
    start = starts[pos.line]
    end = starts[pos.line + 1] if pos.line + 1 < len(starts) else len(text)
    line = text[start:end].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(line):
        if encoding == UTF8:
            width = len(ch.encode("utf-8", "surrogatepass"))
        elif encoding == UTF16:
            width = 2 if ord(ch) > 0xFFFF else 1
        else:
            width = 1
        if units + width > pos.character:
            return start + i
        units += width
    return start + len(line)


PIECES = ["a", "bc", " ", "§", "\n", "\r\n", "\r", "\n§\n", "😀", "é", "中", "\u2028", "\x85", "\t"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
positions = st.builds(types.Position, line=st.integers(0, 12), character=st.integers(0, 12))
changes = st.one_of(
    st.builds(
        lambda a, b, t: types.TextDocumentContentChangePartial(range=types.Range(a, b), text=t),
        positions,
        positions,
        texts,
    ),
    st.builds(lambda t: types.TextDocumentContentChangeWholeDocument(text=t), texts),
)


def apply_oracle(text: str, change: types.TextDocumentContentChangeEvent, encoding: str) -> str:
    if isinstance(change, types.TextDocumentContentChangeWholeDocument):
        return change.text
    a = oracle_offset(text, change.range.start, encoding)
    b = oracle_offset(text, change.range.end, encoding)
    a, b = min(a, b), max(a, b)
    return text[:a] + change.text + text[b:]


@pytest.mark.parametrize("encoding", [UTF16, UTF8, UTF32])
@pytest.mark.parametrize("memory", [False, True])
def test_every_change_is_applied_exactly(tmp_path: Path, encoding: str, memory: bool) -> None:
    folder = tmp_path / "ws"
    path = folder / (".my_agent_core/memory/MEMORY.md" if memory else "notes.txt")
    uri = path.as_uri()

    @given(texts, st.lists(changes, min_size=1, max_size=6))
    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(text: str, edits: list[types.TextDocumentContentChangeEvent]) -> None:
        buffers = Buffers(Hooks(encoding))
        doc = buffers.open(types.TextDocumentItem(uri, "markdown", 1, text))
        assert (doc.memory is not None) == memory
        for version, change in enumerate(edits, start=2):
            text = apply_oracle(text, change, encoding)
            buffers.change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[change],
                )
            )
            assert doc.text == text
            assert buffers.text_of(path) == text and doc.version == version
        if doc.memory is not None:
            assert doc.memory.findings == lint(parse(text), limit=2200)

    run()


def test_several_changes_in_one_notification_apply_in_order(tmp_path: Path) -> None:
    uri = (tmp_path / "a.txt").as_uri()
    buffers = Buffers(Hooks())
    buffers.open(types.TextDocumentItem(uri, "plaintext", 1, "one\ntwo\n"))
    first = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(1, 0), types.Position(1, 3)), text="2"
    )
    second = types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(0, 3), types.Position(0, 3)), text="!"
    )
    buffers.change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[first, second],
        )
    )
    assert buffers.text_of_uri(uri) == "one!\n2\n"


def test_text_of_finds_open_documents_by_path_link_or_uri(tmp_path: Path) -> None:
    real = tmp_path / "src"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    buffers = Buffers(Hooks())
    linked_uri = (tmp_path / "link" / "main.py").as_uri()
    buffers.open(types.TextDocumentItem(linked_uri, "python", 3, "UNSAVED = 1\n"))
    assert buffers.text_of(tmp_path / "link" / "main.py") == "UNSAVED = 1\n"
    assert buffers.text_of(real / "main.py") == "UNSAVED = 1\n"  # a tool that resolved the link
    assert buffers.text_of(str(real / "main.py")) == "UNSAVED = 1\n"
    assert buffers.text_of(real / "other.py") is None  # not open: read the disk instead
    selection = types.Range(types.Position(0, 0), types.Position(0, 7))
    assert buffers.text_in(linked_uri, selection) == "UNSAVED"
    buffers.open(types.TextDocumentItem("untitled:Untitled-1", "python", 1, "scratch"))
    assert buffers.text_of_uri("untitled:Untitled-1") == "scratch"
    buffers.close(linked_uri)
    assert buffers.text_of(real / "main.py") is None
    assert buffers.text_of_uri(linked_uri) is None


def test_readers_in_other_threads_only_ever_see_whole_versions(tmp_path: Path) -> None:
    path = tmp_path / "ws" / ".my_agent_core" / "memory" / "MEMORY.md"
    uri = path.as_uri()
    base = "\n§\n".join(f"entry {i} uses uv" for i in range(400)) + "\n"
    buffers = Buffers(Hooks())
    buffers.open(types.TextDocumentItem(uri, "markdown", 1, base))
    versions = {base}
    seen: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            text = buffers.text_of(path)
            if text is not None:
                seen.append(text)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    text = base
    try:
        for version in range(2, 300):
            line = (version * 37) % 800
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, 0), types.Position(line, 0)),
                text="x\n§\n" if version % 3 == 0 else "y",
            )
            text = apply_oracle(text, change, UTF16)
            versions.add(text)
            buffers.change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[change],
                )
            )
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert seen and set(seen) <= versions
    assert buffers.text_of(path) == text
