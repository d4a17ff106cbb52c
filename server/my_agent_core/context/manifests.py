"""What a project's task files define: npm scripts, make targets, just recipes.

Memory often says "run `make test`" or "`npm run lint` before pushing"; when the project renames a
target that note becomes a trap. These readers tell which names a file defines, and whether that
list is COMPLETE: a Makefile with a catch-all rule, targets built from variables or an include we
cannot read, a justfile with imports or modules, a package.json that does not parse, all mean "we
cannot tell", and the rule then says nothing. Being silent beats a false warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from my_agent_core.bounded_json import loads

__all__ = [
    "JUST_NAMES",
    "MAKE_NAMES",
    "NPM_NAME",
    "TaskNames",
    "just_recipes",
    "make_targets",
    "npm_scripts",
]

NPM_NAME = "package.json"
#: The names make looks for, in its order; just looks for any case of `justfile` (and `.justfile`).
MAKE_NAMES = ("GNUmakefile", "makefile", "Makefile")
JUST_NAMES = ("justfile", "Justfile", "JUSTFILE", ".justfile")
_MAX_INCLUDE_DEPTH = 3
#: Included files read per Makefile, all depths together (a file including itself a thousand times
#: must not be read a billion times); past it the list is incomplete.
_MAX_INCLUDES = 32
#: `%` rules kept; a file with more is "we cannot tell".
_MAX_PATTERNS = 256


@dataclass(frozen=True, slots=True)
class TaskNames:
    """The names a task file defines. `complete` False: it may define others we cannot see (then
    nothing is reported missing). `patterns` are make's `%` rules (`%.o`), which define any name
    of their shape. `source` is the file's name, for messages."""

    source: str
    names: frozenset[str]
    complete: bool = True
    patterns: tuple[re.Pattern[str], ...] = ()

    def knows(self, name: str) -> bool | None:
        """True when `name` is defined, False when it surely is not, None when we cannot tell."""
        if name in self.names or any(p.fullmatch(name) for p in self.patterns):
            return True
        return False if self.complete else None


def npm_scripts(text: str, source: str = NPM_NAME) -> TaskNames:
    """The `scripts` of a package.json (incomplete when it does not parse: we cannot tell)."""
    try:
        data = loads(text, what=source)  # a clone's file: its depth is bounded before parsing
    except ValueError:
        return TaskNames(source, frozenset(), complete=False)
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return TaskNames(source, frozenset())
    return TaskNames(source, frozenset(k for k in scripts if isinstance(k, str)))


# ------------------------------------------------------------------------------------ make

_MAKE_INCLUDE = re.compile(r"^\s*(?:-include|sinclude|include)\s+(?P<files>.+)$")
_MAKE_DEFINE = re.compile(r"^\s*define\b")
_MAKE_ENDEF = re.compile(r"^\s*endef\b")
_MAKE_ASSIGN = re.compile(r"^\s*(?:export\s+|override\s+)?[A-Za-z0-9_.-]+\s*(?:[:!?+]|::)?=")
_SPECIAL_ANY = frozenset({".DEFAULT"})  # a rule here makes any target work


def _make_lines(text: str) -> list[str]:
    """Logical lines: backslash continuations joined, comments cut (not inside recipes)."""
    lines: list[str] = []
    pending = ""
    for raw in text.replace("\r\n", "\n").split("\n"):
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def make_targets(
    text: str, source: str = "Makefile", read_include: Callable[[str], str | None] | None = None
) -> TaskNames:
    """The explicit targets of a Makefile. `read_include(name)` gives an included file's text (None
    when it cannot be read: then the list is incomplete); included files are read up to three deep."""
    names: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    budget = [_MAX_INCLUDES]
    complete = _read_make(text, names, patterns, read_include, 0, budget)
    if len(patterns) > _MAX_PATTERNS:
        return TaskNames(source, frozenset(names), False)
    return TaskNames(source, frozenset(names), complete, tuple(patterns))


def _rule_targets(code: str) -> str | None:
    """The targets of a rule line (`a b: deps`, `a &: deps`, `a:: deps`), or None when the line
    is not a rule. Plain string search: the regex it replaces retried a long run of blanks from
    each character (a Makefile line of 400,000 spaces took minutes)."""
    if not code or code[0] in ":=#\t":
        return None
    colon = code.find(":")
    if colon < 0:
        return None
    head = code[:colon]
    if "=" in head or code[colon + 1 : colon + 2] == "=" or code[colon + 1 : colon + 3] == ":=":
        return None  # `a = b:c`, `a := b`, `a ::= b`: assignments
    if head.endswith("&"):
        head = head[:-1]
    head = head.rstrip()
    return head or None


def _read_make(
    text: str,
    names: set[str],
    patterns: list[re.Pattern[str]],
    read_include: Callable[[str], str | None] | None,
    depth: int,
    budget: list[int],
) -> bool:
    complete = True
    in_define = False
    for line in _make_lines(text):
        if in_define:
            in_define = not _MAKE_ENDEF.match(line)
            continue
        if _MAKE_DEFINE.match(line):
            in_define = True
            continue
        if line.startswith("\t") or not line.strip():
            continue  # a recipe line, or blank
        code = line.split("#", 1)[0]
        include = _MAKE_INCLUDE.match(code)
        if include:
            for name in include.group("files").split():
                if (
                    "$" in name
                    or read_include is None
                    or depth >= _MAX_INCLUDE_DEPTH
                    or budget[0] <= 0
                ):
                    complete = False
                    continue
                budget[0] -= 1
                included = read_include(name)
                if included is None:
                    complete = False
                    continue
                complete = (
                    _read_make(included, names, patterns, read_include, depth + 1, budget)
                    and complete
                )
            continue
        if _MAKE_ASSIGN.match(code):
            continue
        targets = _rule_targets(code)
        if targets is None:
            continue
        for target in targets.split():
            if "$" in target:
                complete = False  # a target named by a variable: could be anything
            elif target == "%" or target in _SPECIAL_ANY:
                complete = False
            elif "%" in target:
                if len(patterns) <= _MAX_PATTERNS:
                    stem = ".+".join(re.escape(part) for part in target.split("%", 1))
                    patterns.append(re.compile(stem))
            elif not target.startswith(".") or "/" in target:
                names.add(target)
    return complete


# ------------------------------------------------------------------------------------ just

_JUST_RECIPE = re.compile(r"^@?(?P<name>[A-Za-z_][A-Za-z0-9_-]*)(?P<params>\s[^:\n]*?)?:(?!=)")
_JUST_ALIAS = re.compile(r"^alias\s+(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\s*:=")
_JUST_OPEN_ENDED = re.compile(r"^(?:import\??|mod\??)\s|^set\s+fallback\b")
_JUST_KEYWORDS = frozenset({"set", "export", "alias", "import", "mod", "if", "else"})


def just_recipes(text: str, source: str = "justfile") -> TaskNames:
    """The recipes and aliases of a justfile (incomplete with imports, modules or fallback)."""
    names: set[str] = set()
    complete = True
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line or line[0] in " \t#[":
            continue  # recipe bodies, comments, attributes
        if _JUST_OPEN_ENDED.match(line):
            complete = False
            continue
        alias = _JUST_ALIAS.match(line)
        if alias:
            names.add(alias.group("name"))
            continue
        recipe = _JUST_RECIPE.match(line)
        if recipe and recipe.group("name") not in _JUST_KEYWORDS:
            names.add(recipe.group("name"))
    return TaskNames(source, frozenset(names), complete)
