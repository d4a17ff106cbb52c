"""What an entry claims about the workspace: the paths it names and the task commands it gives.

Memory is prose with code in it, so most slashes and dots are not paths: "and/or", "1/2",
"2024/05/01", "Node.js", "e.g.", a regex `^src/.*\\.py$`, a glob `src/**/*.ts`, a URL. The rule
that reports stale references must be precise or it is noise, so extraction is conservative:

- URLs, e-mail addresses and `git@host:path` remotes are masked first; so are fenced code blocks
  in a language other than a shell (Python, a regex, SQL, ...): text there is code, not a claim.
- A candidate is a run of ASCII path characters (`A-Z a-z 0-9 _ . / @ + ~ -`) bounded by space,
  non-ASCII text (Chinese prose needs no spaces), quotes, brackets or Markdown emphasis. A run
  that touches `$`, `%`, `\\`, `^`, `|`, `=`-less shell syntax or a glob star is not a path.
- It must look like THIS project's path: `./x`, a first segment that is a top-level entry of the
  folder (`src/...`), or a last segment with a known extension (`scripts/test.sh`). A bare name
  (`config.py`, `Makefile`) counts only with a known extension or as a well-known file name, and
  never as a technology (`Node.js`) or a host (`docs.rs`). Absolute, home (`~/`), parent (`../`)
  and scoped package (`@types/node`) paths are not the folder's and are skipped.
- `npm run X` / `pnpm run X` / `yarn run X` are recognised anywhere, except where X is a word of
  a sentence about npm itself ("npm run lists the scripts", "npm run without a name").
- `make X` and `just X` are recognised in code (an inline code span, a shell code block, a `$ `
  prompt line), every target there; and in prose too, where "make sure", "just like" and "make
  it work" are English, so only when the first word after the tool is made for a task file (a
  `-`, `_` or `:` inside it: "make publish-everything", "just lint-the-world") or the words
  before say a command follows ("run make deploy", "go through make release", "via just
  ship"), and the word is not a common English one. A command with `cd ... &&` before it or `-C`
  / `-f` / `--prefix` / `--workspace` flags runs elsewhere, so it is not checked.

Extraction depends only on the entry's text, so its result is cached per entry; whether a path
exists is asked of the index at lint time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "KNOWN_EXTENSIONS",
    "CommandRef",
    "EntryRefs",
    "PathRef",
    "extract",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


KNOWN_EXTENSIONS = _words(
    """py pyi pyx ipynb js mjs cjs ts mts cts tsx jsx json jsonc json5 jsonl toml yaml yml md mdx rst
    txt adoc sh bash zsh fish ps1 bat cmd rs go c h cc cpp cxx hpp hh cs fs java kt kts scala groovy
    gradle swift mm rb php pl pm lua dart ex exs erl hs ml elm clj sql graphql gql proto html htm
    css scss sass less vue svelte astro xml xsd ini cfg conf properties lock mk cmake tf tfvars hcl
    nix csv tsv svg png jpg jpeg gif webp ico pdf wasm zig jl sol env example sample tmpl j2 jinja
    http dockerignore gitignore editorconfig"""
)
#: Extensionless files people name in notes.
WELL_KNOWN_FILES = _words(
    """Makefile GNUmakefile makefile Dockerfile Containerfile Justfile justfile Gemfile Rakefile
    Procfile Vagrantfile Brewfile Pipfile Caddyfile Jenkinsfile Taskfile CODEOWNERS"""
)
# Bare names with a known extension that are technologies or hosts, not files of the folder.
_NOT_FILES = _words(
    """node.js vue.js next.js nuxt.js express.js three.js d3.js chart.js ember.js backbone.js
    react.js angular.js socket.io alpine.js p5.js ts-node.js deno.js bun.js nest.js solid.js
    docs.rs bun.sh rustup.rs sh.rustup.rs get.docker.com readme.io llama.cpp whisper.cpp ggml.cpp
    gemma.cpp bark.cpp"""
)
# Names of conventions more than of files: a note may speak of AGENTS.md in a project without one.
_CONVENTION_NAMES = _words(
    """AGENTS.md CLAUDE.md GEMINI.md copilot-instructions.md MEMORY.md USER.md history.jsonl
    SKILL.md SOUL.md"""
)
_SHELL_LANGS = frozenset({"", "sh", "bash", "zsh", "shell", "console", "terminal", "fish", "ps"})

# Every regex here runs on text a clone or a model wrote, so none may retry a long run from each of
# its characters (quadratic: a 32 KB entry took minutes): runs start at a run's first character
# (look-behind) or are bounded ({0,63}: no URL scheme or mail name is longer).
_URL = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.-]{0,63}://|www\.)[^\s<>\"'`)\]]*"
    r"|[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+(?::[\w./~-]+)?"  # e-mail, git@host:path
)
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.MULTILINE)
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_PROMPT_LINE = re.compile(r"^[ \t]*\$[ \t]+(.+)$", re.MULTILINE)
_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9_.@+~/-])[A-Za-z0-9_.@+~/-]*[A-Za-z0-9_/]"
    r"(?P<suffix>(?::\d+){1,2}|#L\d+(?:-L?\d+)?)?"
)
_LETTER = re.compile(r"[A-Za-z]")
_BEFORE_OK = frozenset(" \t\n([{\"'`<=,;:*")
_AFTER_OK = frozenset(" \t\n)]}\"'`>,;.!?*:")
_NPM = re.compile(
    r"\b(?P<tool>npm|pnpm|yarn)[ \t]+(?:run|run-script)[ \t]+(?P<name>[A-Za-z0-9_:.@/+-]+)"
)
_MAKE = re.compile(r"(?<![\w./-])(?P<tool>make|just)(?P<args>(?:[ \t]+[^\s;&|`]+)+)")
# In prose: the tool, blanks, one word (a run from its first character: linear).
_PROSE_TASK = re.compile(
    r"(?<![\w./`'-])(?P<tool>make|just)[ \t]+(?P<name>[A-Za-z][A-Za-z0-9_.:/-]*)"
)
_TASK_SHAPED = re.compile(r"[A-Za-z0-9][-_:][A-Za-z0-9]")
_WORD_BEFORE = re.compile(r"([A-Za-z]+)\W{0,3}$")
_CD_BEFORE = re.compile(r"\bcd\s+\S+\s*(?:&&|;)[^\n]*$|--prefix\b|(?:^|\s)-C\b")
_ELSEWHERE_FLAGS = frozenset(
    {"-C", "-f", "--file", "--directory", "--makefile", "--justfile", "--working-directory", "-d"}
)
_NPM_ELSEWHERE = re.compile(r"[^\n;&|]*?(?:\s-w\b|\s--workspace\b|\s--prefix\b|\s-C\b)")
_NEAR = 400  # characters around a command that can say it runs elsewhere
_PATH_MAX = 4096  # Linux's limits on a path and on one of its names
_NAME_MAX = 255
_TARGET = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: Words after which a task command follows in prose ("run make deploy", "via just ship").
_COMMAND_SIGNALS = _words(
    """run runs running ran rerun via through with use uses using used type typing typed call
    calls calling execute executes executing invoke invokes invoking try"""
)
#: English words that follow "make" / "just" (and "npm run" in a sentence about npm) in prose.
_PROSE_WORDS = _words(
    """a an the it its it's this that these those them they their there here sure sense
    certain way use room time like as so such to too and or but nor for with without from of in
    on at by into onto up down out off over again also only even just make run runs script
    scripts command commands is are was were be been being will would can could should may might
    must do does did done one ones all any some each every no not now then than when where what
    which who how why if me you we us our your his her my mine yours ours sure-fire well-known
    well-formed up-to-date so-called built-in read-only one-off end-to-end follow-up re-run
    executes lists prints shows needs alone itself"""
)
_RECIPE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True)
class PathRef:
    """A path the entry names, at `text[start:end]` (the path itself, without `./` or a
    `:line` suffix); `bare`: a file name without a folder (looked up by name anywhere)."""

    start: int
    end: int
    path: str
    bare: bool


@dataclass(frozen=True, slots=True)
class CommandRef:
    """A task command: `tool` (npm, make, just) and the target `name` at `text[start:end]`."""

    start: int
    end: int
    tool: Literal["npm", "make", "just"]
    name: str


@dataclass(frozen=True, slots=True)
class EntryRefs:
    """Everything one entry claims; `candidates` are slash paths whose first segment decides
    (`first/...` is a path only if the folder has a top-level `first`)."""

    paths: tuple[PathRef, ...]
    candidates: tuple[PathRef, ...]
    commands: tuple[CommandRef, ...]


def extract(text: str) -> EntryRefs:
    """The paths and task commands an entry's text names (offsets into `text`)."""
    masked = _mask(text)
    code_spans = _code_spans(text, masked)
    paths: list[PathRef] = []
    candidates: list[PathRef] = []
    for match in _CANDIDATE.finditer(masked):
        found = _path_at(masked, match)
        if found is None:
            continue
        ref, sure = found
        if _said_to_be_absent(masked, ref.start, ref.end):
            continue  # "there is no settings_local.py": the entry already says it does not exist
        if sure:
            paths.append(ref)
        elif _is_an_identifier_pair(ref.path):
            continue
        elif _looks_like_a_file_path(ref.path) or _inside(code_spans, ref.start):
            candidates.append(ref)
    commands = _npm_commands(masked) + _code_commands(masked, code_spans)
    commands += _prose_commands(masked, code_spans, {(c.start, c.end) for c in commands})
    return EntryRefs(tuple(paths), tuple(candidates), tuple(sorted(commands, key=_start)))


