"""Import: the items of a CLAUDE.md / AGENTS.md / GEMINI.md / .cursorrules file as memory entries.

Another agent's instructions file is a list of facts and rules; memory holds the same kind of thing
in a much smaller budget. Import turns each bullet (with its nested bullets) or paragraph into one
entry, prefixed by the headings above it so it still makes sense on its own; a code block stays
with the item it illustrates. The entries go through the store as ONE batch (scanned, deduplicated,
journaled, undone by one undo), and what did not fit or was refused is reported, never dropped
silently. The Markdown is parsed by markdown-it-py (CommonMark), not by hand.

An item the folder's context files (AGENTS.md, CLAUDE.md ...) already give every session is skipped
and listed: as an entry it would only spend memory's budget twice, and lint would flag it at once
as `in-context-file` (the same check, `context/similarity.py`). Importing AGENTS.md into its own
folder's memory therefore adds only what the file does not already say there.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from my_agent_core.context.files import read_context_texts
from my_agent_core.context.similarity import ContextCorpus
from my_agent_core.memory.document import SECTION_SIGN, budget_used, normalize_entry, parse
from my_agent_core.memory.location import workspace_of
from my_agent_core.memory.safety import describe, scan
from my_agent_core.memory.store import MemoryChanged, MemoryEditError, MemoryStore, Operation
from my_agent_core.paths import FileTooLarge, PathRefused, read_text, resolve_inside

__all__ = [
    "IMPORT_MAX_BYTES",
    "ImportItem",
    "ImportResult",
    "InContext",
    "Refused",
    "context_corpus",
    "import_file",
    "import_text",
    "split_items",
]

#: Bytes read of a file to import: far more than any budget, yet bounded.
IMPORT_MAX_BYTES = 1024 * 1024
_ATTEMPTS = 3  # plans made again when memory changes between planning and writing
_HEADING_CONTEXT = 80  # characters of heading context in front of an item
_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_TASK_BOX = re.compile(r"^\[[ xX]\][ \t]+")


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One item of the source file: its entry text and the line (1-based) it starts at."""

    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Refused:
    """An item the store would not take, and why (safe to show: fixed wording, no quote)."""

    text: str
    reason: str
    line: int


