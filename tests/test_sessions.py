"""Sessions persisted as they go and resumed byte for byte, against the real fake server and real
files: a new Agent object from the file, torn and damaged files, hostile files, a crash inside a
turn (a killed process), a full disk, locks held by another process, pruning."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from my_agent_core.agent import (
    Agent,
    SessionBusy,
    SessionDamaged,
    SessionError,
    SessionNotFound,
    SessionStore,
)
from my_agent_core.agent.sessions.signing import sign_header
from my_agent_core.memory import MemoryStore
from my_agent_core.memory.render import ContextDocument, render_context_block
from my_agent_core.paths import PathRefused
from my_agent_core.tools import Tool, tool
from tests.support.fake_openai import prefix_extension_problem
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import assert_prefix_chain, assert_valid_history, tool_call
from tests.support.real_conditions import fill_disk, held_lock, tiny_disk

ROOT = Path(__file__).resolve().parents[1]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def lookup_v2() -> Tool:
    """The same tool name with another description and handler (the code changed since)."""
    return Tool(
        "lookup",
        "Look a key up (new wording).",
        {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        lambda args: f"v2:{args['key']}",
    )


def mem(action: str, **fields: str) -> dict:
    return tool_call("memory", {"target": "memory", "action": action, **fields})


def bodies(fake) -> list[bytes]:
    return [r.body for r in fake.completion_requests]


def resign(header: bytes) -> bytes:
    """A header line as this machine would sign it (its old signature, if any, dropped)."""
    body = re.sub(rb',"mac":"[0-9a-f]{64}"\}$', b"}", header)
    return sign_header(body + b"\n").rstrip(b"\n")


def session_file(store: SessionStore, agent: Agent) -> Path:
    return store.path(agent.session_id)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def store(folder: Path) -> SessionStore:
    return SessionStore(folder)


def test_resume_in_a_new_agent_extends_the_last_request_byte_for_byte(
    fake, client, folder, store
) -> None:
    mem_dir = folder / ".my_agent_core" / "memory"
    context = render_context_block([ContextDocument("AGENTS.md", "Run `make test`.")])
    first = Agent(
        model="fake-model",
        client=client,
        memory_dir=mem_dir,
        tools=[lookup],
        sessions=store,
        context_block=context,
        session_meta={"memory": True},
    )
    fake.add(
        {"tool_calls": [tool_call("lookup", {"key": "a"}), mem("add", content="Tests: make test")]},
        {"content": "Looked it up."},
        {"content": "Second answer."},
    )
    first.run("What is a? Also remember the test command.")
    first.run("And then?")
    prompt, schemas, history = first.system_prompt, first.tool_schemas, first.messages
    last_before = len(fake.completion_requests) - 1
    first.close()

    # Meanwhile: memory changes on disk, the context file and the tool's description change.
    MemoryStore(mem_dir).add("memory", "Written by another window")
    record = store.load(first.session_id)
    assert record.system_prompt == prompt and record.tools == schemas
    assert record.messages == history[1:]
    assert record.title == "What is a? Also remember the test command."
    assert not record.interrupted

    resumed = Agent.resume(
        record,
        sessions=store,
        client=client,
        model="fake-model",
        tools=[lookup_v2()],
        memory_store=MemoryStore(mem_dir),
        context_block=render_context_block([ContextDocument("AGENTS.md", "Changed!")]),
    )
    assert resumed.system_prompt == prompt  # the ORIGINAL frozen prompt, not a new snapshot
    assert resumed.tool_schemas == schemas
    assert resumed.messages == history
    assert resumed.session_id == first.session_id
    assert resumed.session_meta == {"memory": True}
    assert "Written by another window" not in resumed.system_prompt
    assert resumed.snapshot_entries("memory") == []  # what THIS prompt froze (empty then)
    fake.add({"tool_calls": [tool_call("lookup", {"key": "b"})]}, {"content": "Third."})
    assert resumed.run("Look up b") == "Third."
    sent = bodies(fake)
    assert prefix_extension_problem(sent[last_before], sent[last_before + 1]) is None
    assert_prefix_chain(sent)
    # The handler bound by name is the current one; the schema sent is still the persisted one.
    assert json.loads(sent[-1])["messages"][-1]["content"] == "v2:b"
    assert json.loads(sent[-1])["tools"] == schemas
    # Memory written meanwhile reaches the next NEW session.
    assert (
        "Written by another window"
        in Agent(model="m", client=client, memory_dir=mem_dir).system_prompt
    )
    resumed.close()
    again = store.load(first.session_id)
    assert again.messages == resumed.messages[1:]
    assert_valid_history([{"role": "system", "content": prompt}, *again.messages])


def test_a_persisted_tool_that_no_longer_exists_is_an_unknown_tool(
    fake, client, folder, store
) -> None:
    first = Agent(model="m", client=client, memory_dir=False, tools=[lookup], sessions=store)
    fake.add({"content": "hi"})
    first.run("hello")
    first.close()
    resumed = Agent.resume(store.load(first.session_id), sessions=store, client=client)
    fake.add({"tool_calls": [tool_call("lookup", {"key": "x"})]}, {"content": "ok"})
    resumed.run("use it")
    tool_result = json.loads(bodies(fake)[-1])["messages"][-1]
    assert tool_result["content"].startswith("Error: Unknown tool `lookup`")
    assert json.loads(bodies(fake)[-1])["tools"] == first.tool_schemas


def test_no_file_until_the_first_message_and_reset_starts_a_new_one(
    fake, client, folder, store
) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    assert not (folder / ".my_agent_core").exists()
    fake.add({"content": "one"}, {"content": "two"})
    agent.run("first session")
    old_id = agent.session_id
    agent.reset()
    assert agent.session_id != old_id
    agent.run("second session")
    listed = store.list()
    assert [info.title for info in listed] == ["second session", "first session"]
    assert [info.messages for info in listed] == [2, 2]
    assert listed[0].open and not listed[1].open  # the old file was released by reset()
    directory = folder / ".my_agent_core" / "sessions"
    assert directory.stat().st_mode & 0o777 == 0o700
    assert session_file(store, agent).stat().st_mode & 0o777 == 0o600
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    status = subprocess.run(
        ["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ".jsonl" not in status


def test_failed_turns_do_not_come_back_on_resume(fake, client, folder, store) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, tools=[lookup], sessions=store)
    fake.add(
        {"content": "one"},
        {"status": 500, "error": {"message": "down"}},  # no request of the turn completed
        {"tool_calls": [tool_call("lookup", {"key": "k"})]},
        {"status": 500, "error": {"message": "down again"}},  # after a completed tool step
    )
    agent.run("first")
    for text in ("second", "third"):
        with pytest.raises(Exception, match="500"):
            agent.run(text)
    live = agent.messages
    assert [m["role"] for m in live] == ["system", "user", "assistant", "user", "assistant", "tool"]
    agent.close()
    record = store.load(agent.session_id)
    assert record.messages == live[1:]
    assert "second" not in json.dumps(record.messages)
    resumed = Agent.resume(record, sessions=store, client=client, tools=[lookup])
    fake.add({"content": "recovered"})
    assert resumed.run("fourth") == "recovered"
    assert_prefix_chain(fake.completion_requests)


def test_a_torn_last_line_is_ignored_and_cut_off(fake, client, folder, store) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.add({"content": "one"})
    agent.run("first")
    agent.close()
    path = session_file(store, agent)
    whole = path.read_bytes()
    with open(path, "ab") as handle:  # a crash in the middle of a write
        handle.write(b'{"t":"msg","m":{"role":"user","content":"half a rec')
    record = store.load(agent.session_id)
    assert record.messages == agent.messages[1:]
    assert store.list()[0].messages == 2
    resumed = Agent.resume(record, sessions=store, client=client)
    assert path.read_bytes() == whole  # the torn bytes were cut off, nothing else
    fake.add({"content": "two"})
    resumed.run("second")
    resumed.close()
    assert [m["content"] for m in store.load(agent.session_id).messages] == [
        "first",
        "one",
        "second",
        "two",
    ]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines: lines.__setitem__(2, b"{not json"), "line 3 is not JSON"),
        (
            lambda lines: lines.__setitem__(2, b'{"t":"msg","m":{"role":"system","content":"x"}}'),
            "line 3: a message has the role 'system'",
        ),
        (lambda lines: lines.__setitem__(2, b'{"t":"cut","n":99}'), "line 3: a rollback"),
        (lambda lines: lines.__setitem__(2, b'{"t":"weird"}'), "unknown record 'weird'"),
        (  # a newer my-agent on this machine signs what it writes: the version is what stops it
            lambda lines: lines.__setitem__(
                0, resign(lines[0].replace(b'"version":1', b'"version":9'))
            ),
            "version 9 of the session format",
        ),
        (
            lambda lines: lines.__setitem__(0, resign(b'{"t":"msg"}')),
            "not a my-agent session header",
        ),
        (  # an edited header no longer carries this machine's signature
            lambda lines: lines.__setitem__(0, lines[0].replace(b'"model":"m"', b'"model":"x"')),
            "not written by my-agent for you on this machine",
        ),
    ],
)
def test_a_hand_damaged_file_is_a_clear_error_and_left_alone(
    fake, client, folder, store, damage, message
) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.add({"content": "one"})
    agent.run("first")
    agent.close()
    path = session_file(store, agent)
    lines = path.read_bytes().split(b"\n")
    damage(lines)
    path.write_bytes(b"\n".join(lines))
    later = time.time() + 60  # a hand edit comes after the session's last commit
    os.utime(path, (later, later))
    damaged = path.read_bytes()
    with pytest.raises(SessionDamaged, match=message):
        store.load(agent.session_id)
    (info,) = store.list()
    assert info.error is not None and info.id == agent.session_id
    assert store.latest() is None  # nothing resumable
    assert path.read_bytes() == damaged


def test_files_this_user_did_not_write_here_are_refused(fake, client, folder, store) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.add({"content": "one"})
    agent.run("first")
    agent.close()
    path = session_file(store, agent)
    directory = path.parent
    # A session file shipped in a cloned repository is not owner-only.
    shipped = directory / "a1b2c3.jsonl"
    shipped.write_bytes(path.read_bytes().replace(agent.session_id.encode(), b"a1b2c3"))
    shipped.chmod(0o644)
    with pytest.raises(SessionDamaged, match="owner-only"):
        store.load("a1b2c3")
    # A link, a FIFO (never opened blocking), a file far too large.
    (directory / "linked.jsonl").symlink_to(path)
    with pytest.raises(SessionDamaged, match="not a regular file"):
        store.load("linked")
    os.mkfifo(directory / "fifo.jsonl", 0o600)
    with pytest.raises(SessionDamaged, match="not a regular file"):
        store.load("fifo")
    huge = directory / "huge.jsonl"
    header = path.read_bytes().split(b"\n")[0].replace(agent.session_id.encode(), b"huge")
    with open(huge, "wb") as handle:  # signed here (else it is refused unread), then too large
        handle.write(resign(header) + b"\n")
        handle.truncate(65 * 1024 * 1024)  # sparse: cheap, and still over the bound
    huge.chmod(0o600)
    with pytest.raises(SessionError, match="more than"):
        store.load("huge")
    listed = {info.id: info for info in store.list()}
    assert set(listed) == {agent.session_id, "huge"}  # the refused ones are not even listed
    assert listed["huge"].error is not None
    pruned = store.prune(now=time.time() + 10 * 365 * 86400)
    assert set(pruned) == {agent.session_id, "huge"}
    assert shipped.exists() and (directory / "fifo.jsonl").exists()  # never touched: not ours
    with pytest.raises(SessionNotFound):
        store.load("../../etc/passwd")
    with pytest.raises(SessionNotFound):
        store.load("nothing-here")


def test_a_linked_sessions_folder_is_refused(client, tmp_path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    (ws / ".my_agent_core").mkdir(parents=True)
    (ws / ".my_agent_core" / "sessions").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathRefused, match="link"):
        SessionStore(ws).list()


def test_an_agent_whose_session_cannot_be_saved_keeps_chatting(fake, client, tmp_path) -> None:
    ws = tmp_path / "ws"
    (ws / ".my_agent_core").mkdir(parents=True)
    (ws / ".my_agent_core" / "sessions").symlink_to(tmp_path, target_is_directory=True)
    events: list[dict] = []
    agent = Agent(
        model="m",
        client=client,
        memory_dir=False,
        sessions=SessionStore(ws),
        on_event=events.append,
    )
    fake.add({"content": "still here"})
    assert agent.run("hi") == "still here"
    errors = [e for e in events if e["kind"] == "session_error"]
    assert len(errors) == 1 and "not saved" in errors[0]["message"]


def test_a_crash_inside_a_turn_keeps_what_is_valid(fake, client, folder, store) -> None:
    """A real process killed with SIGKILL while a tool runs: the file ends with the assistant's tool
    call and no result; the resumed session drops that step and continues validly."""
    fake.add(
        {"content": "one"},
        {"tool_calls": [tool_call("slow", {}, "c9")]},
    )
    script = textwrap.dedent(
        f"""
        import sys, time, openai
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "server")!r}]
        from my_agent_core.agent import Agent, SessionStore
        from my_agent_core.tools import tool

        @tool
        def slow() -> str:
            "Takes forever."
            print("tool running", flush=True)
            time.sleep(600)
            return "never"

        client = openai.OpenAI(base_url={fake.base_url!r}, api_key="k", max_retries=0)
        agent = Agent(model="m", client=client, memory_dir=False, tools=[slow],
                      sessions=SessionStore({str(folder)!r}))
        agent.run("first")
        print(agent.session_id, flush=True)
        agent.run("second")
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        session_id = process.stdout.readline().strip()
        assert process.stdout.readline().strip() == "tool running"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    record = store.load(session_id)
    assert record.interrupted
    assert [m["role"] for m in record.messages] == ["user", "assistant", "user"]
    resumed = Agent.resume(record, sessions=store, client=client)
    fake.add({"content": "after the crash"})
    assert resumed.run("third") == "after the crash"
    sent = json.loads(bodies(fake)[-1])["messages"]
    assert [m.get("content") for m in sent[1:]] == ["first", "one", "second", "third"]
    assert_valid_history(sent)
    resumed.close()
    again = store.load(session_id)
    assert not again.interrupted and len(again.messages) == 5


