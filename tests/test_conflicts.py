"""A memory file git left with conflict markers (a clone without the merge driver): the one parser
reads it the driver's way (both sides as entries, no marker line), so the store, the snapshot, the
linter's quick fix and the driver agree; every front end's write resolves it and says so; a file
without a conflict reads as before (benign twins); hostile marker shapes stay linear and bounded.

The conflicted files come from real git merges (both conflict styles), and literal texts for the
shapes git does not make."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import Implementation, TextContent

from my_agent_core.cli import main
from my_agent_core.mcp.server import build_server
from my_agent_core.memory import MemoryStore, make_memory_tool
from my_agent_core.memory.conflicts import MAX_DEPTH, find_conflicts, marker_lines
from my_agent_core.memory.document import parse
from my_agent_core.memory.lint import (
    CONFLICT_MARKER,
    NON_CANONICAL,
    LiveLint,
    apply_edits,
    lint,
    select_edits,
)
from my_agent_core.memory.merge import merge_texts
from my_agent_core.memory.merge_pairs import read_pairs
from tests.support.git_repo import MEMORY, GitRepo

BASE = [
    "A fact everyone keeps.",
    "The service deploys on Fridays from the release branch.",
    "Config lives in config/app.toml.",
]
OURS = [BASE[0], "The service deploys on Fridays from main.", BASE[2], "Tabs, not spaces."]
THEIRS = [
    BASE[0],
    "The service deploys on Thursdays from main.",
    BASE[2],
    "Release notes go in CHANGELOG.md.",
]
MARKER_START = ("<" * 7, "|" * 7, "=" * 7, ">" * 7)


def no_marker_line(text: str) -> bool:
    return not any(line.startswith(MARKER_START) for line in text.splitlines())


@pytest.fixture(scope="module")
def conflicted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """MEMORY.md as real git leaves it after a text merge, in each conflict style; and what the
    driver makes of the same three versions."""
    tmp = tmp_path_factory.mktemp("conflicts")
    repo = GitRepo.create(tmp / "repo", tmp / "home")
    repo.commit_memory(BASE, "base")
    base_text = repo.memory_path.read_text(encoding="utf-8")
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit_memory(THEIRS, "theirs")
    repo.git("checkout", "-q", "main")
    repo.commit_memory(OURS, "ours")
    assert repo.git("merge", "-q", "feature", check=False).returncode != 0
    texts = {}
    for style in ("merge", "diff3", "zdiff3"):
        repo.git("checkout", f"--conflict={style}", "--", str(MEMORY))
        texts[style] = repo.memory_path.read_text(encoding="utf-8")
    texts["driver"] = merge_texts(
        base_text, "\n§\n".join(OURS) + "\n", "\n§\n".join(THEIRS) + "\n"
    ).text
    return texts


# ------------------------------------------------------------------------------------ the parser


@pytest.mark.parametrize("style", ["merge", "diff3", "zdiff3"])
def test_a_conflicted_file_reads_as_both_sides_merged_the_drivers_way(
    conflicted: dict[str, str], style: str
) -> None:
    text = conflicted[style]
    assert "<<<<<<<" in text  # git really left markers
    doc = parse(text)
    assert doc.conflicts.blocks and not doc.conflicts.strays
    entries = doc.stored_texts
    assert all(no_marker_line(entry) for entry in entries)
    assert set(entries) == set(OURS) | set(THEIRS) - {BASE[1]}  # nothing lost
    assert entries == parse(conflicted["driver"]).entry_texts  # what the driver would have made
    both = doc.resolve().both_changed
    assert both == ((OURS[1], THEIRS[1]),)
    assert entries.index(THEIRS[1]) == entries.index(OURS[1]) + 1  # the pair stands together
    assert not doc.is_canonical()


def test_marker_lines_are_gits_shape_only() -> None:
    text = (
        "<<<<<<< HEAD\r\nours\r\n||||||| base\r=======\n>>>>>>> feature\n"
        "<<<<<<<x not a marker\n a <<<<<<< inside a line\n========= \n=======  \n"
    )
    kinds = [(m.kind, m.size) for m in marker_lines(text)]
    assert kinds == [("<", 7), ("|", 7), ("=", 7), (">", 7), ("=", 9), ("=", 7)]
    found = find_conflicts("\ufeff<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x")  # BOM, no final newline
    assert len(found.blocks) == 1


def test_benign_twins_read_as_before() -> None:
    texts = [
        "Heading\n=======\nbody text\n§\nnext",  # a setext underline, no other marker
        "Use <<<<<<< only in examples\n§\na >>>>>>> b",  # markers inside lines
        "<<<<<< six is not a marker\n§\n>>>>>> nor here",
    ]
    for text in texts:
        doc = parse(text)
        assert not doc.conflicts
        assert doc.stored_texts == list(dict.fromkeys(doc.entry_texts))
        assert not [f for f in lint(doc, limit=2200) if f.code == CONFLICT_MARKER]


def test_strays_are_dropped_and_an_unclosed_block_keeps_its_text() -> None:
    text = "a fact\n>>>>>>> feature\n§\n<<<<<<< HEAD\nhalf resolved\n§\nlast\n"
    doc = parse(text)
    assert not doc.conflicts.blocks and len(doc.conflicts.strays) == 2
    assert doc.stored_texts == ["a fact", "half resolved", "last"]


def test_an_abandoned_opening_and_a_conflict_inside_a_side() -> None:
    inner = "<<<<<<<<< inner\nx one\n=========\nx two\n>>>>>>>>> inner\n"
    text = f"<<<<<<< stale\n<<<<<<< HEAD\n{inner}=======\nplain theirs\n>>>>>>> f\n"
    doc = parse(text)
    assert len(doc.conflicts.blocks) == 1 and len(doc.conflicts.strays) == 1
    assert doc.stored_texts == ["x one", "x two", "plain theirs"]


def test_deep_nesting_is_bounded_and_keeps_the_text() -> None:
    depth = MAX_DEPTH + 6
    text = "core fact\n"
    for k in range(depth):
        size = 7 + 2 * (depth - k)
        text = f"{'<' * size} o{k}\n{text}{'=' * size}\nside {k}\n{'>' * size} t{k}\n"
    entries = parse(text).stored_texts
    assert all(no_marker_line(e) for e in entries)
    assert "core fact" in "\n".join(entries) and "side 0" in "\n".join(entries)


@pytest.mark.timeout(60)
def test_hostile_marker_runs_stay_linear() -> None:
    lines = ["<" * 200_000 + "x", ">>>>>>> " * 20_000, "=" * 100_000 + " y"]
    for line in lines:
        doc = parse(line + "\n§\nfine\n")
        assert doc.stored_texts[-1] == "fine"
        lint(doc, limit=2200)
    many = "".join(f"<<<<<<< a\n{i}\n=======\n{i}b\n>>>>>>> b\n" for i in range(3000))
    doc = parse(many)
    assert len(doc.conflicts.blocks) == 3000
    assert all(no_marker_line(e) for e in doc.stored_texts)
    assert len(lint(doc, limit=10**9)) >= 3000


# ------------------------------------------------------------------------------------ lint


@pytest.mark.parametrize("style", ["merge", "diff3"])
def test_lint_reports_each_block_and_its_fix_is_the_resolution(
    conflicted: dict[str, str], style: str
) -> None:
    text = conflicted[style]
    findings = lint(parse(text), limit=2200)
    conflicts = [f for f in findings if f.code == CONFLICT_MARKER]
    assert conflicts and all(f.severity == 1 for f in conflicts)
    assert "my-agent git-setup" in conflicts[0].message
    assert "changed on both sides" in conflicts[0].message
    assert not [f for f in findings if f.code == NON_CANONICAL]
    fixes = [f.fixes[0] for f in conflicts]
    assert all(fix.title.startswith("Keep both sides") and not fix.fix_all for fix in fixes)
    fixed = apply_edits(text, select_edits(fixes))
    assert no_marker_line(fixed)
    assert parse(fixed).stored_texts == parse(text).stored_texts
    assert not [f for f in lint(parse(fixed), limit=2200) if f.code == CONFLICT_MARKER]


def test_a_stray_marker_line_has_a_delete_fix() -> None:
    text = "a fact\n>>>>>>> feature\n§\nb fact\n"
    [finding] = [f for f in lint(parse(text), limit=2200) if f.code == CONFLICT_MARKER]
    assert apply_edits(text, finding.fixes[0].edits) == "a fact\n§\nb fact\n"


def test_the_live_lint_follows_edits_into_and_out_of_a_conflict(
    conflicted: dict[str, str],
) -> None:
    from my_agent_core.lsp.memory_buffer import memory_text

    rope = memory_text("plain\n§\nfile\n")
    live = LiveLint(rope)

    def edit(start: int, end: int, new: str) -> None:
        splice = rope.replace(start, end, new)
        live.splice(splice.first, splice.removed, splice.added)
        fresh = lint(parse(rope.text), limit=2200)
        assert live.findings(limit=2200) == fresh

    edit(len(rope.text), len(rope.text), conflicted["diff3"])
    assert [f for f in live.findings(limit=2200) if f.code == CONFLICT_MARKER]
    at = rope.text.index(">>>>>>>")
    edit(at, at + 1, "")  # the closing marker broken: now strays
    edit(at, at, ">")
    for marker in MARKER_START:
        while (i := rope.text.find(marker)) != -1:
            end = rope.text.index("\n", i) + 1
            edit(i, end, "")
    assert not [f for f in live.findings(limit=2200) if f.code == CONFLICT_MARKER]


# ------------------------------------------------------------------------------------ writes


def store_on(tmp_path: Path, text: str) -> tuple[MemoryStore, Path]:
    mem = tmp_path / "ws" / ".my_agent_core" / "memory"
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_text(text, encoding="utf-8")
    return MemoryStore(mem), mem


def assert_resolved(mem: Path, message: str, added: str) -> None:
    text = (mem / "MEMORY.md").read_text(encoding="utf-8")
    assert no_marker_line(text)
    entries = parse(text).entry_texts
    assert set(OURS) | set(THEIRS) - {BASE[1]} <= set(entries) and added in entries
    assert "conflict" in message and "git-setup" in message and ".backups/" in message
    backups = list((mem / ".backups").iterdir())
    assert backups and "<<<<<<<" in backups[0].read_text(encoding="utf-8")
    assert [(p.first, p.second) for p in read_pairs(mem, "MEMORY.md")] == [(OURS[1], THEIRS[1])]


def test_the_store_snapshot_never_shows_a_marker(
    conflicted: dict[str, str], tmp_path: Path
) -> None:
    store, _mem = store_on(tmp_path, conflicted["merge"])
    store.load_from_disk()
    prompt = store.format_all_for_system_prompt()
    assert no_marker_line(prompt) and OURS[1] in prompt and THEIRS[1] in prompt
    assert no_marker_line("\n".join(store.state("memory").entries))


def test_the_agent_tool_resolves_the_drivers_way_and_says_so(
    conflicted: dict[str, str], tmp_path: Path
) -> None:
    store, mem = store_on(tmp_path, conflicted["merge"])
    result = make_memory_tool(store).execute(
        {"target": "memory", "action": "add", "content": "added by the agent"}
    )
    assert result.ok
    assert_resolved(mem, result.content, "added by the agent")


def test_the_cli_resolves_and_says_so(
    conflicted: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store, mem = store_on(tmp_path, conflicted["diff3"])
    assert main(["memory", "add", "added at the terminal", "--dir", str(mem)]) == 0
    assert_resolved(mem, capsys.readouterr().out, "added at the terminal")


async def test_mcp_prompt_view_and_tool(conflicted: dict[str, str], tmp_path: Path) -> None:
    store, mem = store_on(tmp_path, conflicted["merge"])
    store.load_from_disk()
    async with Client(build_server(store), client_info=Implementation(name="t", version="1")) as c:
        [message] = (await c.get_prompt("memory_context")).messages
        assert isinstance(message.content, TextContent)
        assert no_marker_line(message.content.text) and THEIRS[1] in message.content.text
        view = await c.call_tool("memory_view", {"target": "memory"})
        [content] = view.content
        assert isinstance(content, TextContent)
        assert no_marker_line(content.text) and OURS[1] in content.text
        added = await c.call_tool(
            "memory", {"target": "memory", "action": "add", "content": "added over MCP"}
        )
        [content] = added.content
        assert isinstance(content, TextContent) and not added.is_error
    assert_resolved(mem, content.text, "added over MCP")


def test_a_write_of_a_clean_file_says_nothing_of_conflicts(tmp_path: Path) -> None:
    store, mem = store_on(tmp_path, "Heading\n=======\nbody\n")  # a benign twin
    message = store.add("memory", "another fact")
    assert "conflict" not in message and not (mem / "merge-pairs.json").exists()


def test_content_with_a_marker_line_is_refused_and_a_mention_is_not(tmp_path: Path) -> None:
    store, _mem = store_on(tmp_path, "")
    tool = make_memory_tool(store)
    refused = tool.execute(
        {"target": "memory", "action": "add", "content": "note\n<<<<<<< HEAD\nx"}
    )
    assert not refused.ok and "conflict marker" in (refused.error or "")
    ok = tool.execute(
        {"target": "memory", "action": "add", "content": "git writes `<<<<<<< HEAD` lines"}
    )
    assert ok.ok


def test_cli_lint_exits_1_on_a_conflict(
    conflicted: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store, mem = store_on(tmp_path, conflicted["merge"])
    assert main(["lint", "--format", "json", str(mem / "MEMORY.md")]) == 1
    found = json.loads(capsys.readouterr().out)
    codes = [f["code"] for f in found]
    assert CONFLICT_MARKER in codes
    first = next(f for f in found if f["code"] == CONFLICT_MARKER)
    assert first["severity"] == "error" and first["fixable"]


def test_the_driver_reads_a_committed_conflict_as_entries(tmp_path: Path) -> None:
    """A side that holds markers (someone committed a conflicted file) merges into entries."""
    for name, text in (
        ("base", "a\n"),
        ("ours", "a\n§\nb\n"),
        ("theirs", "a\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> f\n"),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "my_agent_core", "merge-driver", "base", "ours", "theirs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    merged = (tmp_path / "ours").read_text(encoding="utf-8")
    assert no_marker_line(merged) and {"b", "a\nx", "a\ny"} <= set(parse(merged).entry_texts)


# ------------------------------------------------------------------------------------ properties

LINES = ["<<<<<<< HEAD", "=======", ">>>>>>> feature", "§", "alpha", "beta two", "gamma", ""]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*LINES, "||||||| base"]), max_size=24))
def test_no_marker_line_ever_reaches_the_entries(lines: list[str]) -> None:
    entries = parse("\n".join(lines)).stored_texts
    assert all(
        not line.startswith(("<" * 7, ">" * 7, "|" * 7)) for e in entries for line in e.split("\n")
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=24))
def test_without_a_base_no_line_of_either_side_is_lost(lines: list[str]) -> None:
    entries = parse("\n".join(lines)).stored_texts
    kept = {line for entry in entries for line in entry.split("\n")}
    words = {line for line in lines if line.strip() and not line.startswith(("<", ">", "=", "§"))}
    assert words <= kept
