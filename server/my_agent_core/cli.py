"""The `my-agent` command line: memory, lint, import, recall, chat, team memory through git, and the
servers for the editor and for other agents.

Everything a command prints to the terminal passes `terminal_text.visible` (the streams are wrapped
in `main`), so text from memory, files, sessions or a model cannot drive the terminal.

Exit codes scripts can rely on:
  0  success
  1  lint found errors; a memory edit or undo was refused (the message says why; nothing was written)
  2  bad usage, or input that cannot be read: missing, not a regular file (a FIFO, a device), too
     large, not UTF-8, or a link out of its folder
  3  the system did not let it finish: the memory folder stayed locked by another process, or the
     disk refused the write (full, read-only, an I/O error); nothing was written, retrying may work
130 interrupted
Every failure is one `my-agent: ...` line on stderr, never a traceback.

The imports inside the command functions are start-up time: `my-agent` is a process per call (git
runs the merge driver once per merge), so building the parser loads only what the options need and
each command loads its own parts when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from my_agent_core import __version__, chat_cli, recall_cli
from my_agent_core.eval import command as eval_command
from my_agent_core.layout import FILE_NAMES, MEMORY_SUBDIR, TARGETS, memory_dir_of
from my_agent_core.mcp import command as mcp_command
from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT
from my_agent_core.memory.location import (
    USER_PROFILE_ENV,
    USER_PROFILES,
    global_profile_dir,
    open_store,
    resolve_user_profile,
    workspace_of,
)
from my_agent_core.team import commands as team_commands
from my_agent_core.terminal_text import visible_output

if TYPE_CHECKING:
    from my_agent_core.context.rules import WorkspaceRules
    from my_agent_core.memory.document import MemoryDocument
    from my_agent_core.memory.lint import Finding
    from my_agent_core.memory.providers import MemoryManager
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.memory.store_types import WriteEvent, WriteListener

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "EXIT_SYSTEM", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_FINDINGS = 1  # lint errors, or a refused memory edit
EXIT_USAGE = 2  # bad usage or unreadable input
EXIT_SYSTEM = 3  # locked past the timeout, or the disk refused the write
#: Bytes `lint` reads of one file: far past any budget (a hand-overfilled file is still linted, as in
#: the editor), yet bounded, so `/dev/zero` or a runaway log cannot flood it.
LINT_MAX_BYTES = 4 * 1024 * 1024

_SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `my-agent` console script and `python -m my_agent_core`."""
    parser = _build_parser()
    with visible_output(stdout=False):  # argparse's errors quote the arguments given
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
        # serve and mcp speak a protocol on stdout: only their stderr is for a person
        with visible_output(stdout=not getattr(args, "protocol_stdout", False)):
            try:
                return int(args.handler(args))
            except KeyboardInterrupt:
                return 130
            except BrokenPipeError:
                return 0
            except OSError as exc:  # the last line of defence: a disk or a device said no
                where = f": {exc.filename}" if exc.filename else ""
                print(f"my-agent: {exc.strerror or exc}{where}", file=sys.stderr)
                return EXIT_SYSTEM


