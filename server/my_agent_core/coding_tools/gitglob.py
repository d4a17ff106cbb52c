"""Gitignore patterns compiled to regexes that cannot backtrack out of control.

A cloned repository writes its own `.gitignore`, and a model writes list_files' glob: neither may
stall the tools, the linter or the language server. A glob such as `*a*a*a*a*a*a*a*a*a*b` turned
into `[^/]*a[^/]*a...b` makes Python's backtracking `re` try every way to split a long name, so
each `*` here becomes an atomic group that commits to the leftmost place its next piece fits (for
`*`, leftmost is always the right choice), the last piece is checked at the end with a fixed-width
look-behind, and each path segment and each `**` is committed to the same way. Every match is then
linear in the path (times the pattern), whatever the pattern.

The syntax and meaning are ripgrep's (its `ignore` and `globset` crates, as in ripgrep 13): `*`,
`?`, `[...]` (`!`/`^` negates, `]` first is literal, ranges), `{a,b}` alternatives, `\\` escapes,
`**/` `/**/` `/**` for any number of folders, a leading `/` or an inner `/` anchors the pattern to
its folder, a trailing `/` matches folders only, `!` re-includes, `#` comments, trailing blanks
dropped. A line ripgrep refuses (dangling `\\`, `[z-a]`, an unclosed `[` or `{`, nested `{}`) is
skipped, as ripgrep skips it; so is a line with nothing left to match (`!`, `/`), as git skips it.
Departures, all on lines no real repository writes: a class never matches `/` (as in git), and a
line whose alternatives expand to more than `MAX_EXPANSIONS` patterns, or put `**` inside `{}`, is
skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from itertools import product

__all__ = [
    "MAX_EXPANSIONS",
    "Alternation",
    "GlobError",
    "Pattern",
    "RuleSet",
    "compile_rules",
    "parse_line",
]

#: A line whose `{...}` alternatives expand to more patterns than this is skipped.
MAX_EXPANSIONS = 256
# What Rust's `trim_end` strips (Unicode White_Space), which ripgrep applies to each line.
_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


class GlobError(ValueError):
    """A pattern ripgrep refuses; its line is skipped."""


class _Op(Enum):
    ANY = "?"
    STAR = "*"
    RPREFIX = "**/"  # any number of leading folders
    RSUFFIX = "/**"  # everything below
    RZOM = "/**/"  # one slash, or any number of folders between two slashes


@dataclass(frozen=True, slots=True)
class _Class:
    negated: bool
    ranges: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    branches: tuple[tuple[_Token, ...], ...]


_Token = str | _Op | _Class | _Alt  # a str is one literal character
#: A regex of several patterns and, for each of its groups, the number of the pattern it is.
Alternation = tuple[re.Pattern[str], tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Pattern:
    """One usable line: `glob` as ripgrep matches it (`**/` added to an unanchored pattern)."""

    glob: str
    negated: bool
    only_dir: bool


def parse_line(line: str) -> Pattern | None:
    """The pattern of one ignore-file line, or None for a blank line, a comment, or a line with
    nothing left to match (`!`, `/`). Does not check the glob itself (see `compile_rules`)."""
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip(_WHITESPACE)
    if not line:
        return None
    negated = absolute = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
        absolute = line.startswith("/")
    else:
        if line.startswith("!"):
            negated = True
            line = line[1:]
        if line.startswith("/"):
            line = line[1:]
            absolute = True
    only_dir = line.endswith("/")
    if only_dir:
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    if not line:
        return None  # `!`, `/`, `!/`: git skips them (ripgrep 13 would re-include everything)
    if not absolute and "/" not in line and not (line.startswith("**/") or line == "**"):
        line = "**/" + line
    if line.endswith("/**"):
        line += "/*"
    return Pattern(line, negated, only_dir)


# ------------------------------------------------------------------------------------ parsing


class _Parser:
    """globset's parser (ripgrep 13): `**` rules, classes, one level of `{}` alternatives."""

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.pos = 0
        self.prev: str | None = None
        self.cur: str | None = None
        self.stack: list[list[_Token]] = [[]]

    def bump(self) -> str | None:
        self.prev = self.cur
        self.cur = self.glob[self.pos] if self.pos < len(self.glob) else None
        if self.cur is not None:
            self.pos += 1
        return self.cur

    def peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def parse(self) -> list[_Token]:
        while (c := self.bump()) is not None:
            if c == "?":
                self.stack[-1].append(_Op.ANY)
            elif c == "*":
                self.star()
            elif c == "[":
                self.stack[-1].append(self.char_class())
            elif c == "{":
                if len(self.stack) > 1:
                    raise GlobError("nested alternate groups are not allowed")
                self.stack.append([])
            elif c == "}":
                branches: list[list[_Token]] = []
                while len(self.stack) >= 2:
                    branches.append(self.stack.pop())
                self.stack[-1].append(_Alt(tuple(tuple(b) for b in reversed(branches))))
            elif c == ",":
                if len(self.stack) <= 1:
                    self.stack[-1].append(",")
                else:
                    self.stack.append([])
            elif c == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise GlobError("dangling '\\'")
                self.stack[-1].append(escaped)
            else:
                self.stack[-1].append(c)
        if len(self.stack) > 1:
            raise GlobError("unclosed alternate group")
        return self.stack[0]

    def star(self) -> None:
        tokens = self.stack[-1]
        prev = self.prev
        if self.peek() != "*":
            tokens.append(_Op.STAR)
            return
        self.bump()
        if not tokens:
            if self.peek() not in (None, "/"):
                tokens += [_Op.STAR, _Op.STAR]
            else:
                tokens.append(_Op.RPREFIX)
                self.bump()
            return
        if prev != "/" and (len(self.stack) <= 1 or prev not in (",", "{")):
            tokens += [_Op.STAR, _Op.STAR]
            return
        nxt = self.peek()
        if nxt is None or (nxt in (",", "}") and len(self.stack) >= 2):
            is_suffix = True
        elif nxt == "/":
            self.bump()
            is_suffix = False
        else:
            tokens += [_Op.STAR, _Op.STAR]
            return
        last = tokens.pop()
        if last in (_Op.RPREFIX, _Op.RSUFFIX):
            tokens.append(last)
        else:
            tokens.append(_Op.RSUFFIX if is_suffix else _Op.RZOM)

    def char_class(self) -> _Class:
        ranges: list[tuple[str, str]] = []
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        first = True
        in_range = False
        while True:
            c = self.bump()
            if c is None:
                raise GlobError("unclosed character class")
            if c == "]" and not first:
                break
            if c == "-" and not first:
                if in_range:
                    ranges[-1] = _extend(ranges[-1], "-")
                    in_range = False
                else:
                    in_range = True
            elif in_range:
                ranges[-1] = _extend(ranges[-1], c)
                in_range = False
            else:
                ranges.append((c, c))
            first = False
        if in_range:
            ranges.append(("-", "-"))
        return _Class(negated, tuple(ranges))


