"""Where an agent's memory write came from, as its journal record keeps it (`history.jsonl`).

An agent write made in a chat session carries its provenance: the session (id and title), the
approval mode it was made under, the untrusted sources its text may derive from (a file and line,
a command's output, a search, a context file, an attachment, a recalled item; none: the user's own
words) and whether the user approved it. It is display data derived once, when the write is made,
and bounded (a few sources, short one-line labels), so a record stays small; records written before
it existed have none. This module is the data and its words; `my_agent_core.trust` decides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "APPROVAL_MODES",
    "MAX_SOURCES",
    "SOURCE_KINDS",
    "ApprovalMode",
    "How",
    "Provenance",
    "SourceKind",
    "SourceRef",
    "clean_label",
    "describe_ref",
    "describe_refs",
]

ApprovalMode = Literal["untrusted", "ask", "auto"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)

#: What a piece of untrusted text was: the tool (or seam) that brought it into the session.
SourceKind = Literal[
    "file",  # read_file
    "search",  # search_text
    "listing",  # list_files
    "command",  # run_command
    "edit",  # edit_file / write_file (their results quote the file)
    "archive",  # memory_search: past chats and entries taken out of memory
    "tool",  # any other tool
    "context_file",  # AGENTS.md, CLAUDE.md, ... frozen into the system prompt
    "attachment",  # editor text sent with a user message
    "recall",  # the recalled items appended to a user message
    "summary",  # a compaction's summary of earlier messages
    "unindexed",  # more text than the session's index keeps (every write is then asked)
]
SOURCE_KINDS: tuple[SourceKind, ...] = get_args(SourceKind)
#: How the write relates to it: `copied` (shares a run of words with it), `read` (received in the
#: same turn, before the write).
How = Literal["copied", "read"]

MAX_SOURCES = 6
LABEL_CHARS = 120
TITLE_CHARS = 80
_ID_CHARS = 64


def clean_label(text: str, max_chars: int = LABEL_CHARS) -> str:
    """One printable line of at most `max_chars`: a path, a command or a query named in words
    (control and format characters become spaces, runs of spaces one; cut with `…`)."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class SourceRef:
    """One source a write may derive from: its kind, where (`README.md:5`, a command line, a
    query, `AGENTS.md:3`; already a clean one-line label) and how."""

    kind: SourceKind
    where: str
    how: How

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "how": self.how}

    @classmethod
    def from_json(cls, data: object) -> SourceRef | None:
        if not isinstance(data, Mapping):
            return None
        kind, where, how = data.get("kind"), data.get("where"), data.get("how")
        if kind not in SOURCE_KINDS or not isinstance(where, str) or how not in ("copied", "read"):
            return None
        return cls(kind, clean_label(where), how)


@dataclass(frozen=True, slots=True)
class Provenance:
    """The provenance of one agent write (see the module docstring). `sources` empty: the user's
    own words as far as the session can tell; `more`: sources beyond `MAX_SOURCES` not kept;
    `approved`: True when the user approved it, None when nobody was asked."""

    mode: ApprovalMode
    session: str | None = None
    title: str | None = None
    sources: tuple[SourceRef, ...] = field(default=())
    more: int = 0
    approved: bool | None = None

    @property
    def from_user(self) -> bool:
        """No untrusted source: the text is the user's own words (or the model's, from them)."""
        return not self.sources and not self.more

    def with_approval(self, approved: bool | None) -> Provenance:
        return Provenance(
            self.mode, self.session, self.title, self.sources, self.more, approved=approved
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mode": self.mode}
        if self.session is not None:
            data["session"] = self.session
        if self.title is not None:
            data["title"] = self.title
        data["origin"] = (
            "user" if self.from_user else "untrusted"
        )  # derived, for a reader of the file
        data["sources"] = [ref.to_json() for ref in self.sources]
        if self.more:
            data["more"] = self.more
        if self.approved is not None:
            data["approved"] = self.approved
        return data

    @classmethod
    def bounded(
        cls,
        mode: ApprovalMode,
        session: str | None,
        title: str | None,
        refs: list[SourceRef],
        approved: bool | None = None,
    ) -> Provenance:
        """A provenance within its bounds: copied sources first, duplicates dropped, at most
        `MAX_SOURCES` kept (the rest counted), labels and title one short line."""
        seen: set[tuple[str, str]] = set()
        copied_files = {_path_of(r.where) for r in refs if r.how == "copied" and r.kind == "file"}
        unique: list[SourceRef] = []
        for ref in sorted(refs, key=lambda r: r.how != "copied"):
            key = (ref.kind, ref.where)
            if ref.how == "read" and ref.kind == "file" and _path_of(ref.where) in copied_files:
                continue  # "README.md:4" copied says more than "README.md:1-40" read
            if key not in seen:
                seen.add(key)
                unique.append(SourceRef(ref.kind, clean_label(ref.where), ref.how))
        return cls(
            mode,
            clean_label(session, _ID_CHARS) if session else None,
            clean_label(title, TITLE_CHARS) if title else None,
            tuple(unique[:MAX_SOURCES]),
            max(0, len(unique) - MAX_SOURCES),
            approved,
        )

    @classmethod
    def from_json(cls, data: object) -> Provenance | None:
        """A record's provenance, or None when it has none or it is not shaped like one (a
        hand-edited line keeps its record; only the display data is dropped)."""
        if not isinstance(data, Mapping):
            return None
        mode = data.get("mode")
        if mode not in APPROVAL_MODES:
            return None
        raw = data.get("sources", [])
        if not isinstance(raw, list):
            return None
        refs = [ref for item in raw[: MAX_SOURCES * 4] if (ref := SourceRef.from_json(item))]
        more = data.get("more", 0)
        more = more if isinstance(more, int) and not isinstance(more, bool) and more > 0 else 0
        approved = data.get("approved")
        session, title = data.get("session"), data.get("title")
        made = cls.bounded(
            mode,
            session if isinstance(session, str) else None,
            title if isinstance(title, str) else None,
            refs,
            approved if isinstance(approved, bool) else None,
        )
        return Provenance(
            made.mode, made.session, made.title, made.sources, made.more + more, made.approved
        )


def _path_of(where: str) -> str:
    """`README.md` of `README.md:4` or `README.md:1-40` (a label without a line span as it is)."""
    path, sep, span = where.rpartition(":")
    return path if sep and span.replace("-", "").isdigit() else where


_PHRASES: dict[SourceKind, str] = {
    "file": "{where}",
    "search": "the search for {where}",
    "listing": "the file list of {where}",
    "command": "the output of `{where}`",
    "edit": "the result of editing {where}",
    "archive": "the archive search for {where}",
    "tool": "the result of the tool {where}",
    "context_file": "{where} (context file)",
    "attachment": "{where} (attached)",
    "recall": "recalled notes ({where})",
    "summary": "the summary of earlier messages",
    "unindexed": "the session's earlier reading (more than it can compare against)",
}


def describe_ref(ref: SourceRef) -> str:
    """A source in words: `README.md:5`, "the output of `make test`", "AGENTS.md:3 (context file)"."""
    return _PHRASES[ref.kind].format(where=ref.where)


def describe_refs(refs: tuple[SourceRef, ...] | list[SourceRef], more: int = 0) -> str:
    """Several sources in words, joined: `README.md:5, the output of `make` and 2 more`."""
    words = [describe_ref(ref) for ref in refs]
    if more:
        words.append(f"{more} more")
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"
