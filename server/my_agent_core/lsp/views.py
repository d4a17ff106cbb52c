"""Read-only views of an open memory file: hover, usage lens, symbols, folding, and formatting.

All of them read the buffer's cached state (see `memory_buffer.MemoryBuffer`): the usage lens reads
the live lint's budget, the others the version's parse (made once, on the first request).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from lsprotocol import types

from my_agent_core.layout import JOURNAL_NAME, memory_dir_of
from my_agent_core.memory.document import Entry, serialize
from my_agent_core.memory.lint import shortest_address
from my_agent_core.paths import PathRefused, check_memory_folder

from .convert import minimal_edit
from .memory_buffer import MemoryBuffer

if TYPE_CHECKING:
    from .hooks import ServerHooks
    from .server import MyAgentServer

__all__ = [
    "code_lenses",
    "document_symbols",
    "folding_ranges",
    "format_edits",
    "hover",
    "register",
    "symbol_name",
    "usage_label",
]

logger = logging.getLogger(__name__)

SYMBOL_NAME_MAX = 60


def usage_label(used: int, limit: int) -> str:
    """`1,840 / 2,200 chars · 84%` (and a note when over budget)."""
    percent = round(used * 100 / limit) if limit > 0 else 100
    label = f"{used:,} / {limit:,} chars · {percent}%"
    return f"{label} · over budget" if used > limit else label


def symbol_name(entry: Entry) -> str:
    """The entry's first line, truncated; never empty (VS Code rejects empty symbol names)."""
    first = entry.text.split("\n", 1)[0].strip()
    if len(first) > SYMBOL_NAME_MAX:
        first = first[: SYMBOL_NAME_MAX - 1].rstrip() + "…"
    return first if first.strip() else f"Entry {entry.index + 1}"


def _code(text: str) -> str:
    """Markdown inline code for any text (fence longer than its longest backtick run)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace(chr(10), ' ')}{pad}{fence}"


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")


def _plain(text: str) -> str:
    """Text shown as itself in Markdown: every character Markdown could act on escaped (a chat
    title or a file name cannot become a link, an image or emphasis)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _origin_line(buf: MemoryBuffer, texts: list[str], index: int) -> str:
    """Who made the entry and from what, from the folder's history (`memory/origins.py`)."""
    # Here: start-up time (~2 ms; a hover comes after the first diagnostics).
    from my_agent_core.memory.origins import entry_origins, journal_records, origin_summary

    mem_dir = memory_dir_of(buf.folder)
    try:
        check_memory_folder(mem_dir)
    except PathRefused:
        return ""
    records = journal_records(mem_dir / JOURNAL_NAME)
    origin = entry_origins(records, buf.target, texts)[index]
    return f"Origin: {_plain(origin_summary(origin))}"


def _snapshot_line(ls: ServerHooks, buf: MemoryBuffer, text: str) -> str:
    try:
        sessions = ls.snapshot_sessions(buf.folder, buf.target)
    except Exception:
        logger.exception("snapshot_sessions failed")
        return ""
    if not sessions:
        return "Frozen snapshot: no open chat session on this folder."
    inside = [sid for sid, entries in sessions if text in entries]
    outside = [sid for sid, entries in sessions if text not in entries]
    n = len(sessions)
    if not outside:
        return f"Frozen snapshot: in the snapshot of {'the' if n == 1 else 'all'} {n} open " + (
            "chat session." if n == 1 else "chat sessions."
        )
    names = ", ".join(_code(s) for s in outside[:5]) + (" …" if len(outside) > 5 else "")
    if not inside:
        return (
            f"Frozen snapshot: **not** in the snapshot of the {n} open chat "
            f"session{'s' if n > 1 else ''} ({names}); they see it from their next session on."
        )
    return (
        f"Frozen snapshot: in {len(inside)} of {n} open chat sessions; not in {names} "
        "(they see it from their next session on)."
    )


