"""Which files of a folder the tools see: .gitignore honoured, the same way ripgrep does it.

Used by list_files and by the pure-Python search when `rg` is missing, so both backends list the
same files: `.gitignore`, `.ignore` and `.rgignore` files in every folder (and in the folders above,
the git ones only up to the repository's top), `.git/info/exclude`, hidden files included, `.git`
never entered, symbolic links and special files skipped, an explicitly named path always taken.
Patterns are compiled by `pathspec`; each file and folder is matched by its own path, as ripgrep
does, so a folder that is itself ignored can still be listed by naming it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import bracex
import pathspec

from my_agent_core.paths import PathRefused, read_regular

from .seams import CancelToken

__all__ = ["GlobFilter", "IgnoreRules", "WalkCancelled", "walk_files"]

# Precedence, as ripgrep: .rgignore over .ignore over .gitignore over .git/info/exclude.
_KINDS = (".rgignore", ".ignore", ".gitignore")
_GIT_KINDS = frozenset({".gitignore", "exclude"})
_IGNORE_FILE_MAX = 1024 * 1024
_DIR_MARK = "ps_d"  # pathspec's name for the group that matches a folder's trailing slash


class WalkCancelled(Exception):
    """The cancel token was set or the deadline passed during a walk."""


class _Rule:
    """One compiled pattern, matched against a path exactly (not through its parent folders)."""

    __slots__ = ("ignore", "regex", "whole")

    def __init__(self, regex: re.Pattern[str], ignore: bool) -> None:
        self.ignore = ignore
        if _DIR_MARK in regex.groupindex:
            # "name" / "name/": must end where the path ends (a folder is passed with its slash).
            self.regex = re.compile(f"(?:{regex.pattern})\\Z")
            self.whole = True
        else:
            # "dir/**" and "*": matches everything below (or anything), not the folder itself.
            self.regex = regex
            self.whole = False

    def matches(self, path: str) -> bool:
        if self.whole:
            return self.regex.search(path) is not None
        found = self.regex.search(path)
        return found is not None and (found.end() < len(path) or not path.endswith("/"))


def _compile(lines: list[str]) -> list[_Rule]:
    rules: list[_Rule] = []
    for pattern in pathspec.GitIgnoreSpec.from_lines(lines).patterns:
        regex = getattr(pattern, "regex", None)
        if regex is None or pattern.include is None:
            continue
        rules.append(_Rule(regex, bool(pattern.include)))
    return rules


def _last_match(rules: list[_Rule], path: str) -> bool | None:
    for rule in reversed(rules):
        if rule.matches(path):
            return rule.ignore
    return None


@dataclass
class _Level:
    """The ignore files of one folder; `base` is its absolute path with a trailing slash."""

    base: str
    rules: dict[str, list[_Rule]] = field(default_factory=dict)
    has_git: bool = False


def _read_rules(path: str) -> list[_Rule]:
    try:
        data = read_regular(path, max_bytes=_IGNORE_FILE_MAX, truncate=True)
    except PathRefused:
        return []
    if not data:
        return []
    return _compile(data.decode("utf-8", errors="replace").splitlines())


def _level_of(
    folder: str, names: set[str] | None = None, seen: list[str] | None = None
) -> _Level | None:
    """The rules of `folder` (None when it has none and no .git); `names`: its entries when known
    (else every ignore file name is tried). `seen` collects the ignore files consulted, present or
    not, so a listing cache notices one being created, edited or removed."""
    level = _Level(folder.rstrip("/") + "/")
    for kind in _KINDS:
        if names is not None and kind not in names:
            continue
        if seen is not None:
            seen.append(level.base + kind)
        rules = _read_rules(level.base + kind)
        if rules:
            level.rules[kind] = rules
    git = level.base + ".git"
    level.has_git = (".git" in names) if names is not None else os.path.lexists(git)
    if level.has_git and os.path.isdir(git) and not os.path.islink(git):
        if seen is not None:
            seen.append(git + "/info/exclude")
        rules = _read_rules(git + "/info/exclude")
        if rules:
            level.rules["exclude"] = rules
    return level if level.rules or level.has_git else None


class IgnoreRules:
    """The ignore rules in force for the entries of one folder (its own and its ancestors')."""

    __slots__ = ("_chain", "_checks")

    def __init__(self, chain: tuple[_Level, ...]) -> None:
        self._chain = chain  # deepest first
        # Flattened once per folder, in ripgrep's precedence: every level's .rgignore (deepest
        # first), then .ignore, then .gitignore and exclude (up to the first repository top).
        checks: list[tuple[str, list[_Rule], re.Pattern[str]]] = []
        for kind in (*_KINDS, "exclude"):
            for level in chain:
                rules = level.rules.get(kind)
                if rules:
                    checks.append((level.base, rules, _any_of(rules)))
                if level.has_git and kind in _GIT_KINDS:
                    break
        self._checks = tuple(checks)

    @classmethod
    def above(cls, folder: Path, seen: list[str] | None = None) -> IgnoreRules:
        """The ignore files of `folder` and of every folder above it, nearest first."""
        chain: list[_Level] = []
        current = Path(os.path.realpath(folder))
        while True:
            # Only the ignore files count here (present or not): a busy folder above, like /tmp,
            # changes its own stamp all the time without changing what is listed below.
            level = _level_of(str(current), seen=seen)
            if level is not None:
                chain.append(level)
            if current.parent == current:
                break
            current = current.parent
        return cls(tuple(chain))

    def below(self, level: _Level | None) -> IgnoreRules:
        return self if level is None else IgnoreRules((level, *self._chain))

    def ignored(self, abs_path: str, is_dir: bool) -> bool:
        for base, rules, quick in self._checks:
            rel = abs_path[len(base) :]
            path = rel + "/" if is_dir else rel
            if quick.search(path) is None:  # most paths match no pattern of a file at all
                continue
            verdict = _last_match(rules, path)
            if verdict is not None:
                return verdict
        return False


def _any_of(rules: list[_Rule]) -> re.Pattern[str]:
    """One regex that matches wherever any rule might (a quick first filter; rules decide)."""
    parts = [re.sub(r"\(\?P<[^>]+>", "(?:", rule.regex.pattern) for rule in rules]
    return re.compile("|".join(f"(?:{part})" for part in parts))


class GlobFilter:
    """The `glob` argument: a gitignore-style pattern (`*.py`, `src/**/*.ts`, `*.{ts,tsx}`, or
    `!tests/**` to exclude) matched against paths relative to the workspace folder. A file matching
    an including glob is taken even when .gitignore ignores it (as `rg --glob` does)."""

    def __init__(self, glob: str) -> None:
        text = glob.strip()
        self.negated = text.startswith("!")
        if self.negated:
            text = text[1:]
        try:
            expanded = bracex.expand(text, limit=256)
        except (ValueError, RuntimeError) as exc:
            raise ValueError(f"The glob {glob!r} cannot be expanded: {exc}") from None
        self._rules = _compile(expanded)
        if not self._rules:
            raise ValueError(
                f"The glob {glob!r} matches nothing: use a pattern such as '*.py' or 'src/**/*.ts'."
            )

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True: take it, False: skip it, None: leave it to the ignore rules."""
        path = rel + "/" if is_dir else rel
        hit = any(rule.matches(path) for rule in self._rules)
        if self.negated:
            return False if hit else None
        if hit:
            return True
        return None if is_dir else False


def walk_files(
    root: Path,
    start: Path,
    *,
    glob: GlobFilter | None = None,
    cancel: CancelToken | None = None,
    deadline: float | None = None,
    seen: list[str] | None = None,
) -> Iterator[str]:
    """The path (relative to `root`) of every file under `start` the tools may see, in no
    particular order. `root` and `start` are real paths, `start` inside `root`. `seen` collects
    the folders scanned and the ignore files consulted: while none of them changes, neither does
    the list of files."""

    root_s = str(root)
    start_s = str(start)
    if os.path.isfile(start_s) and not os.path.islink(start_s):
        if seen is not None:
            seen.append(start_s)
        yield _rel(root_s, start_s)
        return
    base_rules = IgnoreRules.above(start.parent, seen) if start != Path("/") else IgnoreRules(())
    stack: list[tuple[str, IgnoreRules]] = [(start_s, base_rules)]
    checked = 0
    while stack:
        folder, rules_above = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        names = {entry.name for entry in entries}
        if seen is not None:
            seen.append(folder)
        rules = rules_above.below(_level_of(folder, names, seen))
        for entry in entries:
            checked += 1
            if checked % 512 == 0:
                if cancel is not None and cancel.is_set():
                    raise WalkCancelled("cancelled")
                if deadline is not None and time.monotonic() > deadline:
                    raise WalkCancelled("timeout")
            name = entry.name
            if name == ".git":
                continue
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and not entry.is_file(follow_symlinks=False):
                    continue  # FIFOs, sockets, devices
            except OSError:
                continue
            path = entry.path
            rel = path[len(root_s) + 1 :]
            verdict = glob.decide(rel, is_dir) if glob is not None else None
            if verdict is False:
                continue
            if verdict is None and rules.ignored(path, is_dir):
                continue
            if is_dir:
                stack.append((path, rules))
            else:
                yield rel


def _rel(root: str, path: str) -> str:
    return "." if path == root else path[len(root) + 1 :]
