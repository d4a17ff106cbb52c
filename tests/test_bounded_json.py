"""Depth bombs: JSON nested 100,000 levels deep in any file we parse from disk (a session, the history
journal, a project's package.json) is refused as "not what this reader accepts", never a
`RecursionError` that takes a listing (and every chat of the folder) down. Each reader beside its
normal twin, and the one helper on its own."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from my_agent_core.agent import SessionStore
from my_agent_core.agent.sessions import SessionDamaged, SessionHeader
from my_agent_core.agent.sessions.signing import sign_header
from my_agent_core.bounded_json import MAX_DEPTH, JsonTooDeep, depth_exceeds, loads
from my_agent_core.context.manifests import npm_scripts
from my_agent_core.memory import MemoryStore
from my_agent_core.memory.journal import Journal

BOMB = 100_000


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


# ------------------------------------------------------------------------------ the helper


def test_depth_is_counted_outside_strings_only() -> None:
    assert loads(nested(MAX_DEPTH)) is not None  # exactly the bound: read
    with pytest.raises(JsonTooDeep, match="deeper than 100"):
        loads(nested(MAX_DEPTH + 1))
    text = json.dumps({"code": "[[[{{{" * 1000, "list": [[[1]]]})  # brackets in text are text
    assert loads(text)["list"] == [[[1]]]
    assert loads(text.encode()) == json.loads(text)  # bytes as well as text
    assert not depth_exceeds('"\\"[[[[' + "[" * 500 + '"')  # an escaped quote does not end it
    assert depth_exceeds('{"a":' * 200 + "1" + "}" * 200)


@pytest.mark.parametrize(
    "text",
    [nested(BOMB), '{"a":' * BOMB, '["' + '\\"' * BOMB, '"' * BOMB + "[" * BOMB, "[" * 10**6],
    ids=["arrays", "objects", "an unterminated string", "quotes then brackets", "a million"],
)
def test_bombs_and_broken_text_are_refused_not_crashed(text: str) -> None:
    with pytest.raises(ValueError):  # JsonTooDeep, or json's own error for broken text
        loads(text)


@given(
    st.recursive(
        st.none() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=30,
    )
)
def test_any_shallow_value_reads_as_json_reads_it(value: object) -> None:
    text = json.dumps(value)
    assert loads(text) == json.loads(text)


# ------------------------------------------------------------------------------ sessions


def session_with(folder: Path, session_id: str, line: bytes | None = None) -> Path:
    store = SessionStore(folder)
    writer = store.create(SessionHeader(session_id, str(folder), "m", "You help.", [], 1.0))
    writer.append({"t": "msg", "m": {"role": "user", "content": "hi"}})
    writer.commit({"t": "commit", "n": 1, "at": time.time() - 100, "title": session_id})
    writer.close()
    path = store.path(session_id)
    if line is not None:
        with path.open("ab") as handle:
            handle.write(line + b"\n")
    return path


def test_a_session_nested_100000_levels_is_listed_as_damaged_and_the_rest_still_work(
    tmp_path: Path,
) -> None:
    session_with(tmp_path, "normal")
    bomb = b'{"t":"msg","m":' + nested(BOMB).encode() + b"}"
    session_with(tmp_path, "deepmessage", bomb)
    # A deep header this machine signed (say, a newer my-agent's): the signature holds, the
    # parser still refuses it.
    header = b'{"t":"session","format":"my-agent-session","version":1,"x":' + nested(BOMB).encode()
    path = tmp_path / ".my_agent_core" / "sessions" / "deepheader.jsonl"
    path.write_bytes(sign_header(header + b"}\n"))
    path.chmod(0o600)
    # And one shipped unsigned: refused before a byte of it is parsed.
    shipped = tmp_path / ".my_agent_core" / "sessions" / "shipped.jsonl"
    shipped.write_bytes(nested(BOMB).encode() + b"\n")
    shipped.chmod(0o600)

    store = SessionStore(tmp_path)
    listed = {info.id: info for info in store.list()}
    assert set(listed) == {"normal", "deepmessage", "deepheader", "shipped"}
    assert listed["normal"].error is None and listed["normal"].title == "normal"
    for bad in ("deepmessage", "deepheader"):
        assert "nests deeper than 100 levels" in (listed[bad].error or "")
        with pytest.raises(SessionDamaged, match="nests deeper"):
            store.load(bad)
    assert "signature" in (listed["shipped"].error or "")
    assert store.latest() is not None and store.latest().id == "normal"
    assert store.load("normal").messages == [{"role": "user", "content": "hi"}]


# ------------------------------------------------------------------------------ the journal


def test_a_deep_journal_line_is_a_damaged_line_not_a_crash(tmp_path: Path) -> None:
    mem = tmp_path / "ws" / ".my_agent_core" / "memory"
    store = MemoryStore(mem, author="test")
    store.add("memory", "first fact")
    with (mem / "history.jsonl").open("a") as handle:
        handle.write('{"id":"x","changes":' + nested(BOMB) + "}\n")
    journal = Journal(mem / "history.jsonl")
    history = journal.history()
    assert [r.action for r in history.records] == ["add"]  # the normal twin, read
    assert len(history.items) == 2  # and the bomb kept in view as damage
    assert journal.newest() is not None and journal.newest().action == "add"
    store.add("memory", "second fact")  # writing goes on
    assert [r.action for r in Journal(mem / "history.jsonl").read()] == ["add", "add"]
    store.close()


# ------------------------------------------------------------------------------ package.json


def test_a_deep_package_json_means_we_cannot_tell() -> None:
    deep = npm_scripts('{"scripts": {"a": "x"}, "x": ' + nested(BOMB) + "}")
    assert not deep.complete and deep.knows("anything") is None
    normal = npm_scripts('{"scripts": {"a": "x"}, "x": ' + nested(20) + "}")
    assert normal.complete and normal.names == {"a"}


def test_every_disk_reader_goes_through_the_bounded_parser() -> None:
    """The readers of files from disk call `bounded_json.loads`, never `json.loads` directly."""
    root = Path(__file__).resolve().parents[1] / "server" / "my_agent_core"
    for relative in (
        "agent/sessions/format.py",
        "agent/sessions/store.py",
        "memory/journal.py",
        "context/manifests.py",
    ):
        text = (root / relative).read_text(encoding="utf-8")
        assert not re.search(r"\bjson\.loads?\(", text), relative