@dataclass(frozen=True, slots=True)
class InContext:
    """An item skipped because a context file already says it: the item's line, and the context
    file's name and line."""

    text: str
    line: int
    file: str
    file_line: int


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did; the protocol's `{message, added, duplicates, notFitted, refused}` (and
    `inContext`, the items the context files already give every session)."""

    message: str
    added: int
    duplicates: int
    not_fitted: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    in_context: list[InContext] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "message": self.message,
            "added": self.added,
            "duplicates": self.duplicates,
            "notFitted": list(self.not_fitted),
            "refused": [{"text": r.text, "reason": r.reason, "line": r.line} for r in self.refused],
            "inContext": [
                {"text": c.text, "line": c.line, "file": c.file, "fileLine": c.file_line}
                for c in self.in_context
            ],
        }


# ------------------------------------------------------------------------------------ splitting


def split_items(text: str) -> list[ImportItem]:
    """The items of a Markdown (or plain text) instructions file, in order.

    One item per top-level bullet (nested bullets and code inside it included) and per paragraph,
    blockquote or table; a code block joins the item just before it in its section, else stands
    alone. Headings are not items: they become the item's context (`Testing / CI: ...`), the lone
    top-level title of the file excepted. HTML blocks (comments for humans) and rules are skipped.
    """
    source = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    lines = source.split("\n")
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(source)
    title_level = _title_level(tokens)
    headings: list[tuple[int, str]] = []
    items: list[ImportItem] = []
    joinable = False  # the last item can take a code block that follows it
    i = 0
    while i < len(tokens):
        token = tokens[i]
        close = _closing(tokens, i)
        if token.type == "heading_open":
            level = int(token.tag[1:])
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            headings = [(lv, t) for lv, t in headings if lv < level]
            if level != title_level:
                headings.append((level, title))
            joinable = False
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            for start in _list_items(tokens, i, close):
                body = _item_text(lines, tokens[start])
                if body:
                    items.append(_item(headings, body, tokens[start]))
            joinable = True
        elif token.type in ("paragraph_open", "blockquote_open", "table_open"):
            body = _lines(lines, token).strip()
            if body:
                items.append(_item(headings, body, token))
            joinable = True
        elif token.type in ("fence", "code_block"):
            body = _lines(lines, token).rstrip()
            if joinable and items:
                last = items[-1]
                items[-1] = ImportItem(f"{last.text}\n{textwrap.dedent(body)}", last.line)
            elif body.strip():
                items.append(_item(headings, textwrap.dedent(body), token))
            joinable = False
        else:  # html_block, hr: not facts
            joinable = False if token.type == "hr" else joinable
        i = close + 1
    return items


def _title_level(tokens: Sequence[Token]) -> int:
    """The level of the file's title: a level-1 heading that is the only one and opens the file
    (its text names the file, not a section). 0 when there is none."""
    firsts = [t for t in tokens if t.type == "heading_open" and t.tag == "h1"]
    opening = next((t for t in tokens if t.level == 0 and t.nesting >= 0), None)
    return 1 if len(firsts) == 1 and opening is firsts[0] else 0


def _closing(tokens: Sequence[Token], i: int) -> int:
    """The index of the token that closes `tokens[i]` (itself for a self-contained token)."""
    if tokens[i].nesting != 1:
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _list_items(tokens: Sequence[Token], start: int, end: int) -> list[int]:
    """The indices of the direct items of the list opened at `start` (closed at `end`)."""
    found: list[int] = []
    j = start + 1
    while j < end:
        if tokens[j].type == "list_item_open":
            found.append(j)
            j = _closing(tokens, j)
        j += 1
    return found


def _lines(lines: list[str], token: Token) -> str:
    if token.map is None:
        return token.content
    first, last = token.map
    return "\n".join(lines[first:last])


def _item_text(lines: list[str], token: Token) -> str:
    """A list item's source without its bullet (`- `, `1. `, a task box), continuation dedented."""
    raw = _lines(lines, token).rstrip().split("\n")
    if not raw:
        return ""
    match = _BULLET.match(raw[0])
    width = match.end() if match else 0
    head = _TASK_BOX.sub("", raw[0][width:])
    rest = textwrap.dedent("\n".join(raw[1:])) if len(raw) > 1 else ""
    return f"{head}\n{rest}".strip() if rest.strip() else head.strip()


def _item(headings: list[tuple[int, str]], body: str, token: Token) -> ImportItem:
    context = " / ".join(title for _level, title in headings if title)
    if len(context) > _HEADING_CONTEXT:
        context = context[: _HEADING_CONTEXT - 1] + "…"
    line = token.map[0] + 1 if token.map else 0
    return ImportItem(f"{context}: {body}" if context else body, line)


# ------------------------------------------------------------------------------------ importing


@dataclass(slots=True)
class _Plan:
    adds: list[str] = field(default_factory=list)
    duplicates: int = 0
    not_fitted: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    in_context: list[InContext] = field(default_factory=list)


def _plan(
    items: list[ImportItem], existing: list[str], limit: int, context: ContextCorpus | None
) -> _Plan:
    """Which items to add: safe ones, not already there, not already in a context file, in file
    order while they fit (a big item that does not fit does not stop smaller ones after it)."""
    plan = _Plan()
    have = set(existing)
    kept = list(existing)
    used = budget_used(kept)
    for item in items:
        text = normalize_entry(item.text)
        if not text:
            continue
        issues = scan(text)
        if issues:
            plan.refused.append(Refused(text, f"it {describe(issues)}", item.line))
            continue
        if SECTION_SIGN in text and len(parse(text).entries) != 1:
            plan.refused.append(
                Refused(text, "it holds a line with only §, the entry delimiter", item.line)
            )
            continue
        if text in have:
            plan.duplicates += 1
            continue
        match = context.find(text) if context is not None else None
        if match is not None:
            plan.in_context.append(InContext(text, item.line, match.name, match.line))
            continue
        grown = used + (len("\n§\n") if kept else 0) + len(text)
        if grown > limit:
            plan.not_fitted.append(text)
            continue
        plan.adds.append(text)
        have.add(text)
        kept.append(text)
        used = grown
    return plan


