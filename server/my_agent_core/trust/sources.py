"""What a piece of untrusted text is and where it came from.

Every text the model receives that the user did not type is a `Source`: a tool's result (with the
tool's arguments: the file and its lines, the command, the search query), an attached editor text,
a context file frozen into the system prompt, the recalled items appended to a user message, a
compaction's summary. A source keeps the text as the model saw it, without our line-number
prefixes (so a run that spans two lines of a file is still one run), and a map from its lines to
places a person can look at (`README.md:5`), so a write that copies it can say from where.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from my_agent_core.bounded_json import loads
from my_agent_core.memory.provenance import How, SourceKind, SourceRef, clean_label
from my_agent_core.memory.render import ATTACHMENTS_TAG, CONTEXT_TAG, RECALL_TAG, Attachment

__all__ = [
    "BlockItem",
    "Source",
    "block_items",
    "from_attachment",
    "from_attachment_block",
    "from_context_block",
    "from_recall_block",
    "from_summary",
    "from_tool_result",
    "typed_text",
]

_NUMBERED = re.compile(r" *(\d+)\t(.*)")  # read_file: `     5\ttext`
_HIT = re.compile(r"(.+?):(\d+): (.*)")  # search_text: `path:12: text`
_SPAN = re.compile(r"lines (\d+)-(\d+)")
_ARG_CHARS = 120


@dataclass(frozen=True, slots=True)
class Source:
    """One untrusted text of the session.

    `text` is what the model saw (line prefixes removed); `label` names the whole source in
    `SourceRef.where` form (a path, a command line, a query); `lines`, when known, gives each line
    of `text` its own place (`(path, line number)`), else `first_line` numbers them from there
    under `label` (None: the label alone)."""

    kind: SourceKind
    label: str
    text: str
    lines: tuple[tuple[str, int] | None, ...] | None = None
    first_line: int | None = None

    def ref(self, how: How = "read") -> SourceRef:
        """The whole source as a journal reference (`read_file` of 40 lines: `a.py:1-40`)."""
        return SourceRef(self.kind, self.span_label(), how)

    def span_label(self) -> str:
        """The label with the line span this source covers, when it covers one file's lines."""
        if self.lines:
            numbered = [place for place in self.lines if place is not None]
            paths = {path for path, _ in numbered}
            if len(paths) == 1 and self.kind == "file":
                first, last = numbered[0][1], numbered[-1][1]
                path = numbered[0][0]
                return clean_label(f"{path}:{first}" if first == last else f"{path}:{first}-{last}")
        return clean_label(self.label)

    def place_at(self, offset: int) -> SourceRef:
        """Where the text at `offset` of `text` is, as a `copied` reference: `README.md:5`."""
        line = self.text.count("\n", 0, max(0, offset))
        if self.lines is not None:
            place = self.lines[line] if line < len(self.lines) else None
            if place is not None:
                path, number = place
                kind: SourceKind = "file" if self.kind == "search" else self.kind
                return SourceRef(kind, clean_label(f"{path}:{number}"), "copied")
            return SourceRef(self.kind, clean_label(self.label), "copied")
        if self.first_line is not None:
            return SourceRef(
                self.kind, clean_label(f"{self.label}:{self.first_line + line}"), "copied"
            )
        return SourceRef(self.kind, clean_label(self.label), "copied")

    def line_at(self, offset: int) -> str:
        """The line of `text` holding `offset` (for a quote in the approval)."""
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        return self.text[start : end if end >= 0 else len(self.text)]


# ------------------------------------------------------------------------------------ tool results


def from_tool_result(name: str, arguments: str, text: str) -> Source:
    """The source a tool's result is: by the tool's name and its arguments (the raw JSON the model
    sent; anything unreadable just gives a plainer label)."""
    args = _arguments(arguments)
    path = _arg(args, "path")
    if name == "read_file":
        return _numbered(path or "a file", text)
    if name == "search_text":
        return _hits(_quoted(_arg(args, "query") or "?"), text)
    if name == "list_files":
        where = path or "the folder"
        glob = _arg(args, "glob")
        return Source("listing", f"{where} ({glob})" if glob else where, text)
    if name == "run_command":
        return Source("command", _arg(args, "command") or "a command", text)
    if name in ("edit_file", "write_file"):
        return Source("edit", path or "a file", text)
    if name == "memory_search":
        return Source("archive", _quoted(_arg(args, "query") or "?"), text)
    return Source("tool", f"`{clean_label(name, 60)}`", text)