DESCRIPTION = """\
my-agent: long-term memory for coding agents (two Markdown files per folder, MEMORY.md and
USER.md), a linter for them, and a coding agent in the terminal. `my-agent COMMAND --help`
tells more about each command."""
EPILOG = """\
exit codes: 0 success; 1 lint errors, or a refused memory edit; 2 bad usage or input that
cannot be read (for chat: no model, an endpoint that cannot be reached); 3 the memory folder
stayed locked or the disk refused the write; 130 interrupted. Every error is one `my-agent:`
line on stderr."""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="my-agent",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"my-agent {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")

    lint = sub.add_parser("lint", help="lint memory files (path:line:col: code message)")
    lint.add_argument(
        "paths", nargs="*", metavar="PATH", help="memory files or folders (default: .)"
    )
    lint.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: one finding a line, path:line:col: code message (default); json: a list",
    )
    _limit_options(lint)
    lint.add_argument(
        "--near-share", type=float, default=0.9, help="near-budget warning share (0.9)"
    )
    lint.add_argument(
        "--no-workspace",
        action="store_true",
        help="skip the rules that check entries against the workspace (stale paths, context files)",
    )
    _profile_option(lint)
    lint.set_defaults(handler=_cmd_lint)

    serve = sub.add_parser(
        "serve", help="run the language server on stdio (what the editor starts)"
    )
    serve.set_defaults(handler=_cmd_serve, protocol_stdout=True)

    chat = sub.add_parser(
        "chat", help="chat with the agent in the terminal on this folder's memory"
    )
    chat_cli.add_arguments(chat)
    chat.set_defaults(handler=_cmd_chat)

    evaluate = sub.add_parser("eval", help="measure how a model handles memory (scenario suite)")
    eval_command.add_arguments(evaluate)
    evaluate.set_defaults(handler=_cmd_eval)

    memory = sub.add_parser(
        "memory",
        help="show, edit, import or undo memory entries (MEMORY.md, USER.md)",
        description="Show or edit the memory store: every change is journaled and can be undone.",
    )
    msub = memory.add_subparsers(metavar="ACTION")
    for name, help_text, extra in (
        ("show", "print the entries and usage", []),
        ("add", "add an entry (TEXT '-' reads stdin)", ["text"]),
        ("replace", "replace the entry containing OLD by NEW", ["old", "new"]),
        ("remove", "remove the entry containing OLD", ["old"]),
        ("log", "print the change history: who changed what, when, and from what text", []),
        ("undo", "revert the newest change (or the change ID, on top of the file as it is)", []),
        (
            "import",
            "add the items of a CLAUDE.md / AGENTS.md / .cursorrules file as entries (items "
            "this folder's context files already give every session are skipped)",
            ["file"],
        ),
    ):
        cmd = msub.add_parser(
            name, help=help_text, description=help_text[0].upper() + help_text[1:]
        )
        for arg in extra:
            cmd.add_argument(arg, metavar=arg.upper(), help=_ARGUMENT_HELP[arg])
        if name == "undo":
            cmd.add_argument(
                "id", nargs="?", metavar="ID", help="the change to revert (from `memory log`)"
            )
        cmd.add_argument(
            "--dir",
            type=Path,
            metavar="PATH",
            help="memory folder (default: ./.my_agent_core/memory)",
        )
        if name not in ("log", "undo"):
            cmd.add_argument(
                "--target",
                choices=TARGETS,
                default="memory",
                help="memory: the agent's notes, MEMORY.md (default); user: the user's profile, USER.md",
            )
        if name in ("show", "log"):
            cmd.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "log":
            cmd.add_argument(
                "--limit",
                type=int,
                default=20,
                metavar="N",
                help="how many changes, newest first (20)",
            )
        _profile_option(cmd)
        if name != "show":
            cmd.add_argument(
                "--lock-timeout",
                type=float,
                default=None,
                metavar="SECONDS",
                help="how long to wait for another process's lock (default: 10)",
            )
        _limit_options(cmd)
        cmd.set_defaults(handler=_cmd_memory, action=name)

    def memory_help(_args: argparse.Namespace) -> int:
        memory.print_help()
        return EXIT_USAGE

    memory.set_defaults(handler=memory_help)
    team_commands.add_commands(sub)
    mcp_command.add_command(sub)
    sub.choices["mcp"].set_defaults(protocol_stdout=True)
    recall_cli.add_recall_command(sub)
    return parser


_ARGUMENT_HELP = {
    "text": "the entry's text ('-' reads it from standard input)",
    "old": "a piece of text that appears in exactly one entry (that entry is the one changed)",
    "new": "the entry's whole new text",
    "file": "the instructions file to import (CLAUDE.md, AGENTS.md, .cursorrules ...)",
}
#: The memory tool's parameter names, as the store's messages say them, and the command line's.
_CLI_NAMES = {"old_text": "OLD", "new_content": "NEW", "content": "TEXT"}
_TOOL_NAME = re.compile(r"`(old_text|new_content|content)`|\b(old_text|new_content)\b")
_QUOTED = re.compile(r'("[^"\n]*")')


