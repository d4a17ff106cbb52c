"""Imports run one way: the parts of my_agent_core stand in layers, and a module imports only from
layers below its own.

The graph is read from the source (ast), so an import inside a function counts as much as one at
the top: a function-level import hides a cycle from Python's loader, not from a reader. Imports
under `if TYPE_CHECKING:` are for the type checker only and do not count; a package's lazy exports
(`lazy_exports(__name__, {name: home})`) do. A new cycle fails here with the import that made it:
move what both sides need down to the lower layer (docs/lsp-core.md, "Start-up", says which
function-level imports stay and why).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "server"
PACKAGE = "my_agent_core"

#: Bottom first. A part is a top-level module (`paths`) or a sub-package (`memory`, with everything
#: under it); each may import only the parts of the layers before its own.
LAYERS: tuple[tuple[str, ...], ...] = (
    # plain values and helpers that import nothing of ours
    (
        "approval",
        "bounded_json",
        "layout",
        "lazy",
        "process_guard",
        "prompt_text",
        "textdiff",
        "tools",
    ),
    ("paths",),  # the one path check (the memory folder's layout from `layout`)
    ("safe_write",),  # the one atomic writer
    ("private", "user_state"),  # what is one user's, in a workspace and on the machine
    ("memory",),  # the files, the store, the renderer, the memory tool, the archive
    ("coding_tools", "terminal_text", "trust"),  # the workspace tools, the terminal, the policy
    ("context", "team"),  # context files and workspace rules; git's merge driver and setup
    ("agent",),  # the loop, its sessions and its prompt
    ("api_key",),
    ("chat_endpoint",),
    ("chat_cli", "eval", "lsp", "mcp", "recall_cli"),  # the front ends
    ("cli",),  # `my-agent`
    ("__main__",),  # `python -m my_agent_core`
)

LAYER_OF = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under an `if TYPE_CHECKING:` (not its `else:`)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                hidden.update(id(n) for n in ast.walk(child))
    return hidden


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([name] if name else [])])


def imports_of(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of `path` that counts: at any depth, not TYPE_CHECKING, the
    homes of lazy exports included. `from package import submodule` names the submodule."""
    module, is_package = _module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            folder = root.joinpath(*target.split("."))
            submodules = [
                f"{target}.{alias.name}"
                for alias in node.names
                if (folder / alias.name / "__init__.py").exists()
                or (folder / f"{alias.name}.py").exists()
            ]
            for name in submodules or [target]:
                yield node.lineno, name
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "lazy_exports"
            and len(node.args) == 2
            and isinstance(node.args[1], ast.Dict)
        ):
            for value in node.args[1].values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    home = value.value if value.value.startswith(".") else f".{value.value}"
                    level = len(home) - len(home.lstrip("."))
                    yield value.lineno, _resolve(module, True, level, home.lstrip("."))


def part_of(module: str) -> str | None:
    """`memory` for `my_agent_core.memory.store`, `paths` for `my_agent_core.paths`; None outside
    the package and for the package itself (its `__init__` holds the version only)."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    return parts[1]


def edges(root: Path) -> Iterator[tuple[str, int, str, str, str]]:
    """(file, line, module imported, from part, to part) for every import between two parts."""
    for path in sorted((root / PACKAGE).rglob("*.py")):
        source = part_of(_module_name(path, root)[0])
        for line, target in imports_of(path, root):
            to = part_of(target)
            if source is not None and to is not None and to != source:
                yield str(path.relative_to(root)), line, target, source, to


def upward(root: Path) -> list[str]:
    """Every import that does not go down the layers, as `file:line imports module (a -> b)`."""
    problems = []
    for file, line, target, source, to in edges(root):
        if source not in LAYER_OF or to not in LAYER_OF:
            problems.append(f"{file}:{line}: {source} or {to} has no place in LAYERS")
        elif LAYER_OF[to] >= LAYER_OF[source]:
            how = "stays in its layer" if LAYER_OF[to] == LAYER_OF[source] else "goes up"
            problems.append(f"{file}:{line} imports {target}: {source} -> {to} {how}")
    return problems


def test_every_part_has_its_layer() -> None:
    """A new module or package is placed in LAYERS on purpose; a removed one leaves it."""
    found = {
        path.stem if path.is_file() else path.name
        for path in (ROOT / PACKAGE).iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    listed = [part for parts in LAYERS for part in parts]
    assert len(listed) == len(set(listed)), "a part is listed twice"
    assert found == set(listed)


def test_imports_run_down_the_layers() -> None:
    """So the package graph has no cycle: each problem names the import that would make one."""
    assert upward(ROOT) == []


def test_the_root_package_imports_nothing_of_ours() -> None:
    assert [t for _, t in imports_of(ROOT / PACKAGE / "__init__.py", ROOT) if part_of(t)] == []


# ---------------------------------------------------------------------------- the reader itself


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small package laid out like ours: `paths` below `memory`, `memory` below `agent`."""
    pkg = tmp_path / PACKAGE
    for folder in (pkg, pkg / "memory", pkg / "agent"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (pkg / "paths.py").write_text("import os\n")
    (pkg / "memory" / "store.py").write_text("from my_agent_core.paths import x\n")
    (pkg / "agent" / "core.py").write_text("from ..memory import store\n")
    return tmp_path


def test_a_clean_tree_passes(tree: Path) -> None:
    assert upward(tree) == []


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("undo.py", "def f():\n    from my_agent_core.agent import core\n"),  # in a function
        ("undo.py", "from ..agent.core import run\n"),  # relative
        ("undo.py", "from .. import agent\n"),  # a package named in a from-import
        ("undo.py", "import my_agent_core.agent.core as c\n"),
        ("__init__.py", "__getattr__ = lazy_exports(__name__, {'run': '..agent'})\n"),
    ],
)
def test_an_import_up_the_layers_fails_with_its_place(tree: Path, file: str, source: str) -> None:
    (tree / PACKAGE / "memory" / file).write_text(source)
    problems = upward(tree)
    assert len(problems) == 1
    assert problems[0].startswith(f"{PACKAGE}/memory/{file}:")
    assert problems[0].endswith(": memory -> agent goes up")


def test_a_type_checking_import_does_not_count(tree: Path) -> None:
    (tree / PACKAGE / "memory" / "undo.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from my_agent_core.agent.core import Agent\n"
        "else:\n    import json\n"
    )
    assert upward(tree) == []


def test_an_import_within_a_layer_fails(tree: Path) -> None:
    """Two parts of one layer may not import each other either (that is how cycles start)."""
    (tree / PACKAGE / "trust.py").write_text("")
    (tree / PACKAGE / "terminal_text.py").write_text("\n\nfrom my_agent_core import trust\n")
    assert upward(tree) == [
        f"{PACKAGE}/terminal_text.py:3 imports {PACKAGE}.trust: terminal_text -> trust stays in "
        "its layer"
    ]