# A path the entry itself says is absent or gone is not a stale reference: the words before it in
# its clause ("there is no", "never", "without", "instead of") or after it ("was removed").
_ABSENT_BEFORE = re.compile(
    r"(?:\b(?:no|not|never|without|none|nor|instead\s+of|no\s+longer)\b|n't\b|没有|不再|无)"
    r"[^.;:!?\n]{0,24}$",
    re.IGNORECASE,
)
_ABSENT_AFTER = re.compile(
    r"^\W{0,3}(?:(?:is|was|has\s+been|were|have\s+been)\s+(?:removed|deleted|gone|dropped)|"
    r"(?:is|are)\s+gone|no\s+longer\s+exists?|does\s+not\s+exist|doesn't\s+exist|已删除|已移除)",
    re.IGNORECASE,
)


def _said_to_be_absent(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 60) : start]
    return bool(_ABSENT_BEFORE.search(before) or _ABSENT_AFTER.match(text[end : end + 40]))


def _start(ref: CommandRef) -> int:
    return ref.start


def _looks_like_a_file_path(path: str) -> bool:
    """Prose writes `client/server` and `utils/helpers` as words; a path written in prose shows
    itself by depth (`a/b/c`) or by a name made for a file system (`my_app/`, `v2`, `run-it`)."""
    return path.count("/") >= 2 or any(ch in path for ch in "_-.0123456789")


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(start <= offset < end for start, end in spans)