def import_text(
    store: MemoryStore,
    text: str,
    *,
    target: str = "memory",
    author: str = "user",
    source: str = "the file",
    context: ContextCorpus | None = None,
) -> ImportResult:
    """Add the items of `text` to `target` in one journaled batch (one undo reverts it).

    The plan is made on the file as it is, previewed under the store's lock and written only if
    nobody wrote in between (else planned again). Refused, over-budget and already-in-context
    items (`context`: the folder's context files, see `context_corpus`) are returned, never
    silently dropped; raises `MemoryEditError` when the store refuses the write itself."""
    store.limit(target)  # an unknown target is refused here, with the store's message
    items = split_items(text)
    name = store.files[target]
    for _attempt in range(_ATTEMPTS):
        state = store.state(target)
        if not state.available:
            raise MemoryEditError(state.error or f"{name} is unavailable.")
        plan = _plan(items, state.entries, state.limit, context)
        if not plan.adds:
            return _result(plan, 0, name, source, len(items))
        operations = [Operation("add", content=t) for t in plan.adds]
        preview = store.preview(target, operations)
        if parse(preview.before).stored_texts != state.entries:
            continue  # written between the read and the preview: plan again
        try:
            store.apply(target, operations, author=author, expect=preview.before)
        except MemoryChanged:
            continue
        return _result(plan, len(plan.adds), name, source, len(items))
    raise MemoryEditError(
        f"{name} kept changing while the import was being saved (another session or program is "
        "writing it); nothing was imported. Retry in a moment."
    )


def _result(plan: _Plan, added: int, name: str, source: str, total: int) -> ImportResult:
    parts = [f"Imported {added} of {_count(total, 'item')} from {source} into {name}"]
    if plan.duplicates:
        parts.append(f"{plan.duplicates} already there")
    if plan.not_fitted:
        parts.append(f"{len(plan.not_fitted)} did not fit in the budget")
    if plan.in_context:
        files = sorted({c.file for c in plan.in_context})
        says = " and ".join(files)
        parts.append(
            f"{_count(len(plan.in_context), 'item')} skipped: {says} already "
            f"{'gives' if len(files) == 1 else 'give'} {'it' if len(plan.in_context) == 1 else 'them'}"
            " to every session"
        )
    if plan.refused:
        parts.append(f"{len(plan.refused)} refused as unsafe or malformed")
    message = "; ".join(parts) + "."
    if plan.not_fitted:
        message += f" Consolidate {name} or raise its limit, then import again for the rest."
    return ImportResult(
        message, added, plan.duplicates, plan.not_fitted, plan.refused, plan.in_context
    )


def _count(number: int, one: str) -> str:
    return f"{number} {one if number == 1 else one + 's'}"


def context_corpus(store: MemoryStore, target: str, folder: Path | str | None) -> ContextCorpus:
    """The context files every session of `target`'s workspace reads (`folder`, else the one its
    file lives in; none for a file outside any workspace, as a global USER.md)."""
    home = Path(folder) if folder is not None else workspace_of(store.state(target).path.parent)
    if home is None:
        return ContextCorpus(())
    texts, _unreadable = read_context_texts(home)
    return ContextCorpus(texts)


def import_file(
    store: MemoryStore,
    path: Path | str,
    *,
    target: str = "memory",
    author: str = "user",
    folder: Path | str | None = None,
    max_bytes: int = IMPORT_MAX_BYTES,
) -> ImportResult:
    """`import_text` on a file. With `folder` (the editor's request) the path must be inside that
    workspace folder (no `..`, no link out); every file is read through the one path check
    (regular files only, bounded, UTF-8). Raises `PathRefused` for a file that cannot be read."""
    real = Path(resolve_inside(folder, path, what="file to import")) if folder else Path(path)
    shown = os.fspath(path)
    try:
        text = read_text(real, max_bytes=max_bytes, name=shown, bom=True)
    except FileTooLarge as exc:
        raise PathRefused(f"{exc} Import takes instructions files, not data.") from None
    if text is None:
        raise PathRefused(f"{shown} does not exist.")
    return import_text(
        store,
        text,
        target=target,
        author=author,
        source=Path(shown).name,
        context=context_corpus(store, target, folder),
    )