def test_one_session_is_held_by_one_agent_at_a_time(fake, client, folder, store) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.add({"content": "one"})
    agent.run("first")
    record = store.load(agent.session_id)
    with pytest.raises(SessionBusy, match="open in another window"):
        Agent.resume(record, sessions=store, client=client)
    with pytest.raises(SessionBusy):
        store.delete(agent.session_id)
    agent.close()
    resumed = Agent.resume(store.load(agent.session_id), sessions=store, client=client)
    resumed.close()
    store.delete(agent.session_id)
    with pytest.raises(SessionNotFound):
        store.load(agent.session_id)


def test_a_lock_held_by_another_process_refuses_resume_and_pruning(fake, client, folder) -> None:
    store = SessionStore(folder, max_count=1)
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.add({"content": "one"}, {"content": "two"})
    agent.run("first")
    agent.close()
    path = session_file(store, agent)
    with held_lock(path):
        assert store.list()[0].open
        with pytest.raises(SessionBusy):
            Agent.resume(store.load(agent.session_id), sessions=store, client=client)
        other = Agent(model="m", client=client, memory_dir=False, sessions=store)
        other.run("another session")  # creating it prunes beyond max_count=1 ...
        assert path.exists()  # ... but never a session that is open somewhere
        other.close()
    assert store.prune() == [agent.session_id]


