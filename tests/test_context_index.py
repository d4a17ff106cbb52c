"""The workspace index: built once (the files the tools see), kept current by file events, renames
remembered; and the task-file readers behind it (npm scripts, make targets, just recipes)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from my_agent_core.coding_tools.ignore import walk_files
from my_agent_core.context.index import REBUILD_AT, FileEvent, WorkspaceIndex
from my_agent_core.context.manifests import just_recipes, make_targets, npm_scripts


def touch(folder: Path, *names: str, text: str = "") -> None:
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


class CountingIndex(WorkspaceIndex):
    """Counts full walks, to prove events never re-walk the folder."""

    walks = 0

    def rebuild(self) -> None:
        type(self).walks += 1
        super().rebuild()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    touch(folder, "src/app.py", "src/util/strings.py", "scripts/build.sh", "README.md")
    touch(folder, ".gitignore", text="build/\n*.log\nnode_modules/\n")
    touch(folder, "build/out.bin", "debug.log", "node_modules/left-pad/index.js")
    (folder / ".git").mkdir()
    touch(folder, ".git/HEAD", text="ref: refs/heads/main\n")
    return folder


def test_build_lists_what_the_tools_see(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    expected = set(walk_files(repo.resolve(), repo.resolve()))
    assert {p for p in expected if index.has_file(p)} == expected and len(index) == len(expected)
    assert index.has_file("src/util/strings.py") and not index.has_file("build/out.bin")
    assert not index.has_file("debug.log") and not index.has_file(".git/HEAD")
    assert index.has_dir("src") and index.has_dir("src/util") and not index.has_dir("build")
    assert index.has_basename("strings.py") and not index.has_basename("out.bin")
    assert index.has_top_level("build") and index.has_top_level("node_modules")
    assert not index.has_top_level(".git")
    assert index.exists("build/out.bin"), "an ignored file still exists on disk"
    assert not index.exists("../repo/src/app.py") or index.exists("src/app.py")
    assert not index.exists("/etc/passwd") and not index.exists("../outside.txt")


def test_ripgrep_and_the_walker_agree(repo: Path) -> None:
    rg = shutil.which("rg")
    if rg is None:
        pytest.skip("ripgrep is not installed")
    (repo / "link.py").symlink_to(repo / "src" / "app.py")
    with_rg = WorkspaceIndex.build(repo, ripgrep=rg)
    walker = WorkspaceIndex.build(repo)
    assert sorted(with_rg._files) == sorted(walker._files)


def test_create_delete_and_changes_of_ignored_files(repo: Path) -> None:
    index = CountingIndex.build(repo)
    walks = CountingIndex.walks
    generation = index.generation
    touch(repo, "src/new.py", "build/again.bin", "trace.log")
    change = index.apply(
        [
            FileEvent("created", str(repo / "src/new.py")),
            FileEvent("created", str(repo / "build/again.bin")),
            FileEvent("created", "trace.log"),
        ]
    )
    assert change.files and index.generation > generation
    assert index.has_file("src/new.py")
    assert not index.has_file("build/again.bin") and not index.has_file("trace.log")
    (repo / "src/new.py").unlink()
    assert index.apply([FileEvent("deleted", str(repo / "src/new.py"))]).files
    assert not index.has_file("src/new.py") and not index.has_basename("new.py")
    unchanged = index.generation
    assert not index.apply([FileEvent("deleted", str(repo / "never/was.py"))]).any
    assert index.generation == unchanged, "nothing changed, nothing to re-lint"
    assert CountingIndex.walks == walks, "events never re-walk the folder"


def test_a_folder_created_or_deleted(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    touch(repo, "docs/guide.md", "docs/api/ref.md")
    index.apply([FileEvent("created", str(repo / "docs"))])
    assert index.has_file("docs/guide.md") and index.has_file("docs/api/ref.md")
    shutil.rmtree(repo / "src")
    index.apply([FileEvent("deleted", str(repo / "src"))])
    assert not index.has_dir("src") and not index.has_file("src/app.py")
    assert not index.has_basename("strings.py")
    assert not index.has_top_level("src")


def test_explicit_rename_is_remembered(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    os.rename(repo / "scripts/build.sh", repo / "scripts/make.sh")
    index.apply(
        [FileEvent("renamed", str(repo / "scripts/make.sh"), str(repo / "scripts/build.sh"))]
    )
    assert index.has_file("scripts/make.sh") and not index.has_file("scripts/build.sh")
    assert index.renamed_to("scripts/build.sh") == "scripts/make.sh"
    os.rename(repo / "scripts/make.sh", repo / "scripts/ci.sh")  # a chain: build -> make -> ci
    index.apply([FileEvent("renamed", str(repo / "scripts/ci.sh"), str(repo / "scripts/make.sh"))])
    assert index.renamed_to("scripts/build.sh") == "scripts/ci.sh"
    (repo / "scripts/ci.sh").unlink()
    index.apply([FileEvent("deleted", str(repo / "scripts/ci.sh"))])
    assert index.renamed_to("scripts/build.sh") is None, "only a path that exists is offered"


def test_renames_are_inferred_from_one_batch(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    os.makedirs(repo / "tools")
    os.rename(repo / "scripts/build.sh", repo / "tools/build.sh")  # a move: same name
    os.rename(repo / "README.md", repo / "README.rst")  # different extension: not a rename
    index.apply(
        [
            FileEvent("deleted", str(repo / "scripts/build.sh")),
            FileEvent("created", str(repo / "tools/build.sh")),
            FileEvent("deleted", str(repo / "README.md")),
            FileEvent("created", str(repo / "README.rst")),
        ]
    )
    assert index.renamed_to("scripts/build.sh") == "tools/build.sh"
    assert index.renamed_to("README.md") is None
    os.rename(repo / "src/app.py", repo / "src/main.py")  # the only pair, one folder
    index.apply(
        [
            FileEvent("deleted", str(repo / "src/app.py")),
            FileEvent("created", str(repo / "src/main.py")),
        ]
    )
    assert index.renamed_to("src/app.py") == "src/main.py"


def test_a_renamed_folder_moves_what_is_under_it(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    os.rename(repo / "src", repo / "lib")
    index.apply([FileEvent("renamed", str(repo / "lib"), str(repo / "src"))])
    assert index.has_file("lib/util/strings.py") and not index.has_dir("src")
    assert index.renamed_to("src/util/strings.py") == "lib/util/strings.py"
    assert index.renamed_to("src/util/gone.py") is None


def test_task_files_are_read_and_re_read_on_change(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    assert index.tasks("npm") is None and index.tasks("make") is None
    touch(repo, "package.json", text='{"scripts": {"build": "tsc", "test": "vitest"}}')
    touch(repo, "Makefile", text="all: build\nbuild:\n\tcc x.c\n")
    change = index.apply(
        [FileEvent("created", str(repo / "package.json")), FileEvent("created", "Makefile")]
    )
    assert change.manifests
    npm = index.tasks("npm")
    assert npm is not None and npm.names == {"build", "test"}
    touch(repo, "package.json", text='{"scripts": {"lint": "eslint ."}}')
    generation = index.generation
    assert index.apply([FileEvent("changed", str(repo / "package.json"))]).manifests
    assert index.generation > generation
    npm = index.tasks("npm")
    assert npm is not None and npm.names == {"lint"}
    make = index.tasks("make")
    assert make is not None and make.names == {"all", "build"}


def test_context_files_are_tracked(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    assert index.context_texts == ()
    touch(repo, "AGENTS.md", text="Run `pytest -q`.\n")
    assert index.apply([FileEvent("created", str(repo / "AGENTS.md"))]).context
    assert [t.name for t in index.context_texts] == ["AGENTS.md"]


def test_an_ignore_file_change_rebuilds(repo: Path) -> None:
    index = CountingIndex.build(repo)
    walks = CountingIndex.walks
    (repo / ".gitignore").write_text("node_modules/\n", encoding="utf-8")  # build/ now visible
    change = index.apply([FileEvent("changed", str(repo / ".gitignore"))])
    assert change.rebuilt and CountingIndex.walks == walks + 1
    assert index.has_file("build/out.bin") and index.has_file("debug.log")


def test_a_burst_of_events_rebuilds_once(repo: Path) -> None:
    index = CountingIndex.build(repo)
    walks = CountingIndex.walks
    names = [f"gen/f{n}.py" for n in range(REBUILD_AT + 1)]
    touch(repo, *names)
    change = index.apply([FileEvent("created", str(repo / n)) for n in names])
    assert change.rebuilt and CountingIndex.walks == walks + 1
    assert index.has_file(names[-1])


def test_events_outside_the_folder_or_in_git_are_ignored(repo: Path, tmp_path: Path) -> None:
    index = WorkspaceIndex.build(repo)
    touch(tmp_path, "elsewhere.py")
    touch(repo, ".git/config")
    assert not index.apply(
        [
            FileEvent("created", str(tmp_path / "elsewhere.py")),
            FileEvent("created", str(repo / ".git/config")),
            FileEvent("created", str(repo / ".." / "elsewhere.py")),
        ]
    ).any
    assert not index.has_basename("elsewhere.py") and not index.has_file(".git/config")


def test_links_are_not_followed(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    touch(outside, "secret.py")
    (repo / "linked").symlink_to(outside)
    index = WorkspaceIndex.build(repo)
    index.apply([FileEvent("created", str(repo / "linked"))])
    assert not index.has_basename("secret.py")


def test_twenty_thousand_files_built_once(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    for d in range(200):
        sub = folder / f"pkg{d:03d}"
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / f"mod{f:03d}.py").write_bytes(b"")
    index = CountingIndex.build(folder)
    assert len(index) == 20_000 and CountingIndex.walks >= 1
    walks = CountingIndex.walks
    (folder / "pkg000" / "new.py").write_bytes(b"")
    index.apply([FileEvent("created", str(folder / "pkg000" / "new.py"))])
    assert len(index) == 20_001 and CountingIndex.walks == walks
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
        subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
        listed = subprocess.run(
            ["git", "ls-files"], cwd=folder, capture_output=True, text=True, check=True
        ).stdout.split()
        assert set(listed) == index._files


# ------------------------------------------------------------------------------ task files


def test_npm_scripts() -> None:
    assert npm_scripts('{"scripts": {"a": "x", "b:c": "y"}}').names == {"a", "b:c"}
    assert npm_scripts('{"name": "x"}').names == frozenset()
    assert npm_scripts('{"name": "x"}').complete
    broken = npm_scripts("{not json")
    assert not broken.complete and broken.knows("anything") is None
    assert npm_scripts("[1, 2]").names == frozenset()


def test_make_targets() -> None:
    text = (
        "CC := gcc\nVERSION ?= 1\nexport PATH\n"
        ".PHONY: all test\n"
        "all: build test\n"
        "build test: deps\n\t$(CC) -o app main.c\n"
        "lint:: ; ruff check .\n"
        "%.o: %.c\n\t$(CC) -c $<\n"
        "define RECIPE\nfake: target\nendef\n"
        "long \\\n  wrapped: x\n"
        "# comment: not a target\n"
    )
    targets = make_targets(text)
    assert targets.names == {"all", "build", "test", "lint", "long", "wrapped"}
    assert targets.complete
    assert targets.knows("main.o") is True and targets.knows("deploy") is False
    assert targets.knows("fake") is False and targets.knows(".PHONY") is False


def test_make_targets_that_cannot_be_known() -> None:
    assert not make_targets("$(NAME): x\n").complete
    assert not make_targets("%:\n\techo $@\n").complete
    assert not make_targets(".DEFAULT:\n\techo\n").complete
    assert not make_targets("include $(CONFIG)\n").complete
    assert not make_targets("include other.mk\n", read_include=lambda name: None).complete
    nested = make_targets(
        "include a.mk\nmain:\n",
        read_include=lambda name: {"a.mk": "from_a:\ninclude b.mk\n", "b.mk": "from_b:\n"}.get(
            name
        ),
    )
    assert nested.complete and nested.names == {"main", "from_a", "from_b"}
    looping = make_targets("include self.mk\n", read_include=lambda name: "include self.mk\nx:\n")
    assert not looping.complete and "x" in looping.names


def test_just_recipes() -> None:
    text = (
        "set shell := ['bash', '-c']\nversion := '1.0'\n"
        "default: test\n"
        "@test *args:\n    pytest {{args}}\n"
        "build target='debug': (deps target)\n    cargo build\n"
        "[private]\ndeps t:\n    echo\n"
        "alias b := build\n"
        "# lint: not a recipe\n"
    )
    recipes = just_recipes(text)
    assert recipes.names == {"default", "test", "build", "deps", "b"}
    assert recipes.complete and recipes.knows("deploy") is False
    assert not just_recipes("import 'other.just'\nx:\n").complete
    assert not just_recipes("mod tools\n").complete
    assert not just_recipes("set fallback\nx:\n").complete


def test_paths_below_a_package_and_ignored_paths(repo: Path) -> None:
    index = WorkspaceIndex.build(repo)
    assert index.ends_a_path("util/strings.py") and index.ends_a_path("strings.py")
    assert not index.ends_a_path("tils/strings.py"), "whole segments only"
    assert index.ignored("build/anything.bin") and index.ignored("build")
    assert index.ignored("notes.log") and not index.ignored("src/new.py")
    assert index.exists(".venv-link") is False
    (repo / "bin").mkdir()
    (repo / "bin" / "py").symlink_to("/usr/bin/env")  # a link out, as a venv's python is
    assert index.exists("bin/py"), "a link inside the folder exists, wherever it leads"
    (repo / "out").symlink_to(repo.parent)
    (repo.parent / "secret.txt").write_text("x", encoding="utf-8")
    assert not index.exists("out/secret.txt"), "nothing is looked up through a folder link out"
