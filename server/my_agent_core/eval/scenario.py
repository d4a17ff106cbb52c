"""Memory scenarios as data: one JSON file each, validated with errors that name the file and field.

A scenario is what a user says over one or more sessions, the workspace files and the memory it
starts from, and the checks that decide, without a model as judge, whether the model handled its
memory well. The shipped suite lives in `scenarios/` beside this module; `--scenarios DIR` adds a
user's own. The format is documented in docs/eval.md; `SCHEMA_KEYS` is the whole of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from my_agent_core import bounded_json
from my_agent_core.paths import PathRefused, read_regular

__all__ = [
    "BUILTIN_DIR",
    "CATEGORIES",
    "FILES",
    "Check",
    "Scenario",
    "ScenarioError",
    "builtin_scenarios",
    "load_file",
    "load_scenarios",
]

#: The shipped suite.
BUILTIN_DIR = Path(__file__).resolve().parent / "scenarios"
#: The categories of the shipped suite, in the order tables list them (user scenarios may add more).
CATEGORIES = ("save-user", "save-env", "skip", "update", "recall", "poison", "honest-save")
FILES = ("MEMORY.md", "USER.md")
FileName = Literal["MEMORY.md", "USER.md", "either"]
CheckKind = Literal["saved", "not_saved", "entries", "unchanged", "tool_calls", "reply", "honest"]
CHECK_KINDS: tuple[CheckKind, ...] = (
    "saved",
    "not_saved",
    "entries",
    "unchanged",
    "tool_calls",
    "reply",
    "honest",
)
LANGUAGES = ("en", "zh")

#: Bounds on what a scenario may ask for (a scenario file may come from anyone).
MAX_SCENARIO_BYTES = 1024 * 1024
MAX_FILE_CHARS = 256 * 1024
MAX_FILES = 50
MAX_SESSIONS = 10
MAX_MESSAGES = 20
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")
_CATEGORY = re.compile(r"[a-z][a-z0-9-]{0,39}")

SCHEMA_KEYS = {
    "scenario": {
        "id",
        "category",
        "lang",
        "title",
        "files",
        "memory",
        "sessions",
        "checks",
        "reference",
    },
    "check": {
        "check",
        "file",
        "pattern",
        "not_pattern",
        "count",
        "min",
        "max",
        "tool",
        "session",
        "message",
        "claims",
        "why",
    },
}


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Check:
    """One deterministic check (see docs/eval.md, "Checks"); regexes are case-insensitive."""

    kind: CheckKind
    file: FileName = "either"
    pattern: re.Pattern[str] | None = None
    not_pattern: re.Pattern[str] | None = None
    count: int | None = None
    min: int | None = None
    max: int | None = None
    tool: str = "memory"
    session: int | None = None
    message: int | None = None
    claims: re.Pattern[str] | None = None
    why: str = ""  # what the check stands for, in the scenario author's words


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. `sessions[i][j]` is the j-th user message of session i; `reference`
    (optional) is what a model that follows the rules answers, as scripted responses."""

    id: str
    category: str
    lang: str
    title: str
    sessions: tuple[tuple[str, ...], ...]
    checks: tuple[Check, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    memory: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reference: tuple[tuple[tuple[dict[str, Any], ...], ...], ...] | None = None
    source: Path | None = None


class _Reader:
    """Reads fields of one scenario's JSON, raising errors that say `<file>: <field>: <problem>`."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> ScenarioError:
        return ScenarioError(f"scenario file {self.source}: {where}: {problem}")

    def type_name(self, value: object) -> str:
        names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
        if value is None:
            return "null"
        if isinstance(value, list):
            return "a list"
        if isinstance(value, dict):
            return "an object"
        return names.get(type(value), type(value).__name__)

    def string(self, value: object, where: str, *, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {self.type_name(value)}")
        if not empty and not value.strip():
            raise self.fail(where, "is empty")
        return value

    def integer(self, value: object, where: str, lowest: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(where, f"expected a whole number, got {self.type_name(value)}")
        if value < lowest:
            raise self.fail(where, f"must be at least {lowest}, got {value}")
        return value

    def listing(self, value: object, where: str, *, most: int, least: int = 1) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, got {self.type_name(value)}")
        if not least <= len(value) <= most:
            raise self.fail(where, f"must hold {least} to {most} items, got {len(value)}")
        return value

    def mapping(self, value: object, where: str, allowed: set[str] | None = None) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {self.type_name(value)}")
        if allowed is not None:
            unknown = sorted(set(value) - allowed)
            if unknown:
                raise self.fail(
                    f"{where}.{unknown[0]}" if where else unknown[0],
                    f"unknown field (the fields are: {', '.join(sorted(allowed))})",
                )
        return value

    def regex(self, value: object, where: str) -> re.Pattern[str]:
        text = self.string(value, where)
        try:
            return re.compile(text, re.IGNORECASE)
        except re.error as exc:
            raise self.fail(where, f"not a valid regular expression: {exc}") from None


def load_file(path: Path) -> Scenario:
    """One scenario file, validated (`ScenarioError` names the file and the field)."""
    try:
        raw = read_regular(path, max_bytes=MAX_SCENARIO_BYTES, name=str(path))
    except PathRefused as exc:
        raise ScenarioError(f"scenario file {path}: {exc}") from None
    if raw is None:
        raise ScenarioError(f"scenario file {path}: does not exist")
    reader = _Reader(str(path))
    try:
        data = bounded_json.loads(raw, what=str(path))
    except UnicodeDecodeError:
        raise reader.fail("the file", "is not UTF-8 text") from None
    except ValueError as exc:
        raise reader.fail("the file", f"is not valid JSON ({exc})") from None
    return parse(data, reader, path)


def parse(data: object, reader: _Reader, path: Path | None = None) -> Scenario:
    """A scenario from its parsed JSON."""
    top = reader.mapping(data, "", SCHEMA_KEYS["scenario"])
    for key in ("category", "sessions", "checks"):
        if key not in top:
            raise reader.fail(key, "is required")
    default_id = path.stem if path is not None else ""
    scenario_id = reader.string(top.get("id", default_id), "id")
    if not _ID.fullmatch(scenario_id):
        raise reader.fail(
            "id", "use 1 to 80 lower-case letters, digits, '.', '_' or '-' (e.g. skip-en-progress)"
        )
    category = reader.string(top["category"], "category")
    if not _CATEGORY.fullmatch(category):
        raise reader.fail("category", "use lower-case letters, digits and '-' (e.g. save-user)")
    lang = reader.string(top.get("lang", "en"), "lang")
    if lang not in LANGUAGES:
        raise reader.fail("lang", f"must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    title = reader.string(top.get("title", scenario_id), "title")
    sessions = _sessions(top["sessions"], reader)
    checks = tuple(
        _check(item, f"checks[{n}]", reader, len(sessions))
        for n, item in enumerate(reader.listing(top["checks"], "checks", most=50))
    )
    reference = None
    if "reference" in top:
        reference = _reference(top["reference"], reader, sessions)
    return Scenario(
        id=scenario_id,
        category=category,
        lang=lang,
        title=title,
        sessions=sessions,
        checks=checks,
        files=_files(top.get("files", {}), reader),
        memory=_memory(top.get("memory", {}), reader),
        reference=reference,
        source=path,
    )


def _sessions(value: object, reader: _Reader) -> tuple[tuple[str, ...], ...]:
    sessions = []
    for n, session in enumerate(reader.listing(value, "sessions", most=MAX_SESSIONS)):
        where = f"sessions[{n}]"
        messages = reader.listing(session, where, most=MAX_MESSAGES)
        sessions.append(tuple(reader.string(m, f"{where}[{k}]") for k, m in enumerate(messages)))
    return tuple(sessions)


def _files(value: object, reader: _Reader) -> dict[str, str]:
    files = reader.mapping(value, "files")
    if len(files) > MAX_FILES:
        raise reader.fail("files", f"at most {MAX_FILES} files, got {len(files)}")
    out: dict[str, str] = {}
    for name, text in files.items():
        where = f"files[{name!r}]"
        out[_relative_path(name, where, reader)] = reader.string(text, where, empty=True)
        if len(text) > MAX_FILE_CHARS:
            raise reader.fail(where, f"at most {MAX_FILE_CHARS:,} characters")
    for name in out:
        parents = ["/".join(name.split("/")[:n]) for n in range(1, name.count("/") + 1)]
        clash = next((p for p in parents if p in out), None)
        if clash is not None:
            raise reader.fail(
                f"files[{name!r}]", f"{clash!r} is a file, so it cannot be a folder too"
            )
    return out


def _relative_path(name: str, where: str, reader: _Reader) -> str:
    """A workspace path that stays inside the temporary workspace and out of its memory folder."""
    pure = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or pure.is_absolute()
        or any(part in ("", ".", "..") for part in name.split("/"))
    ):
        raise reader.fail(where, "a file path must be relative, with '/' and no '.' or '..' parts")
    if pure.parts[0] == ".my_agent_core":
        raise reader.fail(where, "memory files are given in `memory`, not in `files`")
    return name


def _memory(value: object, reader: _Reader) -> dict[str, tuple[str, ...]]:
    memory = reader.mapping(value, "memory", set(FILES))
    out: dict[str, tuple[str, ...]] = {}
    for name, entries in memory.items():
        where = f"memory[{name!r}]"
        items = reader.listing(entries, where, most=100, least=0)
        out[name] = tuple(reader.string(e, f"{where}[{n}]") for n, e in enumerate(items))
    return out


def _check(item: object, where: str, reader: _Reader, sessions: int) -> Check:
    raw = reader.mapping(item, where, SCHEMA_KEYS["check"])
    kind = reader.string(raw.get("check"), f"{where}.check")
    if kind not in CHECK_KINDS:
        raise reader.fail(f"{where}.check", f"must be one of {', '.join(CHECK_KINDS)}")
    values: dict[str, Any] = {
        "kind": kind,
        "why": reader.string(raw.get("why", ""), f"{where}.why", empty=True),
    }
    if "file" in raw:
        file = reader.string(raw["file"], f"{where}.file")
        if file not in (*FILES, "either"):
            raise reader.fail(f"{where}.file", "must be MEMORY.md, USER.md or either")
        values["file"] = file
    for key in ("pattern", "not_pattern", "claims"):
        if key in raw:
            values[key] = reader.regex(raw[key], f"{where}.{key}")
    for key in ("count", "min", "max"):
        if key in raw:
            values[key] = reader.integer(raw[key], f"{where}.{key}", 0)
    for key in ("session", "message"):
        if key in raw:
            values[key] = reader.integer(raw[key], f"{where}.{key}", 1)
    if "tool" in raw:
        values["tool"] = reader.string(raw["tool"], f"{where}.tool")
    check = Check(**values)
    _require(check, raw, where, reader, sessions)
    return check


def _require(
    check: Check, raw: Mapping[str, Any], where: str, reader: _Reader, sessions: int
) -> None:
    """The fields each kind needs, and no field it would silently ignore."""
    needs: dict[str, tuple[str, ...]] = {
        "saved": ("pattern",),
        "not_saved": ("pattern",),
        "entries": ("pattern",),
        "reply": (),
    }
    for key in needs.get(check.kind, ()):
        if key not in raw:
            raise reader.fail(f"{where}.{key}", f"is required for a `{check.kind}` check")
    allowed = {
        "saved": {"file", "pattern"},
        "not_saved": {"file", "pattern"},
        "entries": {"file", "pattern", "count", "min", "max"},
        "unchanged": {"file"},
        "tool_calls": {"tool", "pattern", "session", "count", "min", "max"},
        "reply": {"session", "message", "pattern", "not_pattern"},
        "honest": {"claims"},
    }[check.kind] | {"check", "why"}
    extra = sorted(set(raw) - allowed)
    if extra:
        raise reader.fail(f"{where}.{extra[0]}", f"is not used by a `{check.kind}` check")
    if check.kind == "reply" and check.pattern is None and check.not_pattern is None:
        raise reader.fail(where, "a `reply` check needs `pattern` or `not_pattern`")
    if check.kind in ("entries", "tool_calls") and {"count", "min", "max"}.isdisjoint(raw):
        raise reader.fail(where, f"an `{check.kind}` check needs `count`, `min` or `max`")
    if check.count is not None and (check.min is not None or check.max is not None):
        raise reader.fail(where, "give `count` or `min`/`max`, not both")
    if check.session is not None and check.session > sessions:
        raise reader.fail(f"{where}.session", f"there are only {sessions} sessions")


def _reference(
    value: object, reader: _Reader, sessions: Sequence[Sequence[str]]
) -> tuple[tuple[tuple[dict[str, Any], ...], ...], ...]:
    """Per session, per message: the scripted responses of a model that follows the rules (each
    `{"content": ...}` or `{"tool_calls": [{"name", "arguments"}]}`, the last one a reply)."""
    out = []
    items = reader.listing(value, "reference", most=MAX_SESSIONS)
    if len(items) != len(sessions):
        raise reader.fail("reference", f"needs one item per session ({len(sessions)})")
    for n, session in enumerate(items):
        where = f"reference[{n}]"
        turns = reader.listing(session, where, most=MAX_MESSAGES)
        if len(turns) != len(sessions[n]):
            raise reader.fail(where, f"needs one item per message ({len(sessions[n])})")
        session_out = []
        for k, steps in enumerate(turns):
            step_where = f"{where}[{k}]"
            responses = reader.listing(steps, step_where, most=20)
            for i, response in enumerate(responses):
                body = reader.mapping(response, f"{step_where}[{i}]", {"content", "tool_calls"})
                last = i == len(responses) - 1
                if last and not isinstance(body.get("content"), str):
                    raise reader.fail(
                        f"{step_where}[{i}]", "the last response must be a reply (`content`)"
                    )
                if not last and not body.get("tool_calls"):
                    raise reader.fail(f"{step_where}[{i}]", "only the last response may be a reply")
                for j, call in enumerate(body.get("tool_calls") or []):
                    spec = reader.mapping(
                        call, f"{step_where}[{i}].tool_calls[{j}]", {"name", "arguments"}
                    )
                    reader.string(spec.get("name"), f"{step_where}[{i}].tool_calls[{j}].name")
                    reader.mapping(
                        spec.get("arguments"), f"{step_where}[{i}].tool_calls[{j}].arguments"
                    )
            session_out.append(tuple(dict(r) for r in responses))
        out.append(tuple(session_out))
    return tuple(out)


def builtin_scenarios() -> list[Scenario]:
    """The shipped suite."""
    return load_scenarios([BUILTIN_DIR])


def load_scenarios(folders: Iterable[Path]) -> list[Scenario]:
    """Every `*.json` of each folder (sorted by name), with ids unique across all of them."""
    scenarios: list[Scenario] = []
    seen: dict[str, Path | None] = {}
    for folder in folders:
        if not folder.is_dir():
            raise ScenarioError(f"scenario folder {folder}: is not a folder")
        files = sorted(p for p in folder.iterdir() if p.suffix == ".json")
        if not files:
            raise ScenarioError(f"scenario folder {folder}: has no *.json scenario file")
        for path in files:
            scenario = load_file(path)
            if scenario.id in seen:
                raise ScenarioError(
                    f"scenario file {path}: id: {scenario.id!r} is also the id of {seen[scenario.id]}"
                )
            seen[scenario.id] = path
            scenarios.append(scenario)
    return scenarios
