"""The session file format: its records, their checks, and the parser that turns a file's bytes
into a `SessionRecord` (or says, naming the line, why it cannot).

Everything in a session file is data. The parser accepts only what this program writes: a header,
messages of the roles it sends (never `system`), rollbacks and compactions that fit the history, and
commits that match it; a history is trimmed to its last complete tool step (a crash inside a step).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...bounded_json import loads
from ..messages import Message

__all__ = [
    "FORMAT",
    "SUFFIX",
    "TITLE_CHARS",
    "VERSION",
    "SessionBusy",
    "SessionDamaged",
    "SessionError",
    "SessionHeader",
    "SessionInfo",
    "SessionNotFound",
    "SessionRecord",
    "check_header",
    "check_id",
    "encode_record",
    "is_session_id",
    "new_session_id",
    "parse_session",
    "title_of",
]

FORMAT = "my-agent-session"
VERSION = 1
SUFFIX = ".jsonl"
TITLE_CHARS = 80
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ROLES = frozenset({"user", "assistant", "tool"})


class SessionError(ValueError):
    """A session that cannot be listed, loaded or written; the message says why and what to do."""


class SessionNotFound(SessionError):
    """No persisted session has this id (the language server answers -32602)."""


class SessionDamaged(SessionError):
    """The file is not a session this program wrote (hand-edited, truncated inside, hostile)."""


class SessionBusy(SessionError):
    """The session is open in another window or process (its file is locked)."""


def new_session_id() -> str:
    """A fresh, unguessable session id (32 hex digits)."""
    return os.urandom(16).hex()


def check_id(session_id: object) -> str:
    """`session_id` when it can name a session file (letters, digits, `_`, `-`; at most 64)."""
    if not isinstance(session_id, str) or not _ID.fullmatch(session_id):
        shown = repr(session_id)[:80]
        raise SessionNotFound(
            f"{shown} is not a session id: ids are 1-64 letters, digits, `_` or `-`."
        )
    return session_id


def title_of(text: str) -> str:
    """A one-line title from the user's first message (control characters dropped)."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1] + "…"


@dataclass(frozen=True)
class SessionHeader:
    """What a session freezes when it starts: the exact system prompt and tool schemas it sends,
    its model and folder, the memory entries frozen into the prompt, and the caller's `meta`."""

    id: str
    folder: str
    model: str
    system_prompt: str
    tools: list[dict[str, Any]]
    created: float
    snapshot: dict[str, list[str]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {
            "t": "session",
            "format": FORMAT,
            "version": VERSION,
            "id": self.id,
            "folder": self.folder,
            "model": self.model,
            "created": self.created,
            "system": self.system_prompt,
            "tools": self.tools,
            "snapshot": self.snapshot,
            "meta": self.meta,
        }


@dataclass
class SessionRecord:
    """A persisted session as loaded: its header, its history (without the system message) as it
    was after the last record, and the meter's state at the last commit."""

    header: SessionHeader
    messages: list[Message]
    updated: float
    title: str
    usage: dict[str, Any] | None = None
    last_request: dict[str, Any] | None = None
    compactions: int = 0
    interrupted: bool = False  # the file ends inside a turn (a crash); what was valid is kept
    path: Path | None = None
    valid_bytes: int = 0  # the length of the file without a torn last line

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def system_prompt(self) -> str:
        return self.header.system_prompt

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.header.tools

    @property
    def model(self) -> str:
        return self.header.model


@dataclass(frozen=True)
class SessionInfo:
    """One line of a listing. `open`: an agent holds the session right now (any process).
    `error`: why the session cannot be resumed (damaged, or not signed here), else None.
    `signed`: False when the file is not proven to be this machine's (see signing.py): pruning
    never deletes such a file (a cloned repository's file is not ours to remove)."""

    id: str
    title: str
    created: float
    updated: float
    messages: int
    folder: str
    model: str
    open: bool = False
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    signed: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
            "messages": self.messages,
            "folder": self.folder,
            "model": self.model,
            "open": self.open,
            "error": self.error,
            "meta": self.meta,
            "signed": self.signed,
        }


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One line; UTF-8 as sent, with `\\u` escapes only if some text cannot be encoded."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return data + b"\n"


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_message(message: object) -> str | None:
    """Why `message` is not a chat message this program sends, or None."""
    if not isinstance(message, dict):
        return "a message is not an object"
    role = message.get("role")
    if role not in _ROLES:
        return f"a message has the role {str(role)[:20]!r}"
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return "a message's content is not text"
    if role == "tool" and (not isinstance(message.get("tool_call_id"), str) or content is None):
        return "a tool result has no call id or no text"
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list) or not calls:
            return "tool calls outside an assistant message"
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if not (
                isinstance(function, dict)
                and isinstance(call.get("id"), str)
                and isinstance(function.get("name"), str)
                and isinstance(function.get("arguments"), str)
            ):
                return "a tool call is malformed"
    elif content is None:
        return "a message has no content"
    return None