_CAMEL = re.compile(r"[a-z][A-Z]")


def _is_an_identifier_pair(path: str) -> bool:
    """`client/registerCapability`, `textDocument/didChange`: protocol methods and API names, not
    folders (a file named in camelCase has an extension, and is checked as such)."""
    return _CAMEL.search(path.rsplit("/", 1)[-1]) is not None


# ------------------------------------------------------------------------------------ masking


def _mask(text: str) -> str:
    """URLs, addresses and code blocks of other languages blanked out (in one pass over the text:
    an entry of a thousand URLs is not copied a thousand times)."""
    spans = [(m.start(), m.end()) for m in _URL.finditer(text)]
    spans += [(start, end) for start, end, lang in _fences(text) if lang not in _SHELL_LANGS]
    if not spans:
        return text
    parts: list[str] = []
    done = 0
    for start, end in sorted(spans):
        start = max(start, done)
        if end <= start:
            continue
        parts.append(text[done:start])
        parts.append("".join("\n" if ch == "\n" else " " for ch in text[start:end]))
        done = end
    parts.append(text[done:])
    return "".join(parts)


def _fences(text: str) -> list[tuple[int, int, str]]:
    """Fenced code blocks as (start, end, language), an unclosed one running to the end."""
    found: list[tuple[int, int, str]] = []
    opening: re.Match[str] | None = None
    for match in _FENCE.finditer(text):
        if opening is None:
            opening = match
        elif match.group(1)[0] == opening.group(1)[0] and len(match.group(1)) >= len(
            opening.group(1)
        ):
            found.append((opening.start(), match.end(), opening.group(2).lower()))
            opening = None
    if opening is not None:
        found.append((opening.start(), len(text), opening.group(2).lower()))
    return found