def test_listing_and_pruning_by_count_and_age(fake, client, folder) -> None:
    start = time.time()
    now = [start]
    store = SessionStore(folder, max_count=3, max_age_days=1)
    fake.load_script({"default": {"content": "ok"}})
    ids = []
    for number, age_hours in enumerate([60, 30, 5, 2, 1]):
        now[0] = start - age_hours * 3600
        agent = Agent(
            model="m", client=client, memory_dir=False, sessions=store, clock=lambda: now[0]
        )
        agent.run(f"session {number}\nsecond line")
        agent.close()
        ids.append(agent.session_id)
    # Creating each session pruned: sessions 0 and 1 are older than a day, and not open.
    listed = store.list()
    assert [info.title for info in listed] == [
        "session 4 second line",
        "session 3 second line",
        "session 2 second line",
    ]
    assert listed[0].messages == 2 and listed[0].model == "m" and listed[0].folder == str(folder)
    assert listed[0].updated == start - 3600
    # Never an open one, nor one the caller keeps: only beyond the count or the age.
    held = Agent.resume(store.load(ids[2]), sessions=store, client=client, clock=lambda: now[0])
    store.max_count = 1
    assert store.prune(keep=[ids[3]], now=start) == []  # ids[2] open, ids[3] kept
    held.close()
    assert store.prune(keep=[ids[3]], now=start) == [ids[2]]
    assert store.prune(now=start + 2 * 86400) == [ids[4], ids[3]]


