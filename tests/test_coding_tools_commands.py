"""run_command: approval first; exit code and output; a timeout, a cancel or an exit kills the
WHOLE process group (real grandchildren, checked in /proc); output is capped head and tail."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from my_agent_core.coding_tools import Decision, command_is_preapproved
from tests.test_coding_tools_helpers import *  # noqa: F403
from tests.test_coding_tools_helpers import Workspace


@pytest.fixture
def backend() -> str:
    return "python"


def running(pid: int) -> bool:
    """True while `pid` is a live process (a zombie waiting for its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def pid_in(text: str) -> int:
    return int(next(line for line in text.splitlines() if line.startswith("pid=")).split("=")[1])


def test_exit_code_stdout_and_stderr(workspace: Workspace) -> None:
    text = workspace.ok("run_command", command="echo out; echo err >&2; pwd; exit 3")
    lines = text.splitlines()
    assert lines[0] == "$ echo out; echo err >&2; pwd; exit 3"
    assert lines[1].startswith("exit code 3 · ")
    assert lines[2:] == ["stdout:", "out", str(workspace.root), "stderr:", "err"]
    [request] = workspace.approver.requests
    assert request.kind == "command" and request.detail == "echo out; echo err >&2; pwd; exit 3"
    assert request.cwd == workspace.root
    empty = workspace.ok("run_command", command="cat")  # stdin is closed: nothing can hang on it
    assert "exit code 0" in empty and "stdout: (empty)" in empty and "stderr: (empty)" in empty


def test_declined_command_does_not_run(workspace: Workspace) -> None:
    workspace.approver.decision = Decision.deny("user")
    error = workspace.fails("run_command", command="touch ran")
    assert "declined the command `touch ran`" in error and "Do not retry" in error
    assert not (workspace.root / "ran").exists()


def test_allowed_patterns_pre_approve_simple_commands_only(workspace: Workspace) -> None:
    workspace.build(allowed_commands=("echo *", "true"))
    assert "hi" in workspace.ok("run_command", command="echo   hi")
    workspace.ok("run_command", command="true")
    assert workspace.approver.requests == []
    workspace.ok("run_command", command="echo hi; touch chained")
    assert [r.command for r in workspace.approver.requests] == ["echo hi; touch chained"]
    assert [d.reason for _, d in workspace.decisions] == ["setting", "setting", "user"]


@pytest.mark.parametrize(
    ("command", "patterns", "expected"),
    [
        ("pytest -q", ("pytest*",), True),
        ("pytest  'tests/a b.py'", ("pytest *",), True),
        ("git status", ("git status",), True),
        ("git status --short", ("git status",), False),
        ("git status; rm -rf ~", ("git status*",), False),
        ("git status && curl x | sh", ("git status*",), False),
        ("echo $(id)", ("echo *",), False),
        ("echo `id`", ("echo *",), False),
        ("cat secrets > /tmp/x", ("cat *",), False),
        ("pytest\nrm -rf /", ("pytest*",), False),
        ("echo 'unclosed", ("echo *",), False),
        ("ls", (), False),
    ],
)
def test_command_is_preapproved(command: str, patterns: tuple[str, ...], expected: bool) -> None:
    assert command_is_preapproved(command, patterns) is expected


def test_timeout_kills_the_whole_group_including_a_grandchild(workspace: Workspace) -> None:
    workspace.build(kill_grace_s=0.5)
    # A child that ignores SIGTERM and its own sleep: only the group-wide SIGKILL stops them.
    error = workspace.fails(
        "run_command",
        command="bash -c 'trap \"\" TERM; sleep 300 & echo pid=$!; wait' & echo pid=$!; wait",
        timeout_s=1,
    )
    assert "did not finish within 1 s" in error and "process group were stopped" in error
    pids = [int(line[4:]) for line in error.splitlines() if line.startswith("pid=")]
    assert len(pids) == 2
    assert not any(running(pid) for pid in pids)


def test_cancel_during_a_command_stops_it(workspace: Workspace) -> None:
    started = threading.Event()

    def approve_then_stop(request: object) -> Decision:
        threading.Timer(0.5, workspace.cancel.set).start()
        started.set()
        return Decision.allow("user")

    workspace.approver.decide = approve_then_stop  # type: ignore[assignment]
    error = workspace.fails("run_command", command="sleep 300 & echo pid=$!; wait", timeout_s=600)
    assert started.is_set()
    assert "cancelled the turn" in error and "Do not run it again" in error
    assert not running(pid_in(error))


def test_background_leftovers_are_stopped_when_the_command_ends(workspace: Workspace) -> None:
    text = workspace.ok("run_command", command="sleep 300 >/dev/null 2>&1 & echo pid=$!")
    assert "exit code 0" in text and "left running in the background were stopped" in text
    assert not running(pid_in(text))
    # A background child that keeps the output pipe open does not hang the tool either.
    held = workspace.ok("run_command", command="sleep 300 & echo pid=$!")
    assert not running(pid_in(held))


def test_output_is_capped_keeping_head_and_tail(workspace: Workspace) -> None:
    workspace.build(command_output_bytes=2000)
    text = workspace.ok(
        "run_command", command="echo FIRST; seq 1 100000; echo LAST; printf '\\377\\n' >&2"
    )
    assert "FIRST" in text and "LAST" in text and "100000" in text
    assert "bytes cut from the middle" in text and len(text) < 3000
    assert "\ufffd" in text  # undecodable bytes are replaced, never an error


def test_timeout_argument_is_checked_and_clamped(workspace: Workspace) -> None:
    assert "positive" in workspace.fails("run_command", command="true", timeout_s=0)
    workspace.build(command_max_timeout_s=5)
    assert "5 s was used" in workspace.ok("run_command", command="true", timeout_s=99)
    assert "command is empty" in workspace.fails("run_command", command="  ")
    assert "must be number" in workspace.fails("run_command", command="true", timeout_s="10")


# ---- live output (the editor shows a running command's output) --------------------------------------


def test_a_listener_hears_the_output_while_the_command_runs(tmp_path: Path) -> None:
    from my_agent_core.coding_tools.commands import run_shell

    heard: list[tuple[str, str, float]] = []
    started = time.monotonic()

    def listen(stream: str, text: str) -> None:
        heard.append((stream, text, time.monotonic() - started))

    outcome = run_shell(
        "printf 'first\\n'; sleep 1; printf 'oops\\n' >&2; printf 'second\\n'",
        tmp_path,
        timeout_s=30,
        output_bytes=10_000,
        on_output=listen,
    )
    assert outcome.exit_code == 0
    stdout = "".join(text for stream, text, _ in heard if stream == "stdout")
    stderr = "".join(text for stream, text, _ in heard if stream == "stderr")
    assert stdout == "first\nsecond\n" and stderr == "oops\n"
    first_at = next(at for stream, text, at in heard if "first" in text)
    assert first_at < outcome.seconds - 0.5, "the first line came only at the end"


def test_without_a_listener_nothing_changes(tmp_path: Path) -> None:
    from my_agent_core.coding_tools.commands import run_shell

    outcome = run_shell("echo quiet", tmp_path, timeout_s=30, output_bytes=1000)
    assert outcome.stdout.text() == "quiet\n"


def test_live_output_is_decoded_cleaned_and_bounded() -> None:
    from my_agent_core.coding_tools.commands import LiveOutput

    heard: list[tuple[str, str]] = []
    live = LiveOutput(lambda stream, text: heard.append((stream, text)), interval=0, max_chars=50)
    euro = "€".encode()
    live.feed("stdout", b"price " + euro[:1])  # a character cut by the chunk boundary
    live.feed("stdout", euro[1:] + b" \x1b[3")  # ... and an escape sequence cut too
    live.flush()
    live.feed("stdout", b"1mred\x1b[0m\r\nline\rover\r")
    live.flush()
    live.feed("stdout", b"\n")
    live.flush(final=True)
    assert "".join(text for _, text in heard) == "price € red\nline\nover\n"
    assert all(
        "\x1b" not in text and "\r" not in text and "\ufffd" not in text for _, text in heard
    )

    heard.clear()
    live.feed("stderr", b"x" * 10_000 + b"END")  # a flood: only its latest part, with a note
    live.flush(final=True)
    [(stream, text)] = heard
    assert stream == "stderr" and text.endswith("xxEND") and "characters skipped" in text
    assert len(text) < 100


def test_live_output_waits_for_its_interval_and_a_failing_listener_is_harmless() -> None:
    from my_agent_core.coding_tools.commands import LiveOutput

    heard: list[str] = []
    live = LiveOutput(lambda _stream, text: heard.append(text), interval=3600)
    live.feed("stdout", b"one\n")
    live.flush()  # the first flush goes out at once
    live.feed("stdout", b"two\n")
    live.flush()  # within the interval: kept
    assert heard == ["one\n"]
    live.flush(final=True)
    assert heard == ["one\n", "two\n"]

    def broken(_stream: str, _text: str) -> None:
        raise RuntimeError("the editor went away")

    failing = LiveOutput(broken, interval=0)
    failing.feed("stdout", b"ignored\n")
    failing.flush(final=True)  # logged, never raised into the command's thread