def _arguments(raw: str) -> dict[str, object]:
    try:
        value = loads(raw or "{}", what="tool arguments")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _arg(args: dict[str, object], key: str) -> str | None:
    value = args.get(key)
    return clean_label(value, _ARG_CHARS) if isinstance(value, str) and value.strip() else None


def _quoted(text: str) -> str:
    return f"'{text}'"


def _numbered(path: str, text: str) -> Source:
    """read_file's `     5\\ttext` lines: the text without the numbers, each line its place."""
    body: list[str] = []
    places: list[tuple[str, int] | None] = []
    for line in text.split("\n"):
        m = _NUMBERED.fullmatch(line)
        if m is not None:
            body.append(m.group(2))
            places.append((path, int(m.group(1))))
        else:  # the header and notes: ours, but they may name files
            body.append(line)
            places.append(None)
    return Source("file", path, "\n".join(body), tuple(places))


def _hits(query: str, text: str) -> Source:
    """search_text's `path:12: text` lines: each hit's text, each its file and line."""
    body: list[str] = []
    places: list[tuple[str, int] | None] = []
    for line in text.split("\n"):
        m = _HIT.fullmatch(line)
        if m is not None:
            body.append(m.group(3))
            places.append((clean_label(m.group(1), _ARG_CHARS), int(m.group(2))))
        else:
            body.append(line)
            places.append(None)
    return Source("search", query, "\n".join(body), tuple(places))


# ------------------------------------------------------------------------------------ the other seams


def from_attachment(item: Attachment) -> Source:
    """An editor text sent with a user message (the active file, a selection)."""
    return Source("attachment", clean_label(item.source), item.text, None, item.start_line or 1)


def from_summary(text: str) -> Source:
    """A compaction's summary: the model's words about everything before it, quotes included."""
    return Source("summary", "earlier messages", text)


@dataclass(frozen=True, slots=True)
class BlockItem:
    """One item of a rendered block: its header's name, the line its text starts at, its text."""

    name: str
    header: str
    text: str


def block_items(message: str, tag: str) -> list[BlockItem]:
    """The items of the `<tag>` block in `message` (a user message or the system prompt), each
    under its `## name · ...` header; [] when there is no such block."""
    opener = f"<{tag}>\n"
    start = message.find(opener)
    if start < 0:
        return []
    end = message.find(f"\n</{tag}>", start)
    body = message[start + len(opener) : end if end >= 0 else len(message)]
    items: list[BlockItem] = []
    header: str | None = None
    lines: list[str] = []
    for line in body.split("\n"):
        if line.startswith("## "):  # an item's own text never starts so: neutralised
            if header is not None:
                items.append(_item(header, lines))
            header, lines = line[3:], []
        elif header is not None:
            lines.append(line)
    if header is not None:
        items.append(_item(header, lines))
    return items


def _item(header: str, lines: list[str]) -> BlockItem:
    name = header.split(" · ", 1)[0]
    return BlockItem(name, header, "\n".join(lines).strip("\n"))


def from_context_block(block: str) -> list[Source]:
    """The context files of a `<PROJECT_CONTEXT>` block (the system prompt's, as frozen)."""
    return [
        Source("context_file", clean_label(item.name), item.text, None, 1)
        for item in block_items(block, CONTEXT_TAG)
        if item.text
    ]


def from_attachment_block(message: str) -> list[Source]:
    """The attachments of a user message as stored (`<editor_context>`), for a resumed session."""
    out = []
    for item in block_items(message, ATTACHMENTS_TAG):
        if not item.text:
            continue
        span = _SPAN.search(item.header)
        first = int(span.group(1)) if span is not None else 1
        out.append(Source("attachment", clean_label(item.name), item.text, None, first))
    return out


def from_recall_block(message: str) -> list[Source]:
    """The recalled items appended to a user message (`<recalled_memory>`)."""
    out = []
    for item in block_items(message, RECALL_TAG):
        if item.text:
            parts = item.header.split(" · ", 1)
            label = parts[1] if len(parts) == 2 else "an earlier chat"
            out.append(Source("recall", clean_label(label), item.text))
    return out


def typed_text(message: str, tags: Sequence[str] = (ATTACHMENTS_TAG, RECALL_TAG)) -> str:
    """The part of a stored user message the user typed: everything before the first block the
    agent appended (a user who typed a block's tag only makes more of their text untrusted)."""
    cut = len(message)
    for tag in tags:
        at = message.find(f"<{tag}>\n")
        if at >= 0:
            cut = min(cut, at)
    return message[:cut]