def _extend(span: tuple[str, str], end: str) -> tuple[str, str]:
    if end < span[0]:
        raise GlobError(f"invalid range; {span[0]!r} > {end!r}")
    return (span[0], end)


def _expand(tokens: list[_Token]) -> list[list[_Token]]:
    """Alternatives multiplied out (empty ones dropped, as globset drops them)."""
    choices: list[list[list[_Token]]] = []
    count = 1
    for token in tokens:
        if isinstance(token, _Alt):
            options = [list(branch) for branch in token.branches if branch] or [[]]
        else:
            options = [[token]]
        count *= len(options)
        if count > MAX_EXPANSIONS:
            raise GlobError(f"more than {MAX_EXPANSIONS} alternatives")
        choices.append(options)
    return [[t for part in combo for t in part] for combo in product(*choices)]


# ------------------------------------------------------------------------------------ regexes


def _char(c: str) -> str:
    return c if c.isascii() and c.isalnum() else f"\\U{ord(c):08x}"


def _one(token: _Token) -> str:
    """A fixed-width piece: one literal character, `?` or a class (never `/`)."""
    if isinstance(token, str):
        return re.escape(token)
    if token is _Op.ANY:
        return "[^/]"
    assert isinstance(token, _Class)
    body = "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in token.ranges)
    return f"[^/{body}]" if token.negated else f"(?!/)[{body}]"


def _segment(tokens: list[_Token]) -> str:
    """One path segment: the pieces between `*`s, each placed at its leftmost fit (committed), the
    last one checked against the segment's end by a look-behind."""
    chunks: list[list[_Token]] = [[]]
    for token in tokens:
        if token is _Op.STAR:
            if chunks[-1] or len(chunks) == 1:
                chunks.append([])
        else:
            chunks[-1].append(token)
    if len(chunks) == 1:
        return "".join(_one(t) for t in chunks[0])
    head, *middle, tail = chunks
    out = "".join(_one(t) for t in head)
    for chunk in middle:
        out += "(?>[^/]*?" + "".join(_one(t) for t in chunk) + ")"
    if tail:
        out += f"(?=[^/]{{{len(tail)}}})[^/]*+(?<=" + "".join(_one(t) for t in tail) + ")"
    else:
        out += "[^/]*+"
    return f"(?>{out})"


def _segments(tokens: list[_Token]) -> str:
    parts: list[list[_Token]] = [[]]
    for token in tokens:
        if token == "/":
            parts.append([])
        else:
            parts[-1].append(token)
    return "/".join(_segment(part) for part in parts)