def _code_spans(text: str, masked: str) -> list[tuple[int, int]]:
    """Where shell code is: shell code blocks (their inner lines), inline code, `$ ` lines."""
    spans = [
        (start, end)
        for start, end, lang in _fences(text)
        if lang in _SHELL_LANGS and masked[start:end].strip()
    ]
    spans += [(m.start(2), m.end(2)) for m in _INLINE_CODE.finditer(masked)]
    spans += [(m.start(1), m.end(1)) for m in _PROMPT_LINE.finditer(masked)]
    return spans


# ------------------------------------------------------------------------------------ paths


def _path_at(text: str, match: re.Match[str]) -> tuple[PathRef, bool] | None:
    """The path a candidate run names and whether it is surely a path (False: only if its first
    segment is a top-level entry); None when it is not a path."""
    start, end = match.start(), match.end()
    suffix = match.group("suffix") or ""
    if not _bounded(text, start, end):
        return None
    raw = text[start : end - len(suffix)]
    if len(raw) > _PATH_MAX or max(map(len, raw.split("/"))) > _NAME_MAX:
        return None  # no file system here has such a path: `src/src/...` 7,000 folders deep
    sure = raw.startswith("./")
    if sure:
        start += 2
        raw = raw[2:]
    if not raw or raw.startswith(("..", "/", "~", "@", "-", "./")):
        return None  # the parent folder, absolute, home, a scoped package, a flag
    if not _LETTER.search(raw) or "//" in raw:
        return None  # `1/2`, `2024/05/01`
    path = raw.rstrip("/")
    if sure:  # `./x`: a path of the folder, whatever it looks like
        return PathRef(start, start + len(path), path, False), True
    if "/" not in path:
        return _bare(start, path, sure)
    ref = PathRef(start, start + len(path), path, False)
    name = path.rsplit("/", 1)[-1]
    if sure or _has_known_extension(name):
        return ref, True
    return ref, False


def _bare(start: int, name: str, sure: bool) -> tuple[PathRef, bool] | None:
    if name.startswith("."):
        return None  # `.env`, `.nvmrc`: local files, often ignored; too ambiguous to flag
    if name.lower() in _NOT_FILES or name in _CONVENTION_NAMES:
        return None
    known = name in WELL_KNOWN_FILES or _has_known_extension(name)
    if not known and not sure:
        return None
    if name.endswith(".js") and name[:1].isupper():
        return None  # a capitalised *.js is a library's name (Vue.js, Chart.js)
    return PathRef(start, start + len(name), name, True), True


def _has_known_extension(name: str) -> bool:
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem and stem[-1] != "." and ext.lower() in KNOWN_EXTENSIONS)


