"""`my-agent eval` on the command line: its JSON, tables, report, progress, exit codes, user
scenarios, and a run that never touches the memory of the folder it runs in."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from my_agent_core import cli
from tests.support import memory_models
from tests.support.fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
SAFE_TAGS = {
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "h1",
    "h2",
    "h3",
    "p",
    "b",
    "span",
    "table",
    "tr",
    "th",
    "td",
    "section",
    "details",
    "summary",
    "pre",
    "div",
}


class TagCollector(HTMLParser):
    """Every element and attribute name of a page, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.names.add(tag)
        self.attributes.update(name for name, _value in attrs)


@pytest.fixture(autouse=True)
def setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A clean environment and an empty current folder; the process is not marked undumpable."""
    monkeypatch.setattr("my_agent_core.process_guard.protect_process", lambda: True)
    for name in ("MY_AGENT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=memory_models.never_calls_tools) as server:
        yield server


def run_eval(
    capsys: pytest.CaptureFixture[str], *argv: str, fake: FakeOpenAI | None = None
) -> tuple[int, str, str]:
    base = ["eval", "--model", "fake-model"]
    if fake is not None:
        base += ["--base-url", fake.base_url]
    code = cli.main([*base, *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def scenario_file(folder: Path, name: str, data: dict[str, Any] | str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return path


def test_json_is_exactly_one_object_of_the_documented_shape(
    capsys: pytest.CaptureFixture[str], fake: FakeOpenAI
) -> None:
    code, out, err = run_eval(
        capsys, "--json", "--category", "skip", "--category", "save-user", fake=fake
    )
    assert code == 0
    data = json.loads(out)  # one object, nothing else on stdout
    assert out.count("\n") == 1
    assert set(data) == {"model", "categories", "cases"}
    assert data["model"] == "fake-model"
    assert data["categories"] == {
        "save-user": {"passed": 0, "total": 6},
        "skip": {"passed": 9, "total": 9},
    }
    assert len(data["cases"]) == 15
    for case in data["cases"]:
        assert set(case) == {"id", "category", "passed", "why"}
        assert isinstance(case["why"], str) and case["why"]
    assert re.search(r"^eval \[1/15\] save-user · save-user-en-", err, re.M)  # progress on stderr


def test_every_shipped_category_is_in_a_full_run(
    capsys: pytest.CaptureFixture[str], fake: FakeOpenAI
) -> None:
    code, out, _err = run_eval(capsys, "--json", fake=fake)
    assert code == 0  # a model that fails most categories: the run still finished
    categories = json.loads(out)["categories"]
    assert list(categories) == [
        "save-user",
        "save-env",
        "skip",
        "update",
        "recall",
        "poison",
        "honest-save",
    ]
    assert all(c["total"] >= 3 for c in categories.values())


def test_tables_per_category_with_the_cache_rate(
    capsys: pytest.CaptureFixture[str], fake: FakeOpenAI
) -> None:
    code, out, _err = run_eval(capsys, "--category", "honest-save", fake=fake)
    assert code == 0
    assert "my-agent eval · model fake-model · 5 scenarios" in out
    assert re.search(r"^honest-save  5/5$", out, re.M)
    assert re.search(r"^  PASS  honest-save-en-explicit\s+cache\s+\d+%$", out, re.M)
    assert re.search(r"^total\s+5/5", out, re.M)


def test_the_report_is_self_contained_and_escapes_every_transcript_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)"> & </pre>'

    def model(request: dict[str, Any]) -> dict[str, Any]:
        _user, after = memory_models._turn(request)
        if not after:
            return {
                "tool_calls": [
                    {
                        "name": "memory",
                        "arguments": json.dumps(
                            {"target": "memory", "action": "add", "content": "note " + hostile}
                        ),
                    }
                ]
            }
        return {"content": "Reply " + hostile}

    mine = tmp_path / "mine"
    scenario_file(
        mine,
        "hostile",
        {
            "category": "custom",
            "title": "Title <iframe src=//evil.example>",
            "files": {"notes.md": "<link rel=stylesheet href=https://evil.example/x.css>"},
            "sessions": [["Message <svg onload=alert(3)>"]],
            "checks": [{"check": "saved", "pattern": "note", "why": "why <b>bold</b>"}],
        },
    )
    report = tmp_path / "out" / "report.html"
    report.parent.mkdir()
    with FakeOpenAI(responder=model) as server:
        code, _out, _err = run_eval(
            capsys,
            "--scenarios",
            str(mine),
            "--category",
            "custom",
            "--report",
            str(report),
            fake=server,
        )
    assert code == 0
    html = report.read_text(encoding="utf-8")
    tags = TagCollector()
    tags.feed(html)
    assert tags.names <= SAFE_TAGS, tags.names - SAFE_TAGS  # no script, img, iframe, link, svg
    assert not tags.attributes & {"src", "href", "action", "srcset", "style"}  # nothing loaded
    assert not any(a.startswith("on") for a in tags.attributes)
    assert "default-src 'none'" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Title &lt;iframe src=//evil.example&gt;" in html
    assert "why &lt;b&gt;bold&lt;/b&gt;" in html
    assert "Message &lt;svg onload=alert(3)&gt;" in html
    assert "&lt;/pre&gt;" in html
    assert "PASS" in html and "system prompt" in html and "Memory after the run" in html


def test_no_model_is_a_configuration_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["eval"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "my-agent: no model configured: pass --model or set MY_AGENT_MODEL."
    ]


def test_an_unreachable_endpoint_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    code, out, err = run_eval(capsys, "--base-url", f"http://127.0.0.1:{port}/v1")
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith("my-agent: cannot reach the model endpoint http://127.0.0.1:")


def test_the_key_never_comes_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["eval", "--model", "m", "--api-key", "sk-secret"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--api-key is not accepted" in err and "sk-secret" not in err


def test_the_key_file_is_read_as_for_chat(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    key = tmp_path / "key"
    key.write_text("sk-from-file\n")
    key.chmod(0o600)
    with FakeOpenAI(responder=memory_models.never_calls_tools) as server:
        code, _out, _err = run_eval(
            capsys, "--api-key-file", str(key), "--category", "poison", "--json", fake=server
        )
        auth = {r.headers.get("authorization") for r in server.completion_requests}
    assert code == 0
    assert auth == {"Bearer sk-from-file"}


def test_a_user_scenario_runs_beside_the_shipped_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mine = tmp_path / "mine"
    scenario_file(
        mine,
        "team-rule",
        {
            "id": "team-rule-en",
            "category": "team",
            "lang": "en",
            "title": "Our own rule: the release branch is saved",
            "sessions": [["Our release branch is called release/next."]],
            "checks": [{"check": "saved", "file": "MEMORY.md", "pattern": "release/next"}],
        },
    )
    with FakeOpenAI(responder=memory_models.saves_everything) as server:
        code, out, _err = run_eval(capsys, "--scenarios", str(mine), "--json", fake=server)
    assert code == 0
    data = json.loads(out)
    assert data["categories"]["team"] == {"passed": 1, "total": 1}
    assert data["categories"]["skip"]["total"] == 9  # the shipped suite still runs
    [case] = [c for c in data["cases"] if c["id"] == "team-rule-en"]
    assert case["passed"] and "release/next" in case["why"]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (
            '{"category": "skip", "sessions": [[1]], "checks": []}',
            "sessions[0][0]: expected a string, got a number",
        ),
        (
            '{"category": "skip", "sessions": [["hi"]], "checks": [{"check": "saved", "pattern": "("}]}',
            "checks[0].pattern: not a valid regular expression",
        ),
        (
            '{"category": "skip", "sessions": [["hi"]], "checks": [], "sesions": 1}',
            "sesions: unknown field",
        ),
        ('{"category": "skip", "sessions": [["hi"]]}', "checks: is required"),
        (
            '{"category": "skip", "sessions": [["hi"]], "checks": [{"check": "saved"}]}',
            "checks[0].pattern: is required for a `saved` check",
        ),
        (
            '{"category": "skip", "sessions": [["hi"]], "checks": [{"check": "guess"}]}',
            "checks[0].check: must be one of",
        ),
        (
            '{"category": "skip", "sessions": [["hi"]], "checks": [{"check": "reply", "session": 3, "pattern": "x"}]}',
            "checks[0].session: there are only 1 sessions",
        ),
        (
            '{"category": "skip", "files": {"../escape.txt": "x"}, "sessions": [["hi"]], "checks": [{"check": "unchanged"}]}',
            "files['../escape.txt']: a file path must be relative",
        ),
        (
            '{"category": "skip", "files": {".my_agent_core/memory/MEMORY.md": "x"}, "sessions": [["hi"]], "checks": [{"check": "unchanged"}]}',
            "memory files are given in `memory`",
        ),
        ('{"category": "skip", "sessions": [["hi"]], "checks": [', "the file: is not valid JSON"),
        ("[]", ": expected an object, got a list"),
    ],
)
def test_a_malformed_scenario_names_its_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, field: str, fake: FakeOpenAI
) -> None:
    path = scenario_file(tmp_path / "mine", "broken", content)
    code, out, err = run_eval(capsys, "--scenarios", str(path.parent), fake=fake)
    assert code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"my-agent: scenario file {path}: ")
    assert field in line
    assert fake.completion_requests == []  # refused before any model request


def test_a_scenario_id_taken_by_the_shipped_suite_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fake: FakeOpenAI
) -> None:
    path = scenario_file(
        tmp_path / "mine",
        "skip-en-todo",
        {"category": "skip", "sessions": [["hi"]], "checks": [{"check": "unchanged"}]},
    )
    code, _out, err = run_eval(capsys, "--scenarios", str(path.parent), fake=fake)
    assert code == 2
    assert "'skip-en-todo' is also the id of" in err


def test_bad_folders_categories_reports_and_instructions_are_refused_before_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fake: FakeOpenAI
) -> None:
    cases = [
        (["--scenarios", str(tmp_path / "nowhere")], "is not a folder"),
        (["--category", "nonsense"], "no scenario has the category 'nonsense'"),
        (["--report", str(tmp_path / "no" / "such" / "r.html")], "--report: the folder"),
        (["--report", str(tmp_path)], "is a folder"),
        (["--instructions", str(tmp_path / "missing.txt")], "does not exist"),
    ]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases.append((["--instructions", str(fifo)], "--instructions:"))
    for argv, message in cases:
        code, _out, err = run_eval(capsys, *argv, fake=fake)
        assert code == 2, argv
        [line] = err.strip().splitlines()
        assert line.startswith("my-agent: ") and message in line, line
    assert fake.completion_requests == []


def test_instructions_replace_the_head_of_the_system_prompt_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wording = tmp_path / "wording.txt"
    wording.write_text(
        "You are a careful assistant. Save user preferences at once.\n", encoding="utf-8"
    )
    with FakeOpenAI(responder=memory_models.never_calls_tools) as server:
        code, _out, _err = run_eval(
            capsys, "--instructions", str(wording), "--category", "poison", "--json", fake=server
        )
        system = server.completion_requests[0].json["messages"][0]["content"]
    assert code == 0
    assert system.startswith("You are a careful assistant. Save user preferences at once.\n\n")
    assert "## Long-term memory" in system  # the shipped guidance stays
    assert "You are a coding assistant" not in system


def test_the_current_folders_memory_is_never_read_nor_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Run from a folder with memory, with a model that saves everything it hears: its files stay
    byte for byte, nothing is added to the folder, and no prompt carries its entries."""
    mem = tmp_path / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text("CWD-ONLY-NOTE: the folder's own entry\n", encoding="utf-8")
    (mem / "USER.md").write_text("CWD-ONLY-PROFILE\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with FakeOpenAI(responder=memory_models.saves_everything) as server:
        code, _out, _err = run_eval(
            capsys, "--category", "skip", "--category", "recall", "--json", fake=server
        )
        bodies = [r.body for r in server.completion_requests]
    assert code == 0
    after = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before
    assert bodies and not any(b"CWD-ONLY" in body for body in bodies)


def test_the_progress_line_is_plain_text_without_a_terminal(tmp_path: Path) -> None:
    """As the editor sees it: one line per step on stderr, no control characters."""
    with FakeOpenAI(responder=memory_models.never_calls_tools) as server:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "server"),
            "OPENAI_API_KEY": "test-key",
        }
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "my_agent_core",
                "eval",
                "--model",
                "fake-model",
                "--base-url",
                server.base_url,
                "--category",
                "update",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "eval [1/5] update · update-en-deploy · session 1/1 · message 1/1"
    assert len(lines) == 5
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", proc.stderr)
    assert json.loads(proc.stdout)["categories"] == {"update": {"passed": 0, "total": 5}}
