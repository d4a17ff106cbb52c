"""Provenance users can see (issue 19): each agent write's journal record keeps where its text came
from, bounded and tolerant of old and hand-edited lines; which record made each entry is derived
from the journal (an entry edited by hand says so); the same words in `my-agent memory log`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from my_agent_core.memory import MemoryStore, Operation
from my_agent_core.memory.journal import MAX_RECORDS, Journal, JournalRecord
from my_agent_core.memory.origins import (
    entry_origins,
    journal_records,
    origin_summary,
    record_summary,
)
from my_agent_core.memory.provenance import MAX_SOURCES, Provenance, SourceRef

COPIED = Provenance.bounded(
    "untrusted",
    "s1",
    "Fix the tests",
    [SourceRef("file", "README.md:5", "copied"), SourceRef("file", "README.md:1-40", "read")],
    approved=True,
)
OWN = Provenance.bounded("untrusted", "s1", "Fix the tests", [])
READ = Provenance.bounded("auto", "s2", "Deploy", [SourceRef("command", "make deploy", "read")])


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "ws" / ".my_agent_core" / "memory", author="agent:s1")


def add(store: MemoryStore, text: str, provenance: Provenance | None = None, **kw: str) -> None:
    store.apply("memory", [Operation("add", content=text)], provenance=provenance, **kw)


def test_a_write_keeps_its_provenance_in_the_journal(store: MemoryStore) -> None:
    add(store, "Run sync.sh first", COPIED)
    line = json.loads(store.journal_path.read_text(encoding="utf-8").splitlines()[-1])
    assert line["provenance"] == {
        "mode": "untrusted",
        "origin": "untrusted",
        "session": "s1",
        "title": "Fix the tests",
        "sources": [{"kind": "file", "where": "README.md:5", "how": "copied"}],
        "approved": True,
    }, "the read of README.md is said by the copy of its line"
    (record,) = Journal(store.journal_path).read()
    assert record.provenance == COPIED
    assert record.to_json()["provenance"] == line["provenance"]


def test_old_records_and_hand_edited_provenance_still_parse(store: MemoryStore) -> None:
    add(store, "one")
    stamp = time.time()
    lines = [
        {"id": "old1", "time": stamp, "action": "add", "target": "memory", "author": "agent"},
        {
            "id": "bad1",
            "time": stamp,
            "action": "add",
            "target": "memory",
            "author": "agent:x",
            "provenance": {"mode": "sometimes", "sources": "README"},
        },
        {
            "id": "bad2",
            "time": stamp,
            "action": "add",
            "target": "memory",
            "author": "agent:x",
            "provenance": {"mode": "auto", "sources": [{"kind": "evil", "where": 3}, "x"]},
        },
    ]
    with store.journal_path.open("a", encoding="utf-8") as handle:
        for item in lines:
            handle.write(json.dumps(item) + "\n")
    history = Journal(store.journal_path).history()
    records = {r.id: r for r in history.records}
    assert len(history.records) == 4 and len(history.items) == 4, "no line is damaged"
    assert records["old1"].provenance is None and records["bad1"].provenance is None
    assert records["bad2"].provenance == Provenance("auto", sources=())


def test_provenance_is_bounded() -> None:
    refs = [
        SourceRef("file", f"src/f{n}.py:{n}\n\x1b[31mred" + "x" * 500, "copied") for n in range(40)
    ]
    made = Provenance.bounded("untrusted", "s" * 200, "t" * 500, refs)
    assert len(made.sources) == MAX_SOURCES and made.more == 40 - MAX_SOURCES
    assert all(
        len(r.where) <= 120 and "\n" not in r.where and "\x1b" not in r.where for r in made.sources
    )
    assert made.title is not None and len(made.title) <= 80
    assert len(json.dumps(made.to_json())) < 2000
    record = JournalRecord("abc", 1.0, "add", "memory", "agent", provenance=made)
    assert Provenance.from_json(json.loads(record.to_line())["provenance"]) == made


def test_the_trim_keeps_provenance(store: MemoryStore) -> None:
    for n in range(MAX_RECORDS + 40):
        add(store, f"entry {n} " + "x" * 1500, COPIED)
        store.remove("memory", f"entry {n} ")
    kept = Journal(store.journal_path).read()
    assert len(kept) <= MAX_RECORDS
    adds = [r for r in kept if r.action == "add"]
    assert adds and all(r.provenance == COPIED for r in adds)


def test_each_entry_says_which_record_made_it(store: MemoryStore) -> None:
    add(store, "Run sync.sh first", COPIED)
    add(store, "User prefers tabs", OWN)
    add(store, "Deploy with make deploy", READ)
    panel = MemoryStore(store.mem_dir, author="user")
    panel.replace("memory", "tabs", "User prefers tabs, width 4")
    cli = MemoryStore(store.mem_dir, author="cli")
    cli.add("memory", "Release on Fridays")
    cli.remove("memory", "Release")
    cli.undo(author="cli")  # the remove undone: the entry is restored
    entries = store.state("memory").entries
    origins = entry_origins(journal_records(store.journal_path), "memory", entries)
    words = [origin_summary(o) for o in origins]
    day = _day()
    assert words == [
        f"added {day} by the chat 'Fix the tests' · text from README.md:5 · approved by you",
        f"changed {day} by you in the editor",
        f"added {day} by the chat 'Deploy' · written after reading the output of `make deploy` · "
        "not asked (memory approval: auto)",
        f"restored by an undo {day} by you (my-agent memory)",
    ]
    assert [o.known for o in origins] == ["recorded"] * 4


def test_an_entry_edited_by_hand_says_so(store: MemoryStore) -> None:
    add(store, "User prefers tabs", OWN)
    add(store, "Build with make", OWN)
    path = store.path("memory")
    path.write_text(path.read_text(encoding="utf-8").replace("make", "ninja"), encoding="utf-8")
    entries = store.state("memory").entries
    origins = entry_origins(journal_records(store.journal_path), "memory", entries)
    assert [origin_summary(o) for o in origins] == [
        f"added {_day()} by the chat 'Fix the tests' · your own words",
        "edited by hand (not in the history)",
    ]


def test_an_entry_older_than_the_history_kept(store: MemoryStore) -> None:
    store.mem_dir.mkdir(parents=True)
    store.path("memory").write_text("written before any history\n", encoding="utf-8")
    entries = store.state("memory").entries
    assert [o.known for o in entry_origins([], "memory", entries)] == ["unknown"]
    add(store, "Then the agent wrote", OWN)  # the file is now what the history says
    entries = store.state("memory").entries
    origins = entry_origins(journal_records(store.journal_path), "memory", entries)
    assert [origin_summary(o) for o in origins] == [
        "older than the history kept",
        f"added {_day()} by the chat 'Fix the tests' · your own words",
    ]


def test_an_undone_add_does_not_claim_the_entry(store: MemoryStore) -> None:
    add(store, "Planted note", COPIED)
    store.undo(author="user")
    path = store.path("memory")
    path.write_text("Planted note\n", encoding="utf-8")  # the user typed the same text back
    origins = entry_origins(journal_records(store.journal_path), "memory", ["Planted note"])
    assert origins[0].known == "hand"


def test_record_summaries_name_every_author() -> None:
    base = {"id": "a1", "time": time.time(), "action": "add", "target": "memory"}
    day = _day()
    cases = {
        "user": f"added {day} by you in the editor",
        "cli": f"added {day} by you (my-agent memory)",
        "vscode-lm:Visual Studio Code": f"added {day} by Visual Studio Code (language-model tool)",
        "mcp:claude-code\x1b[2J": f"added {day} by claude-code [2J (MCP)",
        "agent:abc": f"added {day} by the agent in a chat",
    }
    for author, words in cases.items():
        assert record_summary(JournalRecord.from_json({**base, "author": author})) == words
    year_ago = JournalRecord.from_json(
        {**base, "author": "user", "time": time.time() - 400 * 86400}
    )
    assert record_summary(year_ago).split(" by ")[0].split()[-1].isdigit(), "an older year is named"


def test_my_agent_memory_log_prints_the_words(store: MemoryStore, tmp_path: Path) -> None:
    add(store, "Run sync.sh first", COPIED)
    add(store, "User prefers tabs", OWN)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    out = subprocess.run(
        [sys.executable, "-m", "my_agent_core", "memory", "log", "--dir", str(store.mem_dir)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=60,
        check=True,
    ).stdout
    day = _day()
    assert (
        f"    added {day} by the chat 'Fix the tests' · text from README.md:5 · approved by you"
        in out
    )
    assert f"    added {day} by the chat 'Fix the tests' · your own words" in out
    as_json = subprocess.run(
        [
            sys.executable,
            "-m",
            "my_agent_core",
            "memory",
            "log",
            "--json",
            "--dir",
            str(store.mem_dir),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(as_json)[0]["provenance"]["sources"][0]["where"] == "README.md:5"


MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _day() -> str:
    """Today as the words say it (English month names whatever the locale)."""
    now = time.localtime()
    return f"{now.tm_mday} {MONTHS[now.tm_mon - 1]}"


def test_the_hover_shows_titles_and_file_names_as_text() -> None:
    """A chat title or a file name cannot become a link, an image or emphasis in the hover."""
    from my_agent_core.lsp.views import _plain

    shown = _plain("by the chat '[x](https://evil.example)' · text from ![i](//e/?d=1):5 · *a*")
    assert "\\[x\\]\\(https://evil.example\\)" in shown
    assert "\\!\\[i\\]" in shown and "\\*a\\*" in shown
    assert _plain("two\nlines") == "two lines"
