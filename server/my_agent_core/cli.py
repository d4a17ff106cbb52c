"""The `my-agent` command line: lint, memory, chat, serve.

Exit codes scripts can rely on: 0 success, 1 findings with errors (lint) or a refused edit (memory),
2 bad usage or unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from my_agent_core import __version__
from my_agent_core.memory.paths import FILE_NAMES, MEMORY_SUBDIR, TARGETS, memory_dir_of

__all__ = ["main"]

_SEVERITY_NAMES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `my-agent` console script and `python -m my_agent_core`."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="my-agent", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"my-agent {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")

    lint = sub.add_parser("lint", help="lint memory files (path:line:col: code message)")
    lint.add_argument(
        "paths", nargs="*", metavar="PATH", help="memory files or folders (default: .)"
    )
    lint.add_argument("--format", choices=["text", "json"], default="text")
    _limit_options(lint)
    lint.add_argument(
        "--near-share", type=float, default=0.9, help="near-budget warning share (0.9)"
    )
    lint.set_defaults(handler=_cmd_lint)

    serve = sub.add_parser(
        "serve", help="run the language server on stdio (what the editor starts)"
    )
    serve.set_defaults(handler=_cmd_serve)

    chat = sub.add_parser(
        "chat", help="chat with the agent in the terminal on this folder's memory"
    )
    from my_agent_core import chat_cli

    chat_cli.add_arguments(chat)
    chat.set_defaults(handler=chat_cli.run)

    memory = sub.add_parser("memory", help="show or edit the memory store")
    msub = memory.add_subparsers(metavar="ACTION")
    for name, help_text, extra in (
        ("show", "print the entries and usage", []),
        ("add", "add an entry (TEXT '-' reads stdin)", ["text"]),
        ("replace", "replace the entry containing OLD by NEW", ["old", "new"]),
        ("remove", "remove the entry containing OLD", ["old"]),
        ("log", "print the change history", []),
        ("undo", "revert the last change not yet undone", []),
    ):
        cmd = msub.add_parser(name, help=help_text)
        for arg in extra:
            cmd.add_argument(arg)
        cmd.add_argument(
            "--dir", type=Path, help="memory folder (default: ./.my_agent_core/memory)"
        )
        if name not in ("log", "undo"):
            cmd.add_argument("--target", choices=TARGETS, default="memory")
        if name in ("show", "log"):
            cmd.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "log":
            cmd.add_argument("--limit", type=int, default=20)
        _limit_options(cmd)
        cmd.set_defaults(handler=_cmd_memory, action=name)
    memory.set_defaults(handler=lambda _args: (memory.print_help(), 2)[1])
    from my_agent_core.memory.providers.recall_cli import add_recall_command

    add_recall_command(sub)
    return parser


def _limit_options(parser: argparse.ArgumentParser) -> None:
    from my_agent_core.memory.store import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT

    parser.add_argument(
        "--memory-limit", type=int, default=MEMORY_CHAR_LIMIT, help="MEMORY.md budget"
    )
    parser.add_argument("--user-limit", type=int, default=USER_CHAR_LIMIT, help="USER.md budget")


# ---------------------------------------------------------------------------------------------- memory


def _cmd_memory(args: argparse.Namespace) -> int:
    from my_agent_core.memory.store import MemoryEditError, MemoryStore

    mem_dir = args.dir if args.dir is not None else memory_dir_of(Path.cwd())
    store = MemoryStore(mem_dir, args.memory_limit, args.user_limit, author="cli")
    try:
        if args.action == "show":
            return _show(store, args.target, args.json)
        if args.action == "log":
            return _log(store, args.limit, args.json)
        if args.action == "undo":
            record = store.undo(author="cli")
            print(f"Undid the last change to {FILE_NAMES[record.target]}.")
            return 0
        if args.action == "add":
            text = sys.stdin.read() if args.text == "-" else args.text
            print(store.add(args.target, text))
        elif args.action == "replace":
            print(store.replace(args.target, args.old, args.new))
        else:
            print(store.remove(args.target, args.old))
    except MemoryEditError as exc:
        print(f"my-agent: {exc}", file=sys.stderr)
        return 1
    return 0


def _show(store: object, target: str, as_json: bool) -> int:
    from my_agent_core.memory.store import MemoryStore

    assert isinstance(store, MemoryStore)
    state = store.state(target)
    if as_json:
        print(
            json.dumps(
                {
                    "target": state.target,
                    "path": str(state.path),
                    "used": state.used,
                    "limit": state.limit,
                    "entries": state.entries,
                    "available": state.available,
                    "error": state.error,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return 0 if state.available else 2
    if not state.available:
        print(f"my-agent: {state.error}", file=sys.stderr)
        return 2
    share = state.used / state.limit if state.limit else 0
    print(
        f"{state.path}: {state.used}/{state.limit} chars ({share:.0%}), {_plural(len(state.entries), 'entry', 'entries')}"
    )
    for number, entry in enumerate(state.entries, start=1):
        lines = entry.splitlines() or [""]
        print(f"{number:>3}. {lines[0]}")
        for line in lines[1:]:
            print(f"     {line}")
    return 0


def _log(store: object, limit: int, as_json: bool) -> int:
    from my_agent_core.memory.store import MemoryStore

    assert isinstance(store, MemoryStore)
    records = store.log(limit)
    if as_json:
        print(json.dumps([r.to_json() for r in records], ensure_ascii=False, indent=2))
        return 0
    if not records:
        print("No changes recorded yet.")
    for r in records:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.time))
        print(f"{r.id}  {stamp}  {r.author:<16} {r.action:<8} {FILE_NAMES.get(r.target, r.target)}")
        if r.before is not None:
            print(f"    - {_one_line(r.before)}")
        if r.after is not None:
            print(f"    + {_one_line(r.after)}")
    return 0


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


# ---------------------------------------------------------------------------------------------- lint


def _cmd_lint(args: argparse.Namespace) -> int:
    from my_agent_core.memory.document import parse
    from my_agent_core.memory.lint import lint

    files, missing = _lint_targets(args.paths)
    for path in missing:
        print(f"my-agent: {path}: no such file or folder", file=sys.stderr)
    if missing:
        return 2
    results: list[dict[str, object]] = []
    for path in files:
        limit = args.user_limit if path.name == FILE_NAMES["user"] else args.memory_limit
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            results.append(
                _finding(path, 0, 0, 0, 0, "undecodable", 1, f"not valid UTF-8 (byte {exc.start})")
            )
            continue
        except OSError as exc:
            results.append(_finding(path, 0, 0, 0, 0, "unreadable", 1, str(exc)))
            continue
        doc = parse(text)
        for f in lint(doc, limit=limit, near_share=args.near_share):
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
        print(json.dumps(results, ensure_ascii=False, indent=2))
    else:
        for r in results:
            print(f"{r['path']}:{r['line']}:{r['column']}: {r['code']} {r['message']}")
        if not files:
            print(
                "my-agent: no memory files found (looked for .my_agent_core/memory/*.md)",
                file=sys.stderr,
            )
    return 1 if any(r["severity"] == "error" for r in results) else 0


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


def _lint_targets(paths: list[str]) -> tuple[list[Path], list[Path]]:
    """Files to lint: given files, the memory files under given folders, or those of the current one."""
    files: list[Path] = []
    missing: list[Path] = []
    for raw in paths or ["."]:
        path = Path(raw)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            folder = (
                path
                if path.name == MEMORY_SUBDIR[1] and path.parent.name == MEMORY_SUBDIR[0]
                else (memory_dir_of(path))
            )
            files += [folder / name for name in FILE_NAMES.values() if (folder / name).is_file()]
        else:
            missing.append(path)
    return files, missing


# ---------------------------------------------------------------------------------------------- serve


def _cmd_serve(_args: argparse.Namespace) -> int:
    from my_agent_core.lsp.server import main as serve

    serve()
    return 0