def _bounded(text: str, start: int, end: int) -> bool:
    """The run stands alone: what touches it is a separator, not code around a non-path."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if before == "*":
        k = start - 1
        while k >= 0 and text[k] == "*":
            k -= 1
        if k >= 0 and text[k] not in " \t\n([{\"'":
            return False  # `src/*.py`, `**/*.ts`: a glob
    if after == "*":
        k = end
        while k < len(text) and text[k] == "*":
            k += 1
        if text[end - 1] in "/.-_" or (k < len(text) and (text[k].isalnum() or text[k] in "./_-")):
            return (
                False  # `src/*`, `test_agent*.py`: a glob (a closing `**` is followed by a break)
            )
    if after == ":" and end + 1 < len(text) and text[end + 1] not in " \t\n":
        return False  # `a:b` (a key, a drive, a scope), not `path: note`
    if before == ":" and start >= 2 and text[start - 2] not in " \t\n":
        return False  # `host:path`, `module:attr`
    return _separator(before, _BEFORE_OK) and _separator(after, _AFTER_OK)


def _separator(ch: str, allowed: frozenset[str]) -> bool:
    return ch in allowed or ord(ch) > 127


# ------------------------------------------------------------------------------------ commands


def _npm_commands(text: str) -> list[CommandRef]:
    found: list[CommandRef] = []
    for match in _NPM.finditer(text):
        name = match.group("name")
        if _runs_elsewhere(_line_before(text, match.start())) or name.startswith("-"):
            continue
        if name.lower() in _PROSE_WORDS:
            continue  # "npm run lists the scripts": a sentence about npm
        if _NPM_ELSEWHERE.match(text, match.end(), match.end() + _NEAR):
            continue
        found.append(CommandRef(match.start("name"), match.end("name"), "npm", name))
    return found


def _code_commands(text: str, spans: list[tuple[int, int]]) -> list[CommandRef]:
    found: dict[tuple[int, int], CommandRef] = {}
    for span_start, span_end in spans:
        code = text[span_start:span_end]
        for match in _MAKE.finditer(code):
            if _runs_elsewhere(_line_before(code, match.start())):
                continue
            tool: Literal["make", "just"] = "make" if match.group("tool") == "make" else "just"
            offset = span_start + match.start("args")
            for ref in _targets(tool, match.group("args"), offset, _words_check(tool)):
                found[(ref.start, ref.end)] = ref
    return list(found.values())


def _prose_commands(
    text: str, spans: list[tuple[int, int]], seen: set[tuple[int, int]]
) -> list[CommandRef]:
    """`make X` / `just X` written in prose: X counts when it is made for a task file (`-`, `_` or
    `:` inside it) or the word before the tool says a command follows, and X is no common English
    word (see the module docstring)."""
    found: list[CommandRef] = []
    for match in _PROSE_TASK.finditer(text):
        if _inside(spans, match.start()):
            continue  # code: `_code_commands` read it, every target of it
        name = match.group("name").rstrip(".:,/")
        start = match.start("name")
        if (start, start + len(name)) in seen or name.lower() in _PROSE_WORDS:
            continue
        tool: Literal["make", "just"] = "make" if match.group("tool") == "make" else "just"
        if not _words_check(tool)(name):
            continue
        before = _line_before(text, match.start())
        said = _WORD_BEFORE.search(before[-40:])
        signalled = said is not None and said.group(1).lower() in _COMMAND_SIGNALS
        if not (signalled or _TASK_SHAPED.search(name)) or _runs_elsewhere(before):
            continue
        found.append(CommandRef(start, start + len(name), tool, name))
    return found


def _line_before(text: str, at: int) -> str:
    """The text of the line before `at`, at most `_NEAR` characters of it: a flag or a `cd` that
    far from the command is not about it, and a line of a thousand commands stays linear."""
    start = max(text.rfind("\n", max(0, at - _NEAR), at) + 1, at - _NEAR)
    return text[start:at]


def _runs_elsewhere(before: str) -> bool:
    """`cd dir && make x`: the command runs in another folder."""
    return _CD_BEFORE.search(before) is not None


def _words_check(tool: str) -> Callable[[str], bool]:
    pattern = _TARGET if tool == "make" else _RECIPE
    return lambda word: pattern.fullmatch(word) is not None


def _targets(
    tool: Literal["make", "just"], args: str, offset: int, valid: Callable[[str], bool]
) -> list[CommandRef]:
    """The targets of `make a b VAR=1 -j4` (every plain word) or the recipe of `just r args`
    (the first word only); nothing when a flag sends it to another file or folder."""
    refs: list[CommandRef] = []
    for word in re.finditer(r"\S+", args):
        value = word.group(0)
        if value in _ELSEWHERE_FLAGS or value.startswith(("--file=", "--directory=", "-C")):
            return []
        if value.startswith("-") or "=" in value:
            continue
        if not valid(value) or "::" in value:
            if tool == "just":
                return refs
            continue
        refs.append(CommandRef(offset + word.start(), offset + word.end(), tool, value))
        if tool == "just":
            return refs
    return refs
