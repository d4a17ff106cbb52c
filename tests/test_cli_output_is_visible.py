"""Nothing the command line shows can drive the terminal: hostile sequences x every output path.

Each path prints text that came from somewhere else (the model, a file of a cloned repository, a
command line, an archived turn, a session, memory). For every hostile sequence, no byte a terminal
acts on reaches stdout or stderr (tab and newline aside), and the sequence is shown as escapes; for
the benign twin (CJK, accents, an emoji joined by ZWJ), the text comes out exactly as it went in.
"""

from __future__ import annotations

import argparse
import io
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from my_agent_core import chat_cli
from my_agent_core.cli import main
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import *  # noqa: F403
from tests.support.fixtures import tool_call

SEQUENCES = {
    "erase line + CR": "\x1b[2K\r",
    "cursor up": "\x1b[3A",
    "OSC 52 clipboard": "\x1b]52;c;dG91Y2ggUFdORUQ=\x07",
    "bell": "\x07",
    "backspace": "\x08\x08\x08",
    "C1 CSI": "\x9b2K",
    "bidi override": "\u202e",
    "bidi isolate": "\u2067",
}
BENIGN = "中文 café 👨\u200d👩\u200d👧"


def raw_controls(text: str) -> list[str]:
    """Characters a terminal acts on, or that reorder what it shows."""
    return [
        ch
        for ch in text
        if (ch < " " and ch not in "\t\n")
        or "\x7f" <= ch <= "\x9f"
        or (unicodedata.category(ch) in ("Cf", "Zl", "Zp") and ch != "\u200d")
    ]


@dataclass
class Env:
    tmp: Path
    fake: FakeOpenAI
    capsys: pytest.CaptureFixture[str]

    def cli(self, *argv: str) -> str:
        main(list(argv))
        captured = self.capsys.readouterr()
        return captured.out + captured.err

    def chat(self, lines: list[str], *extra: str) -> str:
        parser = argparse.ArgumentParser()
        chat_cli.add_arguments(parser)
        args = parser.parse_args(["--model", "m", "--base-url", self.fake.base_url, *extra])
        out = io.StringIO()
        chat_cli.run(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)), stdout=out)
        return out.getvalue() + self.capsys.readouterr().err

    def memory_file(self, *entries: str) -> Path:
        folder = self.tmp / ".my_agent_core" / "memory"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "MEMORY.md"
        path.write_text("\n§\n".join(entries) + "\n", encoding="utf-8")
        return path


def file_name(text: str) -> str:
    return text.replace("/", "_")


def approval_of_a_command(env: Env, text: str) -> str:
    env.fake.add(
        {"tool_calls": [tool_call("run_command", {"command": f"touch PWNED{text}pytest -q"})]},
        {"content": "ok"},
    )
    shown = env.chat(["run the tests", "n", "/exit"], "--no-memory")
    assert "Run it? [y/N" in shown and not (env.tmp / "PWNED").exists()
    return shown


def approval_of_an_edit(env: Env, text: str) -> str:
    (env.tmp / "app.py").write_text("print('hi')\n", encoding="utf-8")
    edit = {"path": "app.py", "old_text": "print('hi')", "new_text": f"print('{text}')"}
    env.fake.add({"tool_calls": [tool_call("edit_file", edit)]}, {"content": "ok"})
    shown = env.chat(["change it", "n", "/exit"], "--no-memory")
    assert "Apply this change? [y/N" in shown
    return shown


def streamed_reply(env: Env, text: str) -> str:
    env.fake.add({"content": f"The answer {text} is 42.", "chunk_size": 3})
    return env.chat(["hi", "/exit"], "--no-memory")


def chat_reports(env: Env, text: str) -> str:
    """/memory (entries), /sessions (titles), an error from the endpoint, the resume report."""
    env.memory_file(f"Deploy {text} with make ship")
    env.fake.add(
        {"status": 500, "error": {"message": f"upstream {text} broke"}},
        {"content": f"last reply {text}"},
    )
    first = env.chat([f"title {text}", f"again {text}", "/memory", "/sessions", "/exit"])
    return first + env.chat(["/exit"], "--resume")