def _in_cli_terms(error: Exception) -> str:
    """A store's message in the command line's words: `OLD` where the tool says `old_text`
    (its first line only, and never inside a quote of the user's text or an entry)."""
    head, newline, rest = str(error).partition("\n")
    parts = _QUOTED.split(head)
    for i in range(0, len(parts), 2):  # the even parts are outside quotes
        parts[i] = _TOOL_NAME.sub(lambda m: _CLI_NAMES[m.group(1) or m.group(2)], parts[i])
    return "".join(parts) + newline + rest


def _profile_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user-profile",
        choices=USER_PROFILES,
        default=None,
        help="where USER.md lives: this workspace's memory folder, or one global profile in "
        f"${{XDG_CONFIG_HOME:-~/.config}}/my-agent-core (default: ${USER_PROFILE_ENV} or workspace)",
    )


def _limit_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-limit",
        type=int,
        default=MEMORY_CHAR_LIMIT,
        metavar="CHARS",
        help=f"MEMORY.md budget in characters ({MEMORY_CHAR_LIMIT})",
    )
    parser.add_argument(
        "--user-limit",
        type=int,
        default=USER_CHAR_LIMIT,
        metavar="CHARS",
        help=f"USER.md budget in characters ({USER_CHAR_LIMIT})",
    )


# ---------------------------------------------------------------------------------------------- memory