def test_the_listing_reads_only_the_ends_of_a_file(fake, client, folder, store) -> None:
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.load_script({"default": {"content": "x" * 20_000, "chunk_size": 4000}})
    for number in range(20):  # far more than the listing's tail window
        agent.run(f"message {number}")
    agent.close()
    path = session_file(store, agent)
    assert path.stat().st_size > 300_000
    (info,) = store.list()
    assert info.messages == 40 and info.title == "message 0"
    assert info.messages == len(store.load(agent.session_id).messages)
    # Proof that the middle is not read: damage it without touching the file's time.
    at = path.stat().st_mtime
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4] = b"\x00\x00\x00\x00"
    path.write_bytes(bytes(data))
    os.utime(path, (at, at))
    assert store.list()[0].error is None
    with pytest.raises(SessionDamaged):
        store.load(agent.session_id)


def test_a_full_disk_keeps_the_chat_going_and_saves_once_there_is_room(
    fake, client, tmp_path
) -> None:
    with tiny_disk(tmp_path / "disk", size=512 * 1024) as disk:
        store = SessionStore(disk)
        events: list[dict] = []
        agent = Agent(
            model="m", client=client, memory_dir=False, sessions=store, on_event=events.append
        )
        fake.load_script({"default": {"content": "r" * 2000}})
        agent.run("before the disk fills")
        filler = fill_disk(disk)
        for number in range(3):
            agent.run(f"on a full disk {number}")
        errors = [e for e in events if e["kind"] == "session_error"]
        assert len(errors) == 1 and "goes on in memory" in errors[0]["message"]
        assert agent.persist_error is not None
        # The file is a valid prefix meanwhile: what was written loads.
        partial = store.load(agent.session_id)
        assert partial.messages == agent.messages[1 : len(partial.messages) + 1]
        filler.unlink()
        agent.run("room again")
        assert agent.persist_error is None
        agent.close()
        assert store.load(agent.session_id).messages == agent.messages[1:]


def test_a_writer_nobody_closed_releases_the_session(fake, client, folder, store) -> None:
    import gc

    agent = Agent(model="m", client=client, memory_dir=False, sessions=store)
    fake.add({"content": "one"})
    agent.run("first")
    session_id = agent.session_id
    assert store.list()[0].open
    del agent
    gc.collect()
    assert not store.list()[0].open
    Agent.resume(store.load(session_id), sessions=store, client=client).close()


def test_a_session_with_a_big_system_prompt_is_listed(fake, client, folder, store) -> None:
    block = "<PROJECT_CONTEXT>\n" + "A long context file line.\n" * 5000 + "</PROJECT_CONTEXT>"
    agent = Agent(model="m", client=client, memory_dir=False, sessions=store, context_block=block)
    fake.add({"content": "one"})
    agent.run("first")
    agent.close()
    assert session_file(store, agent).read_bytes().index(b"\n") > 100_000  # the header line
    (info,) = store.list()
    assert (info.title, info.messages, info.error) == ("first", 2, None)
    assert store.load(agent.session_id).system_prompt == agent.system_prompt
