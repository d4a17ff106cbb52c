"""A cloned repository's files and a memory entry cannot stall the workspace rules: every regex of
the context rules and the linter meets its worst input (a long run of the character it repeats on),
each beside a benign twin of the same shape that still gives the usual answer.

A hang fails these tests by pytest-timeout; nothing here measures time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from my_agent_core.context.files import ContextText
from my_agent_core.context.index import WorkspaceIndex
from my_agent_core.context.manifests import make_targets
from my_agent_core.context.references import extract
from my_agent_core.context.rules import STALE_REFERENCE, WorkspaceRules
from my_agent_core.context.similarity import ContextCorpus
from my_agent_core.context.volatile import volatile_spans
from my_agent_core.memory.document import ENTRY_DELIMITER, parse
from my_agent_core.memory.lint import MALFORMED_DELIMITER, lint

pytestmark = pytest.mark.timeout(120)

N = 32_000  # about the largest entry the workspace rules look at


def touch(folder: Path, name: str, text: str = "") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def stale(rules: WorkspaceRules, *entries: str) -> list[str]:
    doc = parse(ENTRY_DELIMITER.join(entries))
    return [doc.text[f.start : f.end] for f in rules.lint(doc) if f.code == STALE_REFERENCE]


# ------------------------------------------------------------------------------ Makefiles


@pytest.mark.parametrize(
    "line",
    ["x" + " " * 400_000 + "y", " " * 400_000 + "x", "x" + " " * 400_000 + ":=", "a&" * 200_000],
)
def test_a_makefile_line_of_400000_blanks(line: str) -> None:
    names = make_targets(f"test:\n\tpytest\n{line}\nlint: test\n\truff check .\n")
    assert names.knows("test") and names.knows("lint") and names.knows("deploy") is False


def test_rule_lines_keep_their_meaning() -> None:
    text = "a b: c\nd &: e\nf:: g\nh := i\nj ::= k\nl = m:n\nx%.o: %.c\n\t@echo\n"
    names = make_targets(text)
    assert names.names == {"a", "b", "d", "f"}
    assert names.knows("x1.o") and names.knows("h") is False


def test_a_makefile_that_includes_itself_is_read_a_bounded_number_of_times() -> None:
    reads: list[str] = []
    body = "include " + " ".join(["self.mk"] * 10_000) + "\nbuild:\n\tmake\n"

    def read(name: str) -> str:
        reads.append(name)
        return body

    names = make_targets(body, read_include=read)
    assert names.knows("build") and names.knows("other") is None  # we cannot tell: incomplete
    assert len(reads) <= 32
    other = make_targets("include rules.mk\n", read_include=lambda name: "deploy:\n\tdo\n")
    assert other.knows("deploy") and other.knows("nope") is False  # the benign twin


# ------------------------------------------------------------------------------ entries


HOSTILE_ENTRIES = [
    "`" * N,  # inline code that never closes
    "``" + " `" * (N // 2),
    "." * N,  # a path-character run with no letter at its end
    "-~" * (N // 2),
    "a" * N,  # a URL scheme or a mail name that never reaches `://` or `@`
    "a1" * (N // 2),
    "a." * (N // 2),
    "npm run x " * (N // 10),  # each command looked at its whole line
    "`" + "make x " * (N // 7) + "`",
    "cd " + "x" * N,
    "right" + " " * N,
    "10:30" + " " * N,
    "no " * (N // 3),
]


@pytest.mark.parametrize("entry", HOSTILE_ENTRIES, ids=range(len(HOSTILE_ENTRIES)))
def test_hostile_entries_are_extracted_in_linear_time(entry: str) -> None:
    extract(entry)
    volatile_spans(entry)


def test_the_benign_twins_still_extract() -> None:
    refs = extract(
        "See https://example.com/src/app.py and mail dev@example.com; run `make lint` and "
        "npm run build, code in `src/app.py`; currently broken"
    )
    assert [p.path for p in refs.paths] == ["src/app.py"]
    assert [(c.tool, c.name) for c in refs.commands] == [("make", "lint"), ("npm", "build")]
    assert [s.word for s in volatile_spans("It is `today` in code but today here")] == ["today"]


@pytest.fixture
def deep_repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    touch(folder, "src/main.py")
    touch(folder, ".gitignore", "*.log\n**/gen/**\n")
    touch(folder, "/".join(["src"] * 300) + "/real.py")
    return folder


def test_a_path_7000_folders_deep_is_not_asked_of_the_disk(deep_repo: Path) -> None:
    rules = WorkspaceRules(WorkspaceIndex.build(deep_repo))
    assert stale(rules, "See " + "src/" * 7000 + "main.py for details") == []
    # the benign twins: a deep but legal path is still checked, both ways
    deep = "/".join(["src"] * 300)
    assert stale(rules, f"See {deep}/real.py for details") == []
    assert stale(rules, f"See {deep}/gone.py for details") == [f"{deep}/gone.py"]
    assert stale(rules, f"See {deep}/gen/out.py for details") == []  # ignored: absent by design


def test_the_index_answers_deep_questions_without_walking_up_each_time(deep_repo: Path) -> None:
    index = WorkspaceIndex.build(deep_repo)
    probe = "src/" * 2000 + "x.py"
    assert index.ignored(probe) is False and index.exists(probe) is False
    assert index.ignored("src/" * 200 + "debug.log") is True
    assert index.ignored("src/" * 7000 + "x.py") is False and index.renamed_to(probe) is None


# ------------------------------------------------------------------------------ context files


def test_a_heading_line_of_blanks_in_agents_md() -> None:
    hostile = "# a" + " " * N + "b\n" + "## x" + " #" * N + "\n"
    corpus = ContextCorpus(
        [
            ContextText(
                "AGENTS.md", Path("AGENTS.md"), hostile + "\nRun the tests with make.\n", False
            )
        ]
    )
    assert len(corpus) >= 1
    text = "## Build ##\n\nAlways run the unit tests before every single commit.\n"
    twin = ContextCorpus([ContextText("AGENTS.md", Path("AGENTS.md"), text, False)])
    found = twin.find("Always run the unit tests before every single commit.")
    assert found is not None and found.name == "AGENTS.md"


# ------------------------------------------------------------------------------ the linter


def test_a_delimiter_line_with_a_long_run_of_blanks() -> None:
    hostile = "fact one\n§" + " " * N + "x\nfact two\n"
    assert any(f.code == MALFORMED_DELIMITER for f in lint(parse(hostile), limit=10**6))
    twin = lint(parse("fact one §\nfact two\n"), limit=10**6)
    assert [f.code for f in twin if f.code == MALFORMED_DELIMITER] == [MALFORMED_DELIMITER]
    assert twin[0].fixes  # `§` put on its own line


# ------------------------------------------------------------------------------ the CLI


def test_my_agent_lint_on_a_hostile_clone(tmp_path: Path) -> None:
    """The three reported clones at once: the lint ends, and still reports what is stale."""
    folder = tmp_path / "clone"
    touch(folder, ".gitignore", "*a*a*a*a*a*a*a*a*a*a*a*a*b\n")
    touch(folder, "a" * 250)
    touch(folder, "Makefile", "test:\n\tpytest\nx" + " " * 400_000 + "y\n")
    touch(folder, "src/main.py")
    entries = [
        "Run `make test` before pushing; `make lint` too",
        "See " + "src/" * 7000 + "main.py for details",
        "The entry point is src/gone.py",
    ]
    touch(folder, ".my_agent_core/memory/MEMORY.md", ENTRY_DELIMITER.join(entries) + "\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "server")}
    done = subprocess.run(
        [sys.executable, "-m", "my_agent_core", "lint", "--memory-limit", "100000", str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=110,
    )
    assert "Traceback" not in done.stderr
    flagged = [line for line in done.stdout.splitlines() if "stale-reference" in line]
    assert len(flagged) == 2, done.stdout
    assert "target `lint`" in flagged[0] and "src/gone.py" in flagged[1]
