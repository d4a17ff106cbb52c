"""Which files of a folder the tools see: .gitignore honoured, the same way ripgrep does it.

Used by list_files and by the pure-Python search when `rg` is missing, so both backends list the
same files: `.gitignore`, `.ignore` and `.rgignore` files in every folder (and in the folders above,
the git ones only up to the repository's top), `.git/info/exclude`, hidden files included, `.git`
never entered, symbolic links and special files skipped, an explicitly named path always taken.
Patterns are compiled by `gitglob` (ripgrep's syntax, matched in linear time, invalid lines
skipped); each file and folder is matched by its own path, as ripgrep does, so a folder that is
itself ignored can still be listed by naming it. The same ignore file read again is not compiled
again (compiled rule sets are kept by content).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import bracex

from my_agent_core.paths import PathRefused, read_regular

from .gitglob import Alternation as _Alternation
from .gitglob import RuleSet, compile_rules
from .seams import CancelToken

__all__ = [
    "GlobFilter",
    "IgnoreRules",
    "WalkCancelled",
    "level_of",
    "walk_batches",
    "walk_files",
]

# Precedence, as ripgrep: .rgignore over .ignore over .gitignore over .git/info/exclude.
_KINDS = (".rgignore", ".ignore", ".gitignore")
_GIT_KINDS = frozenset({".gitignore", "exclude"})
_IGNORE_FILE_MAX = 1024 * 1024
_CHECK_EVERY = 512  # entries between two looks at the cancel token and the deadline


class WalkCancelled(Exception):
    """The cancel token was set or the deadline passed during a walk."""


_CACHED_FILE_MAX = 64 * 1024  # ignore files up to this size are compiled once per content


def _rules_of_text(data: bytes) -> RuleSet:
    if len(data) <= _CACHED_FILE_MAX:
        return _cached_rules(data)
    return _compile_text(data)


@lru_cache(maxsize=256)
def _cached_rules(data: bytes) -> RuleSet:
    return _compile_text(data)


def _compile_text(data: bytes) -> RuleSet:
    text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return compile_rules(text.splitlines())


@dataclass
class _Level:
    """The ignore files of one folder; `base` is its absolute path with a trailing slash."""

    base: str
    rules: dict[str, RuleSet] = field(default_factory=dict)
    has_git: bool = False


def _read_rules(path: str) -> RuleSet | None:
    try:
        data = read_regular(path, max_bytes=_IGNORE_FILE_MAX, truncate=True)
    except PathRefused:
        return None
    if not data:
        return None
    rules = _rules_of_text(data)
    return rules if rules else None


def level_of(
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
        if rules is not None:
            level.rules[kind] = rules
    git = level.base + ".git"
    level.has_git = (".git" in names) if names is not None else os.path.lexists(git)
    if level.has_git and os.path.isdir(git) and not os.path.islink(git):
        if seen is not None:
            seen.append(git + "/info/exclude")
        rules = _read_rules(git + "/info/exclude")
        if rules is not None:
            level.rules["exclude"] = rules
    return level if level.rules or level.has_git else None


class IgnoreRules:
    """The ignore rules in force for the entries of one folder (its own and its ancestors')."""

    __slots__ = ("_chain", "checks", "fast", "fast_negated")

    def __init__(self, chain: tuple[_Level, ...]) -> None:
        self._chain = chain  # deepest first
        # Flattened once per folder, in ripgrep's precedence: every level's .rgignore (deepest
        # first), then .ignore, then .gitignore and exclude (up to the first repository top).
        checks: list[tuple[int, RuleSet]] = []
        for kind in (*_KINDS, "exclude"):
            for level in chain:
                rules = level.rules.get(kind)
                if rules is not None:
                    checks.append((len(level.base), rules))
                if level.has_git and kind in _GIT_KINDS:
                    break
        #: (length of the rules' folder with its slash, rules), in the order they decide.
        self.checks = tuple(checks)
        # The common case, one ignore file of basename patterns (`*.log`, `build/`): the walker
        # decides with one regex call per entry. None: use `checks`.
        self.fast: tuple[_Alternation | None, _Alternation | None] | None = None
        self.fast_negated: tuple[bool, ...] = ()
        if not checks:
            self.fast = (None, None)
        elif len(checks) == 1 and checks[0][1].by_path == (None, None):
            self.fast = checks[0][1].by_name
            self.fast_negated = checks[0][1].negated

    @classmethod
    def above(cls, folder: Path, seen: list[str] | None = None) -> IgnoreRules:
        """The ignore files of `folder` and of every folder above it, nearest first."""
        chain: list[_Level] = []
        current = Path(os.path.realpath(folder))
        while True:
            # Only the ignore files count here (present or not): a busy folder above, like /tmp,
            # changes its own stamp all the time without changing what is listed below.
            level = level_of(str(current), seen=seen)
            if level is not None:
                chain.append(level)
            if current.parent == current:
                break
            current = current.parent
        return cls(tuple(chain))

    def below(self, level: _Level | None) -> IgnoreRules:
        return self if level is None else IgnoreRules((level, *self._chain))

    def ignored(self, abs_path: str, is_dir: bool) -> bool:
        return _ignored(self.checks, abs_path, abs_path.rfind("/") + 1, is_dir)


def _ignored(
    checks: tuple[tuple[int, RuleSet], ...], path: str, name_at: int, is_dir: bool
) -> bool:
    for start, rules in checks:
        verdict = rules.verdict(path, start, name_at, is_dir)
        if verdict is not None:
            return verdict
    return False


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
        except (ValueError, RuntimeError, bracex.ExpansionLimitException) as exc:
            raise ValueError(
                f"The glob {glob!r} cannot be expanded ({exc}): use fewer {{a,b}} alternatives, "
                "or call list_files once per pattern."
            ) from None
        self._rules = compile_rules(expanded)
        if not self._rules:
            raise ValueError(
                f"The glob {glob!r} matches nothing: use a pattern such as '*.py' or 'src/**/*.ts'."
            )

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True: take it, False: skip it, None: leave it to the ignore rules."""
        return self._decide(rel, rel.rfind("/") + 1, is_dir)

    def _decide(self, rel: str, name_at: int, is_dir: bool) -> bool | None:
        hit = self._rules.verdict(rel, 0, name_at, is_dir) is not None
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
    for batch in walk_batches(root, start, glob=glob, cancel=cancel, deadline=deadline, seen=seen):
        yield from batch


def walk_batches(
    root: Path,
    start: Path,
    *,
    glob: GlobFilter | None = None,
    cancel: CancelToken | None = None,
    deadline: float | None = None,
    seen: list[str] | None = None,
) -> Iterator[list[str]]:
    """`walk_files`, one list per folder (what a listing of 20,000 files wants: the per-file work
    is the cost of a walk, so the loop below is kept to a few calls per entry)."""
    root_s = str(root)
    start_s = str(start)
    if os.path.isfile(start_s) and not os.path.islink(start_s):
        if seen is not None:
            seen.append(start_s)
        yield [_rel(root_s, start_s)]
        return
    base_rules = IgnoreRules.above(start.parent, seen) if start != Path("/") else IgnoreRules(())
    skip = len(root_s) + 1  # a path relative to root
    stack: list[tuple[str, IgnoreRules]] = [(start_s, base_rules)]
    budget = _CHECK_EVERY
    while stack:
        folder, rules_above = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        if seen is not None:
            seen.append(folder)
        budget -= len(entries)
        if budget <= 0:
            budget = _CHECK_EVERY
            if cancel is not None and cancel.is_set():
                raise WalkCancelled("cancelled")
            if deadline is not None and time.monotonic() > deadline:
                raise WalkCancelled("timeout")
        names = {entry.name for entry in entries}
        rules = rules_above.below(level_of(folder, names, seen))
        checks, fast, negated = rules.checks, rules.fast, rules.fast_negated
        name_at = len(folder) + 1
        found: list[str] = []
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    is_dir = False
                elif entry.is_dir(follow_symlinks=False):
                    is_dir = True
                else:
                    continue  # symbolic links, FIFOs, sockets, devices
            except OSError:
                continue
            if entry.name == ".git":
                continue
            path = entry.path
            verdict = glob._decide(path[skip:], name_at - skip, is_dir) if glob else None
            if verdict is False:
                continue
            if verdict is None:
                if fast is not None:
                    pair = fast[is_dir]
                    if pair is not None:
                        hit = pair[0].match(path, name_at)
                        if hit is not None and not negated[pair[1][hit.lastindex or 0]]:
                            continue
                elif _ignored(checks, path, name_at, is_dir):
                    continue
            if is_dir:
                stack.append((path, rules))
            else:
                found.append(path[skip:])
        if found:
            yield found


def _rel(root: str, path: str) -> str:
    return "." if path == root else path[len(root) + 1 :]
