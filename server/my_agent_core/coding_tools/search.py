"""search_text: matching lines as `path:line: text`, from ripgrep or a pure-Python search.

Both backends see the same files (see ignore.py), treat a file with a NUL byte as binary the way
ripgrep does (searched only up to the 64 KiB block that holds the first NUL), skip files over the size
cap, search line by line (a match never spans lines), and report at most `max_per_file` lines per
file; results are sorted by path and line, so the model gets the same answer from either.

The time limit holds for the whole call, not per file: ripgrep is killed at the deadline, and the
pure-Python search matches a regex in a child process killed at the same deadline
(`untrusted_regex.py`), since Python's backtracking `re` can spend years on one line.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from my_agent_core.paths import PathRefused, read_regular

from .ignore import GlobFilter, WalkCancelled, walk_files
from .process import StreamedRun
from .ripgrep import BASE_FLAGS
from .seams import CancelToken
from .textfile import BOM
from .untrusted_regex import RegexProcess, RegexRefused, RegexStopped

__all__ = [
    "Hit",
    "SearchError",
    "SearchResult",
    "SearchStopped",
    "bad_regex",
    "hit_in",
    "literal_lines",
    "ripgrep_hits",
    "search",
    "start_regex",
]

_BLOCK = 64 * 1024


class SearchError(ValueError):
    """A search that cannot run as asked (bad regex, empty query); the message says how to fix it."""


class SearchStopped(Exception):
    """The search was cancelled or ran out of time (`str(exc)`: "cancelled", "timeout", or
    "regex-timeout" when a regex in Python's backtracking engine was what ran out of time)."""


@dataclass(frozen=True)
class Hit:
    """One matching line: `column` is where the first match starts (characters)."""

    path: str
    line: int
    text: str
    column: int


@dataclass(frozen=True)
class _Spec:
    """One search as both backends run it."""

    query: str
    regex: bool
    glob: str | None
    max_per_file: int
    collect_limit: int
    max_filesize: int
    cancel: CancelToken | None
    deadline: float  # time.monotonic() by which the whole call ends


@dataclass
class SearchResult:
    hits: list[Hit] = field(default_factory=list)
    more_in: set[str] = field(default_factory=set)  # files with more matching lines than shown
    complete: bool = True  # False: stopped at the collect limit
    note: str = ""


def search(
    root: Path,
    start: Path,
    query: str,
    *,
    regex: bool,
    glob: str | None,
    rg: str | None,
    max_per_file: int,
    collect_limit: int,
    max_filesize: int,
    cancel: CancelToken | None = None,
    timeout_s: float = 60.0,
    deadline: float | None = None,
) -> SearchResult:
    """Lines under `start` (a real path inside `root`) matching `query`, sorted by path and line.
    The call ends by `deadline` (`time.monotonic()`), else `timeout_s` from now."""
    if deadline is None:
        deadline = time.monotonic() + timeout_s
    if not query:
        raise SearchError("The query is empty: pass the text (or regex) to look for.")
    if "\n" in query or "\r" in query:
        raise SearchError(
            "The query spans several lines; search_text matches within one line. Search for one "
            "distinctive line of it."
        )
    matcher = GlobFilter(glob) if glob else None
    if start.is_file():
        _refuse_binary(root, start)
    spec = _Spec(query, regex, glob, max_per_file, collect_limit, max_filesize, cancel, deadline)
    if rg is not None:
        result = _with_ripgrep(root, start, spec, rg)
    else:
        result = _with_python(root, start, spec, matcher)
    result.hits.sort(key=lambda hit: (hit.path, hit.line))
    return result


def _refuse_binary(root: Path, path: Path) -> None:
    try:
        head = read_regular(path, max_bytes=_BLOCK, truncate=True, name=_rel(root, path))
    except PathRefused as exc:
        raise SearchError(str(exc)) from None
    if head is not None and b"\x00" in head:
        raise SearchError(f"{_rel(root, path)} is a binary file; it is not searched.")


def bad_regex(query: str, detail: str) -> SearchError:
    detail = " ".join(detail.split())
    return SearchError(
        f"The regex {query!r} is invalid ({detail}). Fix it, or pass regex=false to search for "
        "the text literally."
    )


# --- ripgrep ------------------------------------------------------------------------------------------


def _with_ripgrep(root: Path, start: Path, spec: _Spec, rg: str) -> SearchResult:
    query, max_per_file = spec.query, spec.max_per_file
    args = [
        rg,
        "--json",
        *BASE_FLAGS,
        "--encoding",
        "none",
        "--max-count",
        str(max_per_file + 1),
        "--max-filesize",
        str(spec.max_filesize),
    ]
    if not spec.regex:
        args.append("--fixed-strings")
    if spec.glob:
        args += ["--glob", spec.glob]
    args += ["--glob", "!.git", "--regexp", query]
    if start != root:
        args += ["--", os.path.relpath(start, root)]
    run = StreamedRun(args, root, spec.cancel, max(0.0, spec.deadline - time.monotonic()))
    result = SearchResult()
    per_file: dict[str, int] = {}
    try:
        for raw in run.lines():
            if not raw.startswith(b'{"type":"match"'):
                continue
            hit = hit_of(raw)
            if hit is None:
                continue
            seen = per_file.get(hit.path, 0) + 1
            per_file[hit.path] = seen
            if seen > max_per_file:
                result.more_in.add(hit.path)
                continue
            result.hits.append(hit)
            if len(result.hits) >= spec.collect_limit:
                result.complete = False
                break
    finally:
        code, stderr = run.close()
    if run.stopped:
        raise SearchStopped(run.stopped)
    if code == 2 and result.complete and not result.hits:
        if "regex parse error" in stderr or "not allowed in a regex" in stderr:
            raise bad_regex(query, stderr.replace("regex parse error:", ""))
        raise SearchError(f"ripgrep failed: {stderr.strip()[:500]}")
    return result


def _text_of(part: dict[str, str]) -> str:
    if "text" in part:
        return part["text"]
    return base64.b64decode(part.get("bytes", "")).decode("utf-8", errors="replace")


def ripgrep_hits(
    rg: str,
    rel: str,
    data: bytes,
    query: str,
    *,
    regex: bool,
    max_per_file: int,
    cancel: CancelToken | None,
    deadline: float,
) -> tuple[list[Hit], bool]:
    """The hits of one text (an unsaved editor buffer) as ripgrep finds them, fed on stdin: the
    same engine and the same lines as the search of the files; True when more lines match than
    `max_per_file`."""
    args = [rg, "--json", *BASE_FLAGS, "--encoding", "none", "--max-count", str(max_per_file + 1)]
    if not regex:
        args.append("--fixed-strings")
    args += ["--regexp", query, "-"]
    run = StreamedRun(args, Path(os.sep), cancel, max(0.0, deadline - time.monotonic()), data)
    hits: list[Hit] = []
    try:
        for raw in run.lines():
            if raw.startswith(b'{"type":"match"'):
                hit = hit_of(raw)
                if hit is not None:
                    hits.append(Hit(rel, hit.line, hit.text, hit.column))
    finally:
        code, stderr = run.close()
    if run.stopped:
        raise SearchStopped(run.stopped)
    if code == 2 and not hits:
        raise bad_regex(query, stderr.replace("regex parse error:", ""))
    return hits[:max_per_file], len(hits) > max_per_file


def hit_of(raw: bytes) -> Hit | None:
    """The hit of one `rg --json` match line (None when it cannot be read)."""
    try:
        data = json.loads(raw)["data"]
        path = _text_of(data["path"])
        line_number = int(data["line_number"])
        lines = data["lines"]
        submatches = data.get("submatches") or [{"start": 0}]
    except (ValueError, KeyError, TypeError):
        return None
    if "text" in lines:
        line = lines["text"]
        start_byte = int(submatches[0].get("start", 0))
        column = len(line.encode("utf-8")[:start_byte].decode("utf-8", errors="replace"))
    else:
        raw_line = base64.b64decode(lines.get("bytes", ""))
        start_byte = int(submatches[0].get("start", 0))
        line = raw_line.decode("utf-8", errors="replace")
        column = len(raw_line[:start_byte].decode("utf-8", errors="replace"))
    if path.startswith("./"):
        path = path[2:]
    return hit_in(path, line_number, line, column)


def hit_in(path: str, line_number: int, line: str, column: int) -> Hit:
    """A hit as shown: line break and trailing blanks dropped, a BOM on line 1 left out."""
    line = line.rstrip("\n").rstrip("\r")
    if line_number == 1 and line.startswith(BOM):
        line = line[1:]
        column = max(0, column - 1)
    return Hit(path, line_number, line.rstrip(), column)


# --- pure Python ------------------------------------------------------------------------------------


def _with_python(root: Path, start: Path, spec: _Spec, matcher: GlobFilter | None) -> SearchResult:
    query, max_per_file, cancel, deadline = (
        spec.query,
        spec.max_per_file,
        spec.cancel,
        spec.deadline,
    )
    matcher_process: RegexProcess | None = None
    if spec.regex:
        matcher_process = start_regex(query, max_per_file + 1, deadline, cancel)
    try:
        return _python_files(root, start, spec, matcher, matcher_process)
    except RegexStopped as exc:
        raise SearchStopped("regex-timeout" if str(exc) == "timeout" else str(exc)) from None
    finally:
        if matcher_process is not None:
            matcher_process.close()


def start_regex(
    query: str, limit: int, deadline: float, cancel: CancelToken | None
) -> RegexProcess:
    """The child process that matches `query` (see untrusted_regex.py); SearchError when Python
    cannot compile it, SearchStopped when the deadline passes or the turn is cancelled first."""
    try:
        return RegexProcess(query, limit=limit, deadline=deadline, cancel=cancel)
    except RegexRefused as exc:
        raise bad_regex(query, str(exc)) from None
    except RegexStopped as exc:
        raise SearchStopped(str(exc)) from None
    except OSError as exc:
        raise SearchError(f"The regex search could not start: {exc}.") from None


def _python_files(
    root: Path,
    start: Path,
    spec: _Spec,
    matcher: GlobFilter | None,
    matcher_process: RegexProcess | None,
) -> SearchResult:
    query, max_per_file, cancel, deadline = (
        spec.query,
        spec.max_per_file,
        spec.cancel,
        spec.deadline,
    )
    needle = query.encode("utf-8")
    result = SearchResult()
    root_s = str(root)
    try:
        for rel in walk_files(root, start, glob=matcher, cancel=cancel, deadline=deadline):
            if cancel is not None and cancel.is_set():
                raise SearchStopped("cancelled")
            if time.monotonic() > deadline:
                raise SearchStopped("timeout")
            try:  # over the size cap (FileTooLarge), vanished or special: skipped, as by rg
                data = read_regular(os.path.join(root_s, rel), max_bytes=spec.max_filesize)
            except PathRefused:
                continue
            if not data:
                continue
            nul = data.find(b"\x00")
            if nul >= 0:  # as ripgrep: stop at the 64 KiB block holding the first NUL
                data = data[: (nul // _BLOCK) * _BLOCK]
                data = data[: data.rfind(b"\n") + 1]
            hits = (
                matcher_process.lines(data)
                if matcher_process is not None
                else literal_lines(data, needle, max_per_file + 1)
            )
            for number, (line_no, line, column) in enumerate(hits):
                if number >= max_per_file:
                    result.more_in.add(rel)
                    break
                result.hits.append(hit_in(rel, line_no, line, column))
                if len(result.hits) >= spec.collect_limit:
                    result.complete = False
                    return result
    except WalkCancelled as exc:
        raise SearchStopped(str(exc)) from None
    return result


def literal_lines(data: bytes, needle: bytes, limit: int) -> list[tuple[int, str, int]]:
    found: list[tuple[int, str, int]] = []
    pos = data.find(needle)
    line_no = 1
    counted_to = 0
    while pos >= 0 and len(found) < limit:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line_no += data.count(b"\n", counted_to, start)
        counted_to = start
        raw = data[start:end]
        column = len(raw[: pos - start].decode("utf-8", errors="replace"))
        found.append((line_no, raw.decode("utf-8", errors="replace"), column))
        pos = data.find(needle, end + 1) if end < len(data) else -1
    return found


def _rel(root: Path, path: Path) -> str:
    return "." if path == root else os.path.relpath(path, root)
