"""The entry-wise merge of MEMORY.md: the pure merge (rules and properties), the driver run directly
on files, and real git merges, rebases and cherry-picks through the registered driver."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from my_agent_core.memory.document import ENTRY_DELIMITER, normalize_entry, parse, serialize
from my_agent_core.memory.limits import MAX_FILE_BYTES
from my_agent_core.memory.merge import match_entries, merge_entries, merge_texts
from my_agent_core.team.git_setup import DRIVER_NAME, git_setup
from tests.support.git_repo import MEMORY, GitRepo

# ------------------------------------------------------------------------------------ the rules

BASE = [
    "Tests run with `uv run pytest -q`; never plain pytest.",
    "The service deploys on Fridays from the release branch.",
    "Config lives in config/app.toml, secrets in the vault.",
    "The CI image pins Python 3.11.",
]


def test_additions_on_both_sides_are_all_kept_ours_first() -> None:
    merged = merge_entries(BASE, [*BASE, "ours: new fact"], [*BASE, "theirs: new fact"])
    assert merged.entries == (*BASE, "ours: new fact", "theirs: new fact")


def test_the_same_entry_added_on_both_sides_is_kept_once() -> None:
    merged = merge_entries(BASE, [*BASE, "shared fact"], ["shared fact", *BASE])
    assert merged.entries.count("shared fact") == 1
    assert set(merged.entries) == {*BASE, "shared fact"}


def test_removed_on_one_side_unchanged_on_the_other_is_removed() -> None:
    merged = merge_entries(BASE, BASE[1:], BASE)
    assert merged.entries == tuple(BASE[1:])
    merged = merge_entries(BASE, BASE, BASE[:2] + BASE[3:])
    assert merged.entries == tuple(BASE[:2] + BASE[3:])


def test_a_small_edit_is_an_edit_and_keeps_its_place() -> None:
    edited = "Tests run with `uv run pytest -q -x`; never plain pytest."
    assert match_entries(BASE, [edited, *BASE[1:]]).side_to_base == (0, 1, 2, 3)
    merged = merge_entries(BASE, BASE, [edited, *BASE[1:], "theirs: added"])
    assert merged.entries == (edited, *BASE[1:], "theirs: added")


def test_edits_of_different_entries_on_each_side_both_land() -> None:
    ours = [BASE[0], "The service deploys on Thursdays from the release branch.", *BASE[2:]]
    theirs = [*BASE[:3], "The CI image pins Python 3.12."]
    merged = merge_entries(BASE, ours, theirs)
    assert merged.entries == (BASE[0], ours[1], BASE[2], theirs[3])
    assert merged.both_changed == ()


def test_one_entry_changed_differently_on_both_sides_keeps_both_versions() -> None:
    ours_edit = "The service deploys on Thursdays from the release branch."
    theirs_edit = "The service deploys on Fridays from main."
    merged = merge_entries(BASE, [BASE[0], ours_edit, *BASE[2:]], [BASE[0], theirs_edit, *BASE[2:]])
    assert merged.entries == (BASE[0], ours_edit, theirs_edit, *BASE[2:])
    assert merged.both_changed == ((ours_edit, theirs_edit),)


def test_the_same_edit_on_both_sides_is_kept_once() -> None:
    edit = "The CI image pins Python 3.12."
    merged = merge_entries(BASE, [*BASE[:3], edit], [*BASE[:3], edit])
    assert merged.entries == (*BASE[:3], edit)
    assert merged.both_changed == ()


def test_an_entry_edited_on_one_side_and_removed_on_the_other_keeps_the_edit() -> None:
    edit = "Config lives in config/app.toml; secrets in the team vault."
    merged = merge_entries(BASE, [*BASE[:2], edit, BASE[3]], [*BASE[:2], BASE[3]])
    assert merged.entries == (*BASE[:2], edit, BASE[3])
    assert merged.kept_over_removal == (edit,)
    merged = merge_entries(BASE, [*BASE[:2], BASE[3]], [*BASE[:2], edit, BASE[3]])
    assert merged.entries == (*BASE[:2], edit, BASE[3])


def test_a_reorder_on_one_side_only_is_followed() -> None:
    reordered = [BASE[3], BASE[0], BASE[1], BASE[2]]
    assert merge_entries(BASE, BASE, reordered).entries == tuple(reordered)
    merged = merge_entries(BASE, [*BASE, "ours: added"], reordered)
    assert merged.entries == (*reordered, "ours: added")
    assert merge_entries(BASE, reordered, [*BASE, "theirs"]).entries == (*reordered, "theirs")


def test_theirs_additions_are_placed_after_what_precedes_them_in_theirs() -> None:
    theirs = [BASE[0], "theirs: after the first", *BASE[1:]]
    ours = [BASE[0], "ours: after the first", *BASE[1:]]
    merged = merge_entries(BASE, ours, theirs)
    assert merged.entries == (
        BASE[0],
        "ours: after the first",
        "theirs: after the first",
        *BASE[1:],
    )
    assert merge_entries(BASE, BASE, ["theirs: on top", *BASE]).entries[0] == "theirs: on top"


def test_no_base_both_sides_added_the_file() -> None:
    merged = merge_entries([], ["a fact", "shared"], ["shared", "another fact"])
    assert merged.entries == ("a fact", "shared", "another fact")


def test_texts_in_any_shape_merge_by_entries() -> None:
    base = serialize(BASE)
    ours = "\ufeff" + (serialize([*BASE, "ours: added"])).replace("\n", "\r\n")
    theirs = base.replace("\n§\n", "\n  §  \n") + "§\ntheirs: added\n"
    merged = merge_texts(base, ours, theirs)
    assert merged.entries == (*BASE, "ours: added", "theirs: added")
    assert merged.text == serialize(list(merged.entries))
    assert "\r" not in merged.text and not merged.text.startswith("\ufeff")


def test_many_unmatched_entries_fall_back_to_exact_matching() -> None:
    base = [f"base entry number {i}" for i in range(300)]
    ours = [f"ours entry number {i}" for i in range(300)]
    theirs = [f"theirs entry number {i}" for i in range(300)]
    merged = merge_entries(base, ours, theirs)
    assert set(merged.entries) == set(ours) | set(theirs)


# ------------------------------------------------------------------------------------ properties

POOL = [
    "uses pytest",
    "uses pytest -q",
    "uses pytest -x -q",
    "deploys on fridays",
    "deploys on thursdays",
    "config in app.toml",
    "config in app.yaml",
    "line one\nline two",
    "line one\nline 2",
    "短い日本語のメモ",
    "中文记忆条目",
    "x",
    "y",
]
entry_lists = st.lists(st.sampled_from(POOL), max_size=9, unique=True)


def expected_set(base: list[str], ours: list[str], theirs: list[str]) -> set[str]:
    """What the rules keep: every change of either side, and what both sides still have."""
    b, o, t = set(base), set(ours), set(theirs)
    return (o - b) | (t - b) | (o & t)


@settings(max_examples=400, deadline=None)
@given(entry_lists, entry_lists, entry_lists)
def test_no_text_is_lost_and_nothing_is_invented(
    base: list[str], ours: list[str], theirs: list[str]
) -> None:
    merged = merge_entries(base, ours, theirs)
    assert len(set(merged.entries)) == len(merged.entries)
    assert set(merged.entries) == expected_set(base, ours, theirs)
    assert set(merge_entries(base, theirs, ours).entries) == set(merged.entries)


@settings(max_examples=300, deadline=None)
@given(entry_lists, entry_lists)
def test_identity_laws(base: list[str], side: list[str]) -> None:
    assert merge_entries(base, side, side).entries == tuple(side)
    assert merge_entries(base, base, side).entries == tuple(side)
    assert merge_entries(base, side, base).entries == tuple(side)


memory_texts = st.text(alphabet="ab §\n\r\t\ufeffé", max_size=40)


@settings(max_examples=300, deadline=None)
@given(memory_texts, memory_texts, memory_texts)
def test_any_file_text_merges_to_a_canonical_file_of_the_expected_entries(
    base: str, ours: str, theirs: str
) -> None:
    merged = merge_texts(base, ours, theirs)
    assert parse(merged.text).entry_texts == list(merged.entries)
    sides = [parse(text).stored_texts for text in (base, ours, theirs)]
    assert set(merged.entries) == expected_set(*sides)
    assert all(entry == normalize_entry(entry) and entry for entry in merged.entries)


# ------------------------------------------------------------------------------------ the driver on files


def run_driver(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", "merge-driver", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )


def write_versions(
    tmp_path: Path, base: list[str], ours: list[str], theirs: list[str]
) -> tuple[Path, Path, Path]:
    paths = tmp_path / "base.md", tmp_path / "ours.md", tmp_path / "theirs.md"
    for path, entries in zip(paths, (base, ours, theirs), strict=True):
        path.write_text(serialize(entries), encoding="utf-8")
    return paths


def test_driver_merges_into_ours_and_exits_0(tmp_path: Path) -> None:
    base, ours, theirs = write_versions(
        tmp_path, BASE, [*BASE, "ours: added"], [*BASE[1:], "theirs: added"]
    )
    ours.chmod(0o640)
    result = run_driver(base, ours, theirs, ".my_agent_core/memory/MEMORY.md")
    assert result.returncode == 0, result.stderr
    assert ours.read_text(encoding="utf-8") == serialize(
        [*BASE[1:], "ours: added", "theirs: added"]
    )
    assert stat.S_IMODE(ours.stat().st_mode) == 0o640
    assert result.stdout == ""
    assert theirs.read_text(encoding="utf-8") == serialize([*BASE[1:], "theirs: added"])
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_driver_treats_a_missing_version_as_no_entries(tmp_path: Path) -> None:
    ours = tmp_path / "ours.md"
    ours.write_text("ours fact\n", encoding="utf-8")
    theirs = tmp_path / "theirs.md"
    theirs.write_text("theirs fact\n", encoding="utf-8")
    result = run_driver(tmp_path / "no-base.md", ours, theirs)
    assert result.returncode == 0, result.stderr
    assert parse(ours.read_text(encoding="utf-8")).entry_texts == ["ours fact", "theirs fact"]


def test_driver_refuses_undecodable_input_and_leaves_ours_alone(tmp_path: Path) -> None:
    base, ours, theirs = write_versions(tmp_path, BASE, BASE, BASE)
    theirs.write_bytes(b"a fact\n\xff\xfe broken\n")
    before = ours.read_bytes()
    result = run_driver(base, ours, theirs, "MEMORY.md")
    assert result.returncode == 1
    assert "theirs version" in result.stderr and "not valid UTF-8" in result.stderr
    assert ours.read_bytes() == before


def facts(tag: str, total_bytes: int) -> list[str]:
    """Entries of about 1 KiB, distinct, filling about `total_bytes` once serialised."""
    return [f"{tag} fact {i}: " + "x" * 1000 for i in range(total_bytes // 1008)]


def test_driver_refuses_a_version_larger_than_the_store_reads_and_leaves_ours_alone(
    tmp_path: Path,
) -> None:
    base, ours, theirs = write_versions(tmp_path, BASE, [*BASE, "ours: added"], BASE)
    theirs.write_text(serialize(facts("theirs", MAX_FILE_BYTES + 4096)), encoding="utf-8")
    before = ours.read_bytes()
    result = run_driver(base, ours, theirs, ".my_agent_core/memory/MEMORY.md")
    assert result.returncode == 1
    assert "theirs version" in result.stderr and "more than the 256.0 KiB" in result.stderr
    assert "theirs stays in git's index" in result.stderr
    assert ours.read_bytes() == before


def test_driver_refuses_a_merge_larger_than_the_store_reads(tmp_path: Path) -> None:
    """Each side fits; both together would not: nothing is written, both texts stay."""
    ours_entries, theirs_entries = facts("ours", 150_000), facts("theirs", 150_000)
    base, ours, theirs = write_versions(tmp_path, [], ours_entries, theirs_entries)
    before = ours.read_bytes()
    result = run_driver(base, ours, theirs, ".my_agent_core/memory/MEMORY.md")
    assert result.returncode == 1
    assert "the merged file would be" in result.stderr and "256.0 KiB" in result.stderr
    assert ours.read_bytes() == before


def test_driver_merges_a_version_just_under_the_limit(tmp_path: Path) -> None:
    """The benign twin: a side as large as the store reads merges as any other."""
    big = facts("theirs", MAX_FILE_BYTES - 4096)
    base, ours, theirs = write_versions(tmp_path, [], [], big)
    assert MAX_FILE_BYTES - 8192 < theirs.stat().st_size <= MAX_FILE_BYTES
    result = run_driver(base, ours, theirs, ".my_agent_core/memory/MEMORY.md")
    assert result.returncode == 0, result.stderr
    assert parse(ours.read_text(encoding="utf-8")).entry_texts == big


def test_driver_does_not_hang_on_a_fifo_nor_write_through_a_link(tmp_path: Path) -> None:
    base, ours, theirs = write_versions(tmp_path, BASE, BASE, BASE)
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    result = run_driver(base, ours, fifo, timeout=30)
    assert result.returncode == 1 and "FIFO" in result.stderr
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "link.md"
    link.symlink_to(victim)
    result = run_driver(base, link, theirs)
    assert result.returncode == 1 and "not a regular file" in result.stderr
    assert victim.read_text() == "precious\n" and link.is_symlink()


def test_driver_keeps_an_over_budget_result_whole_and_says_so(tmp_path: Path) -> None:
    big_ours = [f"ours fact {i}: " + "o" * 90 for i in range(12)]
    big_theirs = [f"theirs fact {i}: " + "t" * 90 for i in range(12)]
    base, ours, theirs = write_versions(tmp_path, [], big_ours, big_theirs)
    result = run_driver(base, ours, theirs, ".my_agent_core/memory/MEMORY.md")
    assert result.returncode == 0
    assert parse(ours.read_text(encoding="utf-8")).entry_texts == big_ours + big_theirs
    assert "over its budget" in result.stderr and "/2200 chars" in result.stderr
    base, ours, theirs = write_versions(tmp_path, [], big_ours + big_theirs[:2], [])
    assert "/1375 chars" in run_driver(base, ours, theirs, "x/USER.md").stderr


def test_driver_messages_never_carry_terminal_control_characters(tmp_path: Path) -> None:
    hostile = "deploys \x1b]0;pwned\x07 on fridays \u202e"
    base, ours, theirs = write_versions(
        tmp_path, ["deploys on fridays"], [hostile], ["deploys on fridays now"]
    )
    result = run_driver(base, ours, theirs)
    assert result.returncode == 0
    assert "changed on both sides" in result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\u202e" not in result.stderr
    assert hostile in parse(ours.read_text(encoding="utf-8")).entry_texts


def test_merge_driver_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_driver(tmp_path / "only-one").returncode == 2


# ------------------------------------------------------------------------------------ real git


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    """A repository with git-setup done and a base MEMORY.md committed on `main`."""
    repo = GitRepo.create(tmp_path / "repo", tmp_path / "home")
    assert shutil.which("my-agent", path=repo.env["PATH"]) is None
    git_setup(repo.path)
    repo.commit_memory(BASE, "base memory")
    return repo


def diverge(repo: GitRepo, ours: list[str], theirs: list[str]) -> None:
    """`main` gets `ours`, branch `feature` (from the base) gets `theirs`; HEAD stays on main."""
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit_memory(theirs, "feature memory")
    repo.git("checkout", "-q", "main")
    repo.commit_memory(ours, "main memory")


def assert_clean(repo: GitRepo) -> None:
    text = repo.memory_path.read_text(encoding="utf-8")
    assert "<<<<<<<" not in text and ">>>>>>>" not in text
    assert repo.git("status", "--porcelain").stdout == ""


OURS_SIDE = [
    "Tests run with `uv run pytest -q -x`; never plain pytest.",  # edited
    BASE[1],
    BASE[3],  # BASE[2] removed
    "main: the staging host is staging.internal",
]
THEIRS_SIDE = [
    BASE[0],
    BASE[2],
    "The CI image pins Python 3.12.",  # edited; BASE[1] removed
    "feature: feature flags live in flags.yaml",
]
MERGED_SET = {OURS_SIDE[0], OURS_SIDE[3], THEIRS_SIDE[2], THEIRS_SIDE[3]}


def test_git_merge_applies_both_sides_entry_by_entry_both_ways(repo: GitRepo) -> None:
    diverge(repo, OURS_SIDE, THEIRS_SIDE)
    repo.git("branch", "main-before-merge")
    done = repo.git("merge", "-q", "--no-edit", "feature")
    assert done.returncode == 0
    assert_clean(repo)
    assert repo.memory_entries() == [OURS_SIDE[0], THEIRS_SIDE[2], OURS_SIDE[3], THEIRS_SIDE[3]]

    repo.git("checkout", "-q", "-b", "other-way", "feature")
    repo.git("merge", "-q", "--no-edit", "main-before-merge")
    assert_clean(repo)
    assert set(repo.memory_entries()) == MERGED_SET
    assert repo.memory_entries()[0] == OURS_SIDE[0]  # the edit kept the entry's place


def test_without_the_driver_git_conflicts_on_the_same_history(repo: GitRepo) -> None:
    repo.git("config", "--remove-section", "merge.my-agent-memory")  # a clone without git-setup
    diverge(repo, OURS_SIDE, THEIRS_SIDE)
    assert repo.git("merge", "-q", "--no-edit", "feature", check=False).returncode != 0
    assert "<<<<<<<" in repo.memory_path.read_text(encoding="utf-8")


def test_git_rebase_replays_through_the_driver(repo: GitRepo) -> None:
    diverge(repo, OURS_SIDE, THEIRS_SIDE)
    repo.git("checkout", "-q", "feature")
    repo.git("rebase", "-q", "main")
    assert_clean(repo)
    assert set(repo.memory_entries()) == MERGED_SET
    assert repo.git("log", "--format=%s", "-3").stdout.split("\n")[:3] == [
        "feature memory",
        "main memory",
        "base memory",
    ]


def test_a_third_branch_merges_in_after_the_first(repo: GitRepo) -> None:
    for branch, fact in (("alice", "alice: fact A"), ("bob", "bob: fact B")):
        repo.git("checkout", "-q", "-b", branch, "main")
        repo.commit_memory([*BASE, fact], f"{branch} memory")
    repo.git("checkout", "-q", "main")
    repo.commit_memory([BASE[0], *BASE[2:], "main: fact M"], "main memory")
    repo.git("merge", "-q", "--no-edit", "alice")
    repo.git("merge", "-q", "--no-edit", "bob")
    assert_clean(repo)
    assert repo.memory_entries() == [
        BASE[0],
        *BASE[2:],
        "main: fact M",
        "alice: fact A",
        "bob: fact B",
    ]


def test_conflicting_edits_of_one_entry_keep_both_and_git_shows_the_note(repo: GitRepo) -> None:
    ours_edit = "The service deploys on Thursdays from the release branch."
    theirs_edit = "The service deploys on Fridays from main after review."
    diverge(repo, [BASE[0], ours_edit, *BASE[2:]], [BASE[0], theirs_edit, *BASE[2:]])
    done = repo.git("merge", "--no-edit", "feature")
    assert_clean(repo)
    assert repo.memory_entries() == [BASE[0], ours_edit, theirs_edit, *BASE[2:]]
    assert "changed on both sides" in done.stdout + done.stderr


def test_both_branches_creating_the_file_merge_without_a_base(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "repo", tmp_path / "home")
    git_setup(repo.path)
    repo.commit_all("setup")
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit_memory(["feature: first fact", "shared fact"], "feature creates memory")
    repo.git("checkout", "-q", "main")
    repo.commit_memory(["shared fact", "main: first fact"], "main creates memory")
    repo.git("merge", "-q", "--no-edit", "feature")
    assert_clean(repo)
    assert repo.memory_entries() == ["shared fact", "main: first fact", "feature: first fact"]


def test_a_hand_edited_crlf_side_merges_by_entries(repo: GitRepo) -> None:
    crlf = (serialize([*BASE, "windows: added by hand"])).replace("\n", "\r\n")
    repo.git("checkout", "-q", "-b", "feature")
    repo.memory_path.write_bytes(crlf.encode("utf-8"))
    repo.commit_all("crlf edit")
    repo.git("checkout", "-q", "main")
    repo.commit_memory([*BASE, "main: added"], "main memory")
    repo.git("merge", "-q", "--no-edit", "feature")
    assert_clean(repo)
    assert repo.memory_entries() == [*BASE, "main: added", "windows: added by hand"]
    assert b"\r" not in repo.memory_path.read_bytes()


def test_an_undecodable_side_is_a_conflict_and_ours_is_left_as_it_was(repo: GitRepo) -> None:
    repo.git("checkout", "-q", "-b", "feature")
    repo.memory_path.write_bytes(serialize(BASE).encode() + b"\xff broken\n")
    repo.commit_all("broken bytes")
    repo.git("checkout", "-q", "main")
    repo.commit_memory([*BASE, "main: added"], "main memory")
    done = repo.git("merge", "--no-edit", "feature", check=False)
    assert done.returncode != 0
    assert "not valid UTF-8" in done.stdout + done.stderr
    assert repo.memory_path.read_text(encoding="utf-8") == serialize([*BASE, "main: added"])
    assert "UU " + MEMORY.as_posix() in repo.git("status", "--porcelain").stdout


def test_a_side_larger_than_the_store_reads_is_a_conflict_with_both_texts_kept(
    repo: GitRepo,
) -> None:
    """What git does with the driver's non-zero exit: the merge stops with a conflict, the work
    tree keeps ours as the driver left it (untouched), and the index keeps every version: theirs
    whole at stage 3, ours at stage 2. Nothing is lost; the user resolves it."""
    # git runs this checkout's driver (the installed package may be another checkout's)
    server = Path(__file__).resolve().parents[1] / "server"
    command = (
        f"env PYTHONPATH={shlex.quote(str(server))} {shlex.quote(sys.executable)} -P -m "
        "my_agent_core merge-driver %O %A %B %P"
    )
    repo.git("config", f"merge.{DRIVER_NAME}.driver", command)
    big = serialize(facts("theirs", MAX_FILE_BYTES + 4096))
    repo.git("checkout", "-q", "-b", "feature")
    repo.memory_path.write_text(big, encoding="utf-8")
    repo.commit_all("a runaway memory file")
    repo.git("checkout", "-q", "main")
    repo.commit_memory([*BASE, "main: added"], "main memory")
    done = repo.git("merge", "--no-edit", "feature", check=False)
    assert done.returncode != 0
    assert "more than the 256.0 KiB the memory store reads" in done.stdout + done.stderr
    ours = serialize([*BASE, "main: added"])
    assert repo.memory_path.read_text(encoding="utf-8") == ours
    assert "UU " + MEMORY.as_posix() in repo.git("status", "--porcelain").stdout
    assert repo.git("show", f":3:{MEMORY.as_posix()}").stdout == big
    assert repo.git("show", f":2:{MEMORY.as_posix()}").stdout == ours


def test_cherry_pick_and_a_path_with_spaces(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "a repo with spaces", tmp_path / "home")
    git_setup(repo.path)
    repo.commit_memory(BASE, "base")
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit_memory([*BASE, "picked fact"], "fact to pick")
    repo.git("checkout", "-q", "main")
    repo.commit_memory([*BASE[1:], "main fact"], "main memory")
    repo.git("cherry-pick", "feature")
    assert repo.memory_entries() == [*BASE[1:], "main fact", "picked fact"]


def test_a_package_planted_in_the_work_tree_is_never_run_by_the_driver(repo: GitRepo) -> None:
    marker = repo.path.parent / "pwned"
    planted = repo.path / "my_agent_core"
    planted.mkdir()
    (planted / "__init__.py").write_text("")
    (planted / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    repo.commit_all("a hostile package at the root")
    diverge(repo, [*BASE, "main fact"], [*BASE, "feature fact"])
    repo.git("merge", "-q", "--no-edit", "feature")
    assert not marker.exists()
    assert repo.memory_entries() == [*BASE, "main fact", "feature fact"]
    assert ENTRY_DELIMITER in repo.memory_path.read_text(encoding="utf-8")
