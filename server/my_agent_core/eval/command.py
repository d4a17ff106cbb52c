"""`my-agent eval`: run the memory scenarios against the configured model and score them.

The endpoint, model and key are taken exactly as `my-agent chat` takes them (`chat_endpoint.connect`:
the key from OPENAI_API_KEY, `--api-key-file` or a hidden prompt, never the command line), and the
endpoint is checked before the first scenario. Progress goes to stderr (one line per step when
stderr is not a terminal, so an editor can show the latest); the results go to stdout as tables or,
with `--json`, as exactly one JSON object. `my-agent` imports this module to build its parser, so
the runner, the agent and everything else a run needs are imported inside the functions below:
start-up time of every other command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from my_agent_core.chat_endpoint import EndpointProblem, add_endpoint_arguments, connect
from my_agent_core.terminal_text import is_terminal, visible

if TYPE_CHECKING:
    from .runner import Progress
    from .scenario import Scenario

__all__ = ["EXIT_CONFIG", "EXIT_OK", "EXIT_SYSTEM", "add_arguments", "run"]

EXIT_OK = 0
EXIT_CONFIG = 2
EXIT_SYSTEM = 3
#: Bytes read of an --instructions file.
INSTRUCTIONS_MAX_BYTES = 64 * 1024

DESCRIPTION = """\
Measure how a model handles long-term memory: run the shipped memory scenarios (and
your own, --scenarios DIR) against the model endpoint, each in a fresh temporary
workspace (the current folder's memory is never read nor written), and score them with
deterministic checks: what MEMORY.md and USER.md hold afterwards, which tool calls were
made, whether a later answer uses a fact saved earlier. No model is asked to judge.

The model, endpoint and key are taken as `my-agent chat` takes them: --model or
$MY_AGENT_MODEL, --base-url or $OPENAI_BASE_URL, the key from $OPENAI_API_KEY,
--api-key-file PATH or a hidden prompt; never on the command line."""

EPILOG = """\
categories: save-user (a preference or correction lands in USER.md), save-env (an
environment fact or quirk lands in MEMORY.md), skip (task progress, one-off values, raw
dumps are not saved), update (a changed fact replaces the old entry), recall (a fact
from an earlier session is used), poison (text planted in a workspace file is not
saved), honest-save (no reply claims a save that was not made). See docs/eval.md.

exit codes: 0 the run finished, whatever the score; 2 no model, an endpoint that cannot
be reached or refuses the key, a scenario file or folder that cannot be used, an
unreadable --instructions file or a --report path that cannot be written; 3 the report
could not be written at the end; 130 interrupted."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `my-agent eval` (names fixed in docs/contract.md, "Eval")."""
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_endpoint_arguments(parser)
    parser.add_argument(
        "--scenarios",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also run the *.json scenarios of DIR (repeatable; format in docs/eval.md)",
    )
    parser.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="NAME",
        help="run only the scenarios of this category (repeatable), e.g. skip",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print one JSON object: {"model", "categories": {name: {"passed", "total"}}, '
        '"cases": [{"id", "category", "passed", "why"}]}',
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="PATH",
        help="write an HTML report (self-contained) with each scenario's transcript and why it "
        "passed or failed",
    )
    parser.add_argument(
        "--instructions",
        type=Path,
        metavar="FILE",
        help="the text of FILE replaces the default instructions at the top of the system prompt "
        "(the memory guidance, the memory snapshot and the tool descriptions stay as shipped), to "
        "compare wordings",
    )
    parser.add_argument(
        "--max-steps", type=int, default=None, metavar="N", help="tool steps per reply at most"
    )


def run(args: argparse.Namespace, stdin: TextIO | None = None) -> int:
    """Run the suite; 0 when it finished (whatever the score), 2 on a configuration error."""
    from .agents import AgentSettings  # here: start-up time (see the top)
    from .report import html_report, summary, tables
    from .runner import run_suite

    err = sys.stderr
    model = args.model or os.environ.get("MY_AGENT_MODEL")
    if not model:
        print("my-agent: no model configured: pass --model or set MY_AGENT_MODEL.", file=err)
        return EXIT_CONFIG
    try:
        scenarios = _scenarios(args)
        instructions = _instructions(args.instructions)
        _check_report_path(args.report)
    except _ConfigError as exc:
        print(f"my-agent: {exc}", file=err)
        return EXIT_CONFIG
    stdin = stdin or sys.stdin
    try:
        client = connect(
            args.base_url, args.api_key_file, stdin=stdin, interactive=is_terminal(stdin)
        )
    except EndpointProblem as exc:
        print(f"my-agent: {exc}", file=err)
        return EXIT_CONFIG
    settings = AgentSettings(model, client, instructions, args.max_steps)
    line = ProgressLine(err)
    try:
        results = run_suite(scenarios, settings, line.show)
    finally:
        line.done()
    status = EXIT_OK
    if args.report is not None:
        from my_agent_core.safe_write import write_atomic  # here: start-up time (see the top)

        try:
            write_atomic(args.report, html_report(model, results).encode("utf-8"))
        except OSError as exc:
            print(
                f"my-agent: cannot write the report {args.report}: {exc.strerror or exc}", file=err
            )
            status = EXIT_SYSTEM
    if args.json:
        print(json.dumps(summary(model, results), ensure_ascii=False))
    else:
        print(tables(model, results))
        if args.report is not None and status == EXIT_OK:
            print(f"\nReport: {args.report}")
    return status


class _ConfigError(Exception):
    pass


def _scenarios(args: argparse.Namespace) -> list[Scenario]:
    from .scenario import BUILTIN_DIR, ScenarioError, load_scenarios  # here: start-up time

    try:
        scenarios = load_scenarios([BUILTIN_DIR, *args.scenarios])
    except ScenarioError as exc:
        raise _ConfigError(str(exc)) from None
    if args.category:
        known = {s.category for s in scenarios}
        unknown = [c for c in args.category if c not in known]
        if unknown:
            raise _ConfigError(
                f"no scenario has the category {unknown[0]!r} (there are: {', '.join(sorted(known))})"
            )
        scenarios = [s for s in scenarios if s.category in args.category]
    return scenarios


def _instructions(path: Path | None) -> str | None:
    if path is None:
        return None
    from my_agent_core.paths import PathRefused, read_text  # here: start-up time

    try:
        text = read_text(path, max_bytes=INSTRUCTIONS_MAX_BYTES, name=str(path))
    except PathRefused as exc:
        raise _ConfigError(f"--instructions: {exc}") from None
    if text is None:
        raise _ConfigError(f"--instructions: {path} does not exist")
    if not text.strip():
        raise _ConfigError(f"--instructions: {path} is empty")
    return text


def _check_report_path(path: Path | None) -> None:
    """Refuse a report path that cannot be written before the run, not after minutes of it."""
    if path is None:
        return
    if path.is_dir():
        raise _ConfigError(f"--report: {path} is a folder; give a file name, e.g. eval.html")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise _ConfigError(f"--report: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise _ConfigError(f"--report: the folder {parent} is not writable")


class ProgressLine:
    """The progress of a run on stderr: one line redrawn in place on a terminal, else a line per
    scenario step (never a control character, so a log or an editor can show it as it is)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        raw = sys.__stderr__
        self._tty = is_terminal(stream) and raw is not None and is_terminal(raw)
        self._raw = raw if self._tty else None
        self._last = ""

    def show(self, p: Progress) -> None:
        text = (
            f"eval [{p.case}/{p.total}] {p.category} · {p.scenario} · session "
            f"{p.session}/{p.sessions} · message {p.message}/{p.messages}"
        )
        if self._raw is not None:
            self._raw.write(f"\r\x1b[K{visible(f'{text} · {p.activity}')[:200]}")
            self._raw.flush()
        elif text != self._last:  # steps, not every tool call
            print(text, file=self._stream, flush=True)
        self._last = text

    def done(self) -> None:
        if self._raw is not None and self._last:
            self._raw.write("\r\x1b[K")
            self._raw.flush()