def _cmd_memory(args: argparse.Namespace) -> int:
    try:
        profile = resolve_user_profile(args.user_profile)
    except ValueError as exc:
        print(f"my-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    mem_dir = args.dir if args.dir is not None else memory_dir_of(Path.cwd())
    archive = _ArchiveRemovals(Path(mem_dir))
    store = open_store(
        mem_dir=mem_dir,
        user_profile=profile,
        memory_char_limit=args.memory_limit,
        user_char_limit=args.user_limit,
        author="cli",
        on_write=archive,
    )
    archive.store = store
    try:
        return _run_memory(args, store)
    finally:
        archive.close()


def _run_memory(args: argparse.Namespace, store: MemoryStore) -> int:
    from my_agent_core.memory.errors import MemoryStoreError, exit_code  # here: start-up time
    from my_agent_core.paths import PathRefused

    if getattr(args, "lock_timeout", None) is not None:
        store.lock_timeout = args.lock_timeout
    if store.folder_error is not None:
        print(f"my-agent: {store.folder_error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.action == "show":
            return _show(store, args.target, args.json)
        if args.action == "log":
            return _log(store, args.limit, args.json)
        if args.action == "import":
            return _import(store, args.file, args.target)
        if args.action == "undo":
            record = store.undo(args.id, author="cli")
            undone = next((r for r in store.log(10_000) if r.id == record.undoes), None)
            what = f"{undone.action} by {undone.author} ({undone.id})" if undone else "the change"
            print(f"Undid the {what} in {FILE_NAMES[record.target]}.")
            return EXIT_OK
        if args.action == "add":
            if args.text == "-":
                try:
                    text = sys.stdin.read()
                except UnicodeDecodeError:
                    print("my-agent: standard input is not valid UTF-8 text", file=sys.stderr)
                    return EXIT_USAGE
            else:
                text = args.text
            print(store.add(args.target, text))
        elif args.action == "replace":
            print(store.replace(args.target, args.old, args.new))
        else:
            print(store.remove(args.target, args.old))
    except MemoryStoreError as exc:  # its exit code by class (memory/errors.py), not clause order
        print(f"my-agent: {_in_cli_terms(exc)}", file=sys.stderr)
        return exit_code(exc)
    except PathRefused as exc:
        print(f"my-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


class _ArchiveRemovals:
    """What a `my-agent memory` edit takes out of memory (a replace, a remove, an undo) goes to
    the archive, as every front end's edits do: the provider `MY_AGENT_MEMORY_PROVIDER` names,
    else `archive`, opened only when an edit removed something ("none": off). A provider that
    cannot take it says so on stderr; the edit is saved either way (the journal keeps it, and the
    provider's backlog catches it up in the next session)."""

    def __init__(self, mem_dir: Path) -> None:
        self.mem_dir = mem_dir
        self.store: MemoryStore | None = None
        self._manager: MemoryManager | None = None
        self._listener: WriteListener | None = None
        self._off = False

    def __call__(self, event: WriteEvent) -> None:
        if self._off or not any(change.before for change in event.record.changes):
            return
        if self._listener is None:
            self._listener = self._open()
        if self._listener is not None:
            self._listener(event)

    def _open(self) -> WriteListener | None:
        from my_agent_core.memory.journal import MAX_RECORDS  # here: start-up time (see the top)
        from my_agent_core.memory.providers import ProviderContext, build_manager
        from my_agent_core.memory.providers.registry import provider_name

        name = provider_name()
        folder = workspace_of(self.mem_dir)
        if name == "none" or folder is None:
            self._off = True
            return None

        def on_error(_provider: str, message: str) -> None:
            print(
                f"my-agent: {message.removesuffix(' Chat goes on without recalled memory.')}",
                file=sys.stderr,
            )

        self._manager = build_manager(ProviderContext(folder), name=name, on_error=on_error)
        store = self.store
        history = (lambda: store.log(limit=MAX_RECORDS)) if store is not None else None
        return self._manager.memory_write_listener(history=history)

    def close(self) -> None:
        if self._manager is not None:
            self._manager.shutdown()


def _import(store: MemoryStore, file: str, target: str) -> int:
    """`memory import FILE`: 0 when every item is in memory now, 1 when some did not fit or were
    refused (each listed), so a script notices a partial import."""
    from my_agent_core.context.importer import import_file  # here: start-up time

    result = import_file(store, file, target=target, author="cli")
    print(result.message)
    for skipped in result.in_context:
        print(
            f"  skipped: the item at line {skipped.line}, already in {skipped.file} "
            f"(line {skipped.file_line}): {_one_line(skipped.text, 80)}"
        )
    for text in result.not_fitted:
        print(f"  not fitted: {_one_line(text)}")
    for refused in result.refused:  # not quoted: the scanner refused it as unsafe
        print(f"  refused: the item at line {refused.line} ({refused.reason})")
    return EXIT_FINDINGS if result.not_fitted or result.refused else EXIT_OK


def _show(store: MemoryStore, target: str, as_json: bool) -> int:
    from my_agent_core.memory.safety import describe, scan  # here: start-up time (see the top)

    state = store.state(target)
    blocked = {n: describe(issues) for n, e in enumerate(state.entries) if (issues := scan(e))}
    if as_json:
        print(
            json.dumps(
                {
                    "target": state.target,
                    "path": str(state.path),
                    "used": state.used,
                    "limit": state.limit,
                    "entries": state.entries,
                    "blocked": [{"entry": n + 1, "why": why} for n, why in blocked.items()],
                    "available": state.available,
                    "error": state.error,
                    "journal_error": state.journal_error,
                },
                ensure_ascii=True,  # \u escapes: no byte of an entry can act on a terminal
                indent=2,
            )
        )
        return EXIT_OK if state.available else EXIT_USAGE
    if state.journal_error:
        print(f"my-agent: warning: {_history_warning(state.journal_error)}", file=sys.stderr)
    if not state.available:
        print(f"my-agent: {state.error}", file=sys.stderr)
        return EXIT_USAGE
    share = state.used / state.limit if state.limit else 0
    print(
        f"{state.path}: {state.used}/{state.limit} chars ({share:.0%}), {_plural(len(state.entries), 'entry', 'entries')}"
    )
    for number, entry in enumerate(state.entries, start=1):
        lines = entry.splitlines() or [""]
        why = blocked.get(number - 1)
        if why is not None:  # kept out of every prompt: say so before its text (shown escaped)
            print(f"{number:>3}. [BLOCKED: kept out of every prompt because it {why}]")
            for line in lines:
                print(f"     ! {line}")
            continue
        print(f"{number:>3}. {lines[0]}")
        for line in lines[1:]:
            print(f"     {line}")
    if blocked:
        them = "it" if len(blocked) == 1 else "them"
        print(
            f"{_plural(len(blocked), 'entry is', 'entries are')} blocked as unsafe (kept out of "
            f"every prompt): remove {them} with `my-agent memory remove OLD`, or rewrite {them}."
        )
    return EXIT_OK


def _history_warning(error: str) -> str:
    """One wording for "changes are not being recorded", whoever noticed it."""
    text = error if error.startswith("history not recorded") else f"history not recorded: {error}"
    return f"{text}; changes made now cannot be undone."


def _log(store: MemoryStore, limit: int, as_json: bool) -> int:
    records = store.log(limit)
    if as_json:
        print(json.dumps([r.to_json() for r in records], ensure_ascii=True, indent=2))
        return EXIT_OK
    if not records:
        print("No changes recorded yet.")
    from my_agent_core.memory.origins import record_summary  # here: start-up time

    for r in records:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.time))
        name = FILE_NAMES.get(r.target, r.target or "-")
        print(f"{r.id}  {stamp}  {r.author:<16} {r.action:<8} {name}")
        if r.changes_file:  # who, when, from what: "added 7 Dec by the chat '...' · your own words"
            print(f"    {record_summary(r)}")
        if r.action == "skip":
            print(f"    skipped {r.skips}: {_one_line(r.note or '')}")
        elif r.action == "gap":
            print(f"    ! {_one_line(r.note or 'a change may be missing here')}")
        if r.undoes:
            print(f"    undoes {r.undoes}")
        if r.before is not None:
            print(f"    - {_one_line(r.before)}")
        if r.after is not None:
            print(f"    + {_one_line(r.after)}")
    return EXIT_OK


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# ---------------------------------------------------------------------------------------------- lint


def _cmd_lint(args: argparse.Namespace) -> int:
    from my_agent_core.memory.document import parse  # here: start-up time (the linter's parts)
    from my_agent_core.memory.lint import lint
    from my_agent_core.memory.own_files import check_separate
    from my_agent_core.paths import PathRefused, check_memory_file, read_regular

    try:
        profile = resolve_user_profile(args.user_profile)
    except ValueError as exc:
        print(f"my-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    files, missing = _lint_targets(args.paths, global_profile=profile == "global")
    workspace_rules = _WorkspaceRulesCache(enabled=not args.no_workspace)
    team_checks = _TeamChecks()
    for path in missing:
        print(f"my-agent: {path}: no such file or folder", file=sys.stderr)
    if missing:
        return EXIT_USAGE
    results: list[dict[str, object]] = []
    unreadable = False
    for path in files:
        limit = args.user_limit if path.name == FILE_NAMES["user"] else args.memory_limit
        try:
            check_memory_file(path)
            check_separate(path.parent, path.name)  # MEMORY.md linked to history.jsonl: not memory
            data = read_regular(path, max_bytes=LINT_MAX_BYTES, name=str(path))
            if data is None:
                raise PathRefused(f"{path} does not exist (a link to nothing?); it is not read.")
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            results.append(
                _finding(path, 0, 0, 0, 0, "undecodable", 1, f"not valid UTF-8 (byte {exc.start})")
            )
            unreadable = True
            continue
        except PathRefused as exc:
            results.append(_finding(path, 0, 0, 0, 0, "unreadable", 1, str(exc)))
            unreadable = True
            continue
        doc = parse(text)
        findings = lint(doc, limit=limit, near_share=args.near_share)
        findings += workspace_rules.lint(path, doc)
        findings += team_checks.lint(path, doc)
        findings.sort(key=lambda f: (f.start, f.end, f.severity))
        for f in findings:
            start, end = doc.pos_at(f.start), doc.pos_at(f.end)
            results.append(
                _finding(
                    path,
                    start.line,
                    start.col,
                    end.line,
                    end.col,
                    f.code,
                    int(f.severity),
                    f.message,
                    bool(f.fixes),
                )
            )
    if args.format == "json":
        print(json.dumps(results, ensure_ascii=True, indent=2))
    else:
        for r in results:
            print(f"{r['path']}:{r['line']}:{r['column']}: {r['code']} {r['message']}")
        if not files:
            print(
                "my-agent: no memory files found (looked for .my_agent_core/memory/*.md)",
                file=sys.stderr,
            )
    if unreadable:
        return EXIT_USAGE
    return EXIT_FINDINGS if any(r["severity"] == "error" for r in results) else EXIT_OK


def _finding(
    path: Path,
    line: int,
    col: int,
    end_line: int,
    end_col: int,
    code: str,
    severity: int,
    message: str,
    fixable: bool = False,
) -> dict[str, object]:
    return {
        "path": str(path),
        "line": line + 1,
        "column": col + 1,
        "endLine": end_line + 1,
        "endColumn": end_col + 1,
        "code": code,
        "severity": _SEVERITY_NAMES.get(severity, "error"),
        "message": message,
        "fixable": fixable,
    }


class _WorkspaceRulesCache:
    """The workspace rules of each workspace linted, its index built once per run."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._rules: dict[Path | None, WorkspaceRules] = {}

    def lint(self, path: Path, doc: MemoryDocument) -> list[Finding]:
        """The workspace findings of a memory file: all rules for a file of a workspace's memory
        folder (the folder is the parent of `.my_agent_core/memory`), `volatile-content` alone
        for any other file (an explicit `--dir`, the global profile)."""
        if not self.enabled:
            return []
        from my_agent_core.context.index import WorkspaceIndex  # here: start-up time
        from my_agent_core.context.rules import WorkspaceRules

        folder = workspace_of(path.parent)
        rules = self._rules.get(folder)
        if rules is None:  # the tools' own walker: faster here than spawning rg (bench/context.py)
            index = WorkspaceIndex.build(folder) if folder else None
            rules = self._rules[folder] = WorkspaceRules(index)
        return rules.lint(doc)


class _TeamChecks:
    """What a merge left to look at: the pairs of versions a merge kept (`merge-pair`), and, on a
    workspace's MEMORY.md, a clone whose `.gitattributes` names the merge driver that its git
    config does not define (`driver-not-set-up`; git asked once per workspace and run)."""

    def __init__(self) -> None:
        self._status: dict[Path, str | None] = {}

    def lint(self, path: Path, doc: MemoryDocument) -> list[Finding]:
        from my_agent_core.memory.lint import (  # here: start-up time (the linter's parts)
            DocumentLayout,
            driver_notice,
            merge_pair_findings,
        )
        from my_agent_core.memory.merge_pairs import read_pairs

        layout = DocumentLayout(doc)
        findings = merge_pair_findings(layout, read_pairs(path.parent, path.name))
        folder = workspace_of(path.parent)
        if folder is not None and path.name == FILE_NAMES["memory"]:
            notice = self._notice(folder)
            if notice is not None:
                findings.append(driver_notice(layout, notice))
        return findings

    def _notice(self, folder: Path) -> str | None:
        if folder not in self._status:
            from my_agent_core.team.git_setup import driver_status  # here: start-up time

            status = driver_status(folder)
            self._status[folder] = status.notice() if status and status.needs_setup else None
        return self._status[folder]


def _lint_targets(paths: list[str], *, global_profile: bool) -> tuple[list[Path], list[Path]]:
    """Files to lint: given files, the memory files under given folders, or those of the current one.

    Anything that exists and is not a folder counts as a file (a FIFO or a device is then refused
    by the reader with a message, not mistaken for a missing path). With the global profile a
    folder's USER.md is the one in the user's config folder (listed once)."""
    files: list[Path] = []
    missing: list[Path] = []
    for raw in paths or ["."]:
        path = Path(raw)
        if path.is_dir():
            folder = (
                path
                if path.name == MEMORY_SUBDIR[1] and path.parent.name == MEMORY_SUBDIR[0]
                else (memory_dir_of(path))
            )
            for target, name in FILE_NAMES.items():
                home = global_profile_dir() if global_profile and target == "user" else folder
                if os.path.lexists(home / name) and home / name not in files:
                    files.append(home / name)
        elif os.path.lexists(path):
            files.append(path)
        else:
            missing.append(path)
    return files, missing


# ---------------------------------------------------------------------------------------------- serve


def _cmd_chat(args: argparse.Namespace) -> int:
    from my_agent_core.process_guard import protect_process  # here: start-up time (ctypes)

    protect_process()  # the commands it runs cannot read the API key from /proc/<pid>/environ
    return chat_cli.run(args)


def _cmd_eval(args: argparse.Namespace) -> int:
    from my_agent_core.process_guard import protect_process  # here: start-up time (ctypes)

    protect_process()  # as for chat: the key in the environment stays out of /proc/<pid>/environ
    return eval_command.run(args)


def _cmd_serve(_args: argparse.Namespace) -> int:
    from my_agent_core.lsp.server import main as serve  # here: start-up time (the server)

    serve()
    return 0