def hover(ls: ServerHooks, buf: MemoryBuffer, position: types.Position) -> types.Hover | None:
    """Size, budget share, shortest unique old_text and snapshot status of the entry there."""
    doc = buf.doc
    conv = buf.converter
    offset = conv.offset(position)
    if any(d.line == position.line for d in doc.delimiters):
        return None
    entry = doc.entry_at(offset)
    if entry is None:
        return None
    texts = doc.entry_texts
    size = len(entry.text)
    share = f"{size * 100 / buf.limit:.1f}%" if buf.limit > 0 else "—"
    lines = [
        f"**Entry {entry.index + 1} of {len(texts)}** · {size:,} chars · {share} of the "
        f"{buf.limit:,}-char {buf.target} budget",
    ]
    first = texts.index(entry.text)
    if first != entry.index:
        lines.append(f"Duplicate of entry {first + 1}: the store keeps only the first copy.")
    address = shortest_address(texts, entry.index)
    if address == entry.text and len(texts) > 1 and len(set(texts)) > 1:
        lines.append(
            "Shortest unique `old_text`: only the entry's full text (every shorter piece is "
            "also in another entry)."
        )
    else:
        lines.append(f"Shortest unique `old_text`: {_code(address)}")
    try:
        origin = _origin_line(buf, texts, entry.index)
    except Exception:  # the history is display data: a hover never fails for it
        logger.exception("could not read the origin of an entry")
        origin = ""
    if origin:
        lines.append(origin)
    snapshot = _snapshot_line(ls, buf, entry.text)
    if snapshot:
        lines.append(snapshot)
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(lines)),
        range=conv.range(entry.start, entry.end),
    )


def code_lenses(buf: MemoryBuffer) -> list[types.CodeLens]:
    """One lens at the top of the file with the budget usage."""
    title = usage_label(buf.used, buf.limit)
    top = types.Range(start=types.Position(0, 0), end=types.Position(0, 0))
    return [types.CodeLens(range=top, command=types.Command(title=title, command=""))]


def document_symbols(buf: MemoryBuffer) -> list[types.DocumentSymbol]:
    """One symbol per entry, named by its first line."""
    doc = buf.doc
    conv = buf.converter
    symbols = []
    for entry in doc.entries:
        first_line_end = doc.line_end(doc.pos_at(entry.start).line)
        symbols.append(
            types.DocumentSymbol(
                name=symbol_name(entry),
                detail=f"{len(entry.text):,} char{'' if len(entry.text) == 1 else 's'}",
                kind=types.SymbolKind.String,
                range=conv.range(entry.start, entry.end),
                selection_range=conv.range(entry.start, min(first_line_end, entry.end)),
            )
        )
    return symbols


def folding_ranges(buf: MemoryBuffer) -> list[types.FoldingRange]:
    """A fold per entry that spans more than one line."""
    doc = buf.doc
    ranges = []
    for entry in doc.entries:
        start, end = doc.pos_at(entry.start).line, doc.pos_at(entry.end).line
        if end > start:
            ranges.append(
                types.FoldingRange(
                    start_line=start, end_line=end, kind=types.FoldingRangeKind.Region
                )
            )
    return ranges


def format_edits(buf: MemoryBuffer) -> list[types.TextEdit]:
    """The edit that turns the buffer into the store's canonical serialization of its entries."""
    canonical = serialize(buf.doc.entry_texts)
    edit = minimal_edit(buf.text, canonical)
    if edit is None:
        return []
    start, end, new_text = edit
    return [types.TextEdit(range=buf.converter.range(start, end), new_text=new_text)]


def register(ls: MyAgentServer) -> None:
    """hover, codeLens, documentSymbol, foldingRange and formatting."""

    def buffer_of(uri: str) -> MemoryBuffer | None:
        return ls.buffers.memory(uri)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: MyAgentServer, params: types.HoverParams) -> types.Hover | None:
        buf = buffer_of(params.text_document.uri)
        return hover(ls, buf, params.position) if buf is not None else None

    @ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    def on_code_lens(ls: MyAgentServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        buf = buffer_of(params.text_document.uri)
        return code_lenses(buf) if buf is not None else []

    @ls.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_symbols(
        ls: MyAgentServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol]:
        buf = buffer_of(params.text_document.uri)
        return document_symbols(buf) if buf is not None else []

    @ls.feature(types.TEXT_DOCUMENT_FOLDING_RANGE)
    def on_folding(ls: MyAgentServer, params: types.FoldingRangeParams) -> list[types.FoldingRange]:
        buf = buffer_of(params.text_document.uri)
        return folding_ranges(buf) if buf is not None else []

    @ls.feature(types.TEXT_DOCUMENT_FORMATTING)
    def on_format(
        ls: MyAgentServer, params: types.DocumentFormattingParams
    ) -> list[types.TextEdit] | None:
        buf = buffer_of(params.text_document.uri)
        return format_edits(buf) if buf is not None else None