def _regex(tokens: list[_Token]) -> tuple[str, bool]:
    """The regex of an alternative-free glob (matched with `.match(path, start)`), and whether it
    is a basename pattern (`**/name`: matched against the last segment alone)."""
    for n, token in enumerate(tokens):
        if (token is _Op.RPREFIX and n != 0) or (token is _Op.RSUFFIX and n != len(tokens) - 1):
            raise GlobError("`**` inside alternatives")
    prefix = bool(tokens) and tokens[0] is _Op.RPREFIX
    suffix = bool(tokens) and tokens[-1] is _Op.RSUFFIX
    body = tokens[1 if prefix else 0 : len(tokens) - 1 if suffix else len(tokens)]
    parts: list[list[_Token]] = [[]]
    for token in body:
        if token is _Op.RZOM:
            parts.append([])
        else:
            parts[-1].append(token)
    if prefix and not suffix and len(parts) == 1 and "/" not in parts[0]:
        return _segment(parts[0]) + r"\Z", True
    out = ""
    for n, part in enumerate(parts):
        last = n == len(parts) - 1 and not suffix
        lead = "" if n == 0 else "/"
        if n == 0 and not prefix:
            out += _segments(part)
        elif last:  # must end where the path ends: try each folder boundary (each try is linear)
            out += f"{lead}(?:[^/]*/)*{_segments(part)}"
        else:  # the leftmost place it fits leaves the most room for the rest: commit to it
            out += f"{lead}(?>(?:[^/]*/)*?{_segments(part)})"
    if suffix:
        out += "/(?s:.)*"
    return out + r"\Z", False


@dataclass(frozen=True, slots=True)
class _Compiled:
    regex: str
    basename: bool
    negated: bool
    only_dir: bool


def _compile_line(line: str) -> list[_Compiled]:
    pattern = parse_line(line)
    if pattern is None:
        return []
    tokens = _Parser(pattern.glob).parse()
    if tokens == [_Op.RPREFIX]:  # `**` alone: everything
        return [_Compiled(r"(?s:.)*\Z", False, pattern.negated, pattern.only_dir)]
    found: list[_Compiled] = []
    for alternative in _expand(tokens):
        regex, basename = _regex(alternative)
        found.append(_Compiled(regex, basename, pattern.negated, pattern.only_dir))
    return found


class RuleSet:
    """The patterns of one ignore file (or of one glob), compiled for the walker.

    `verdict(path, start, name_at, is_dir)` looks at `path[start:]`, the path relative to the
    rules' folder (`path[name_at:]` is its last segment): True when the last pattern that matches
    ignores it, False when it re-includes it, None when none matches. Each kind of entry (file,
    folder) gets two regexes: basename patterns, matched at the name, and path patterns; each is
    one alternation, last line first, whose matching group says which line decided.
    """

    __slots__ = ("by_name", "by_path", "negated", "skipped")

    def __init__(self, lines: Iterable[str]) -> None:
        compiled: list[_Compiled] = []
        skipped = 0
        for line in lines:
            try:
                compiled.extend(_compile_line(line))
            except GlobError:
                skipped += 1
        #: Lines skipped because the pattern is invalid (ripgrep and git skip them too).
        self.skipped = skipped
        #: Per compiled pattern: whether it re-includes (`!`).
        self.negated = tuple(rule.negated for rule in compiled)
        #: For a file (index 0) and a folder (1): the basename regex and the pattern number of
        #: each of its groups, or None when no basename pattern applies; `by_path` likewise.
        self.by_name = (_alternation(compiled, False, True), _alternation(compiled, True, True))
        self.by_path = (_alternation(compiled, False, False), _alternation(compiled, True, False))

    def __bool__(self) -> bool:
        return bool(self.negated)

    def verdict(self, path: str, start: int, name_at: int, is_dir: bool) -> bool | None:
        best = -1
        by_name = self.by_name[is_dir]
        if by_name is not None:
            found = by_name[0].match(path, name_at)
            if found is not None:
                best = by_name[1][found.lastindex or 0]
        by_path = self.by_path[is_dir]
        if by_path is not None:
            found = by_path[0].match(path, start)
            if found is not None:
                best = max(best, by_path[1][found.lastindex or 0])
        return None if best < 0 else not self.negated[best]

    def matches(self, path: str, is_dir: bool) -> bool:
        """Some pattern (ignoring or not) matches `path` (relative to the rules' folder)."""
        return self.verdict(path, 0, path.rfind("/") + 1, is_dir) is not None


def _alternation(compiled: list[_Compiled], is_dir: bool, basename: bool) -> Alternation | None:
    """One regex of the rules that apply, last line first (the first group that matches is the
    line that decides), and the line number of each group (group 0 unused)."""
    chosen = [
        (n, rule)
        for n, rule in enumerate(compiled)
        if rule.basename == basename and (is_dir or not rule.only_dir)
    ]
    if not chosen:
        return None
    chosen.reverse()
    regex = re.compile("|".join(f"({rule.regex})" for _n, rule in chosen))
    return regex, (-1, *(n for n, _rule in chosen))


def compile_rules(lines: Iterable[str]) -> RuleSet:
    """The rules of ignore-file lines (invalid lines skipped, see the module's docstring)."""
    return RuleSet(lines)