def check_header(data: object) -> SessionHeader:
    if not isinstance(data, dict) or data.get("t") != "session" or data.get("format") != FORMAT:
        raise SessionDamaged("its first line is not a my-agent session header")
    version = data.get("version")
    if version != VERSION:
        raise SessionDamaged(
            f"it is version {str(version)[:10]} of the session format; this my-agent reads "
            f"version {VERSION} (update my-agent to resume it)"
        )
    session_id, folder, model = data.get("id"), data.get("folder"), data.get("model")
    system, tools, created = data.get("system"), data.get("tools"), data.get("created")
    if not (
        isinstance(session_id, str)
        and _ID.fullmatch(session_id)
        and isinstance(folder, str)
        and isinstance(model, str)
        and isinstance(system, str)
        and isinstance(created, (int, float))
        and isinstance(tools, list)
        and all(
            isinstance(t, dict)
            and isinstance(t.get("function"), dict)
            and isinstance(t["function"].get("name"), str)
            for t in tools
        )
    ):
        raise SessionDamaged("its header lacks the id, folder, model, system prompt or tools")
    snapshot = data.get("snapshot")
    if snapshot is not None and not (
        isinstance(snapshot, dict) and all(_is_str_list(v) for v in snapshot.values())
    ):
        raise SessionDamaged("its memory snapshot is malformed")
    meta = data.get("meta")
    return SessionHeader(
        session_id,
        folder,
        model,
        system,
        tools,
        float(created),
        snapshot,
        meta if isinstance(meta, dict) else {},
    )


def _valid_end(history: list[Message]) -> int:
    """The length of the longest prefix of `history` whose tool calls all have their results (a
    crash mid-step leaves an assistant call without them: that step never happened). A result
    without its call, or a message between a call and its results, is damage."""
    pending: set[str] = set()
    start = 0
    for index, message in enumerate(history):
        if message.get("role") == "tool":
            if message["tool_call_id"] not in pending:
                raise SessionDamaged("its history has a tool result without its call")
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            raise SessionDamaged("its history has a tool call whose results are missing")
        if message.get("role") == "assistant" and message.get("tool_calls"):
            pending = {call["id"] for call in message["tool_calls"]}
            start = index
    return start if pending else len(history)


def parse_session(data: bytes, *, name: str) -> SessionRecord:
    """A session from its file's bytes; `SessionDamaged` (naming the line) for anything else."""
    valid = data.rfind(b"\n") + 1
    lines = data[:valid].split(b"\n")[:-1]
    if not lines:
        raise SessionDamaged(f"{name} holds no complete record; it cannot be resumed.")
    records: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        try:
            record = loads(raw, what="the record")
        except ValueError as exc:  # JsonTooDeep and UnicodeDecodeError are ValueErrors too
            raise SessionDamaged(
                f"{name}: line {number} is not JSON ({exc}); the session cannot be resumed and the "
                "file is left as it is."
            ) from None
        if not isinstance(record, dict):
            raise SessionDamaged(f"{name}: line {number} is not a record.")
        records.append(record)
    try:
        header = check_header(records[0])
    except SessionDamaged as exc:
        raise SessionDamaged(f"{name}: {exc}; it cannot be resumed.") from None
    history: list[Message] = []
    state = SessionRecord(header, history, header.created, "", valid_bytes=valid)
    committed = 0
    for number, record in enumerate(records[1:], start=2):
        problem = _apply(state, record)
        if problem:
            raise SessionDamaged(
                f"{name}: line {number}: {problem}; the session cannot be resumed and the file is "
                "left as it is."
            )
        if record.get("t") == "commit":
            committed = len(state.messages)
    try:
        end = _valid_end(state.messages)
    except SessionDamaged as exc:
        raise SessionDamaged(f"{name}: {exc}; it cannot be resumed.") from None
    state.interrupted = len(state.messages) != committed or end != len(state.messages)
    del state.messages[end:]
    return state


def _apply(state: SessionRecord, record: dict[str, Any]) -> str | None:
    kind = record.get("t")
    if kind == "msg":
        problem = _check_message(record.get("m"))
        if problem:
            return problem
        state.messages.append(record["m"])
    elif kind == "cut":
        n = record.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(state.messages):
            return "a rollback to a point the history never had"
        del state.messages[n:]
    elif kind == "compact":
        messages = record.get("m")
        if not isinstance(messages, list):
            return "a compaction without its history"
        for message in messages:
            problem = _check_message(message)
            if problem:
                return problem
        state.messages[:] = messages
        state.compactions += 1
    elif kind == "commit":
        n, at = record.get("n"), record.get("at")
        if n != len(state.messages) or not isinstance(at, (int, float)):
            return "a turn's end that does not match its history"
        state.updated = float(at)
        title = record.get("title")
        if isinstance(title, str):
            state.title = title_of(title)
        usage, last = record.get("usage"), record.get("last")
        state.usage = usage if isinstance(usage, dict) else state.usage
        state.last_request = last if isinstance(last, dict) else state.last_request
    else:
        return f"an unknown record {str(kind)[:20]!r}"
    return None


def is_session_id(text: str) -> bool:
    """True when `text` can name a session file."""
    return bool(_ID.fullmatch(text))