def memory_show(env: Env, text: str) -> str:
    env.memory_file(f"Note {text} end", "a safe entry")
    return env.cli("memory", "show") + env.cli("memory", "show", "--json")


def memory_log(env: Env, text: str) -> str:
    env.memory_file(f"Note {text} end", "a safe entry")
    env.cli("memory", "remove", "Note")
    return env.cli("memory", "log") + env.cli("memory", "log", "--json")


def memory_edit_messages(env: Env, text: str) -> str:
    env.memory_file(f"Note {text} end", f"Note {text} again")
    return env.cli("memory", "replace", "Note", "new text") + env.cli("memory", "undo")


def lint(env: Env, text: str) -> str:
    folder = env.tmp / file_name(f"ws {text}")
    mem = folder / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text(f"Run scripts/{file_name(text)}.sh first\n", encoding="utf-8")
    tight = ("--memory-limit", "10")  # a finding on every run: each line names the file's path
    return env.cli("lint", *tight, str(folder)) + env.cli(
        "lint", "--format=json", *tight, str(folder)
    )


def recall(env: Env, text: str) -> str:
    from my_agent_core.memory.providers.archive import ArchiveProvider

    archive = ArchiveProvider(env.tmp)
    archive.sync_turn(f"How do invoices {text} work?", f"Invoices {text} are numbered per year.")
    archive.shutdown()
    return (
        env.cli("recall", "invoices", "numbered")
        + env.cli("recall", "--list")
        + env.cli("recall", "--json", "invoices")
    )


def memory_import(env: Env, text: str) -> str:
    (env.tmp / "AGENTS.md").write_text(f"- Deploy with make ship and {text} check it.\n")
    source = env.tmp / file_name(f"notes {text}.md")
    source.write_text(f"- Deploy with make ship and {text} check it.\n- Item {text} two\n")
    return env.cli("memory", "import", str(source))


def merge_driver(env: Env, text: str) -> str:
    base = env.tmp / "base-is-a-folder"
    base.mkdir()
    ours = env.tmp / "ours.md"
    ours.write_text("a\n", encoding="utf-8")
    theirs = env.tmp / "theirs.md"
    theirs.write_text("b\n", encoding="utf-8")
    label = file_name(f"MEMORY {text}.md")
    return env.cli("merge-driver", str(base), str(ours), str(theirs), label)


def git_setup(env: Env, text: str) -> str:
    folder = env.tmp / file_name(f"not a repository {text}")
    folder.mkdir()
    return env.cli("git-setup", str(folder))


PATHS: dict[str, Callable[[Env, str], str]] = {
    f.__name__: f
    for f in (
        approval_of_a_command,
        approval_of_an_edit,
        streamed_reply,
        chat_reports,
        memory_show,
        memory_log,
        memory_edit_messages,
        lint,
        recall,
        memory_import,
        merge_driver,
        git_setup,
    )
}


#: Paths whose messages do not quote an unsafe entry at all (the store withholds it).
WITHHELD = {"memory_edit_messages"}


@pytest.fixture
def env(
    fake: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Env:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_AGENT_MEMORY_PROVIDER", "archive")
    return Env(tmp_path, fake, capsys)


@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_hostile_sequence_never_reaches_the_terminal(env: Env, path: str, sequence: str) -> None:
    text = SEQUENCES[sequence]
    shown = PATHS[path](env, f"<{text}>")
    assert raw_controls(shown) == [], (path, sequence, shown)
    if path not in WITHHELD:
        assert "<\\" in shown  # the sequence is shown as escapes, not dropped


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_benign_twin_comes_out_as_it_went_in(env: Env, path: str) -> None:
    shown = PATHS[path](env, f"<{BENIGN}>")
    assert f"<{BENIGN}>" in shown, (path, shown)
    assert raw_controls(shown) == []


def test_the_spoofed_approval_shows_what_will_run(env: Env) -> None:
    """The reported example: the prompt cannot be made to show `pytest -q` alone."""
    shown = approval_of_a_command(env, "\x1b[2K\r    ")
    assert "touch PWNED\\x1b[2K\\r    pytest -q" in shown
