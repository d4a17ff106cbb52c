"""The chat events are one vocabulary on three sides: the agent's `AgentEvent` union, the server's
wire `ChatEvent` union (lsp/protocol_types.py) and the client's `ChatEvent` (client/src/protocol.ts).

mypy checks the agent -> wire conversion (`chat_event`); these tests check what mypy cannot see:
that the Python wire union and the TypeScript one name the same kinds and the same fields (required
or optional alike), and that the string vocabularies they carry (error kinds, approval kinds and
reasons, compaction and cache-drop reasons) are the same lists. protocol.ts is parsed, not run.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from my_agent_core.agent import ERROR_KINDS, EVENT_KINDS
from my_agent_core.agent import events as agent_events
from my_agent_core.lsp import protocol_types as wire

PROTOCOL_TS = Path(__file__).resolve().parents[2] / "client" / "src" / "protocol.ts"

Fields = dict[str, bool]  # field name -> optional


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside braces, brackets and parentheses."""
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _object_fields(body: str) -> Fields:
    """`{ a: T; b?: U }` (without its braces) -> {"a": False, "b": True}."""
    fields: Fields = {}
    for member in _split_top(body.replace("\n", " "), ";"):
        member = re.sub(r"/\*.*?\*/", "", member).strip()
        if not member:
            continue
        match = re.match(r"(\w+)(\??)\s*:", member)
        assert match, f"cannot read the member {member!r} of protocol.ts"
        fields[match.group(1)] = match.group(2) == "?"
    return fields


def _interface(source: str, name: str) -> Fields:
    """The fields of `interface name { ... }` (its `extends` included)."""
    match = re.search(rf"interface {name}(?: extends ([\w, ]+))?\s*\{{(.*?)\n\}}", source, re.S)
    assert match, f"protocol.ts has no interface {name}"
    fields: Fields = {}
    for base in (match.group(1) or "").split(","):
        if base.strip():
            fields.update(_interface(source, base.strip()))
    body = "\n".join(line.split("//")[0] for line in match.group(2).splitlines())
    fields.update(_object_fields(re.sub(r"/\*\*.*?\*/", "", body, flags=re.S)))
    return fields


def _union_members(source: str, name: str) -> list[str]:
    match = re.search(rf"export type {name} =(.*?);\n", source, re.S)
    assert match, f"protocol.ts has no type {name}"
    return _split_top(match.group(1), "|")


def ts_chat_events(source: str) -> dict[str, Fields]:
    """kind -> fields of each member of protocol.ts's `ChatEvent` union."""
    events: dict[str, Fields] = {}
    for member in _union_members(source, "ChatEvent"):
        inner = member.strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1]
        fields: Fields = {}
        kind = None
        for part in _split_top(inner, "&"):
            if part.startswith("{"):
                body = part[1:-1]
                kind_match = re.search(r"kind:\s*'(\w+)'", body)
                assert kind_match, f"a ChatEvent member without a kind: {member!r}"
                kind = kind_match.group(1)
                fields.update(_object_fields(body))
            else:
                fields.update(_interface(source, part))
        assert kind is not None and kind not in events, f"bad ChatEvent member {member!r}"
        events[kind] = fields
    return events


def ts_literals(source: str, name: str) -> list[str]:
    """The string literals of `export type name = 'a' | 'b'`."""
    members = _union_members(source, name)
    assert all(re.fullmatch(r"'\w+'", m) for m in members), f"{name} is not a string union"
    return [m.strip("'") for m in members]


def py_chat_events() -> dict[str, Fields]:
    events: dict[str, Fields] = {}
    for member in typing.get_args(wire.ChatEvent):
        hints = typing.get_type_hints(member)
        (kind,) = typing.get_args(hints["kind"])
        optional = member.__optional_keys__
        events[kind] = {name: name in optional for name in hints}
    return events


@pytest.fixture(scope="module")
def source() -> str:
    return PROTOCOL_TS.read_text(encoding="utf-8")


def test_the_wire_unions_name_the_same_kinds_and_fields(source: str) -> None:
    ts, py = ts_chat_events(source), py_chat_events()
    assert sorted(py) == sorted(ts), "ChatEvent kinds differ between Python and TypeScript"
    for kind, fields in ts.items():
        assert py[kind] == fields, f"`{kind}`: Python {py[kind]} vs TypeScript {fields}"


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("ErrorKind", wire.ErrorKind),
        ("ApprovalKind", wire.ApprovalKind),
        ("ApprovalReason", wire.ApprovalReason),
        ("CompactReason", wire.CompactReason),
        ("CacheDropReason", wire.CacheDropReason),
    ],
)
def test_the_wire_vocabularies_are_the_same_lists(source: str, name: str, values: object) -> None:
    assert list(typing.get_args(values)) == ts_literals(source, name)


def test_the_agent_speaks_the_wire_vocabulary() -> None:
    """Every agent event kind has a wire kind, every error kind is one the client knows."""
    assert sorted(EVENT_KINDS) == sorted(py_chat_events())
    agent_kinds = []
    for member in typing.get_args(agent_events.AgentEvent):
        (kind,) = typing.get_args(typing.get_type_hints(member)["kind"])
        agent_kinds.append(kind)
    assert sorted(agent_kinds) == sorted(EVENT_KINDS)
    assert list(ERROR_KINDS) == list(typing.get_args(wire.ErrorKind))


def test_the_parser_sees_a_drift() -> None:
    """The comparison is not vacuous: a renamed field, a missing kind, an optional made required."""
    base = PROTOCOL_TS.read_text(encoding="utf-8")
    py = py_chat_events()
    renamed = base.replace("kind: 'recall'; chars: number", "kind: 'recall'; characters: number")
    assert ts_chat_events(renamed)["recall"] != py["recall"]
    dropped = base.replace("\n    | (EventBase & { kind: 'session_error'; message: string })", "")
    assert "session_error" not in ts_chat_events(dropped)
    required = base.replace("journalId?: string })", "journalId: string })")
    assert ts_chat_events(required)["memory_changed"] != py["memory_changed"]
    assert ts_chat_events(base)["usage"] == {
        "sessionId": False,
        "kind": False,
        "cacheDrop": True,
        "promptTokens": False,
        "completionTokens": False,
        "cachedTokens": False,
    }
