"""`my-agent recall QUERY [--dir PATH]`: search the folder's archive from a terminal.

Also `--list`, `--show ID` and `--delete ID`, so a person can read and prune what was archived. The
module imports nothing heavy until the command runs, so registering it costs the CLI nothing (the
archive's imports inside the functions below are there for that: `my-agent` builds its parser at
every start; the terminal's text is loaded by every command anyway).

Exit codes: 0 with results, 1 when nothing matched (no archive yet, no such item), 2 when the archive
cannot be used (bad usage, a PostgreSQL server that cannot be reached, a malformed DSN, a refused
path): one `my-agent:` line on stderr, never a traceback, so a script never reads a failure as "no
match".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from my_agent_core.terminal_text import visible

if TYPE_CHECKING:
    from my_agent_core.memory.providers.indexed import IndexedArchiveProvider
    from my_agent_core.memory.providers.items import RecallItem

__all__ = ["add_recall_command", "run"]


def add_recall_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `recall` on the `my-agent` sub-command parsers."""
    parser = sub.add_parser(
        "recall", help="search the archive of earlier turns and removed memory entries"
    )
    parser.add_argument("query", nargs="*", metavar="QUERY", help="words to look for")
    parser.add_argument(
        "--dir", type=Path, help="workspace folder, or its .my_agent_core/memory (default: .)"
    )
    parser.add_argument("--limit", type=int, default=10, help="how many items (10)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--provider", help="archive (default) or postgres (DSN from MY_AGENT_PG_DSN)"
    )
    parser.add_argument(
        "--semantic",
        action="store_true",
        default=None,
        help="also search by meaning (needs the `semantic` extra; MY_AGENT_SEMANTIC=1 does the "
        "same)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="list items, newest first")
    what.add_argument("--show", metavar="ID", help="print one item in full")
    what.add_argument("--delete", metavar="ID", help="delete one item from the archive")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0 with results, 1 when nothing matched (or no such item), 2 on bad usage or an archive
    that cannot be used."""
    args.query = " ".join(args.query or []).strip()
    if not (args.query or args.list or args.show or args.delete):
        print("my-agent: recall needs a QUERY (or --list, --show ID, --delete ID)", file=sys.stderr)
        return 2
    try:
        archive = _open(args)
    except Exception as exc:  # a person's tool: say why, never a traceback
        print(f"my-agent: {_one_line(exc)}", file=sys.stderr)
        return 2
    if archive is None:
        return 1
    try:
        return _dispatch(archive, args)
    except Exception as exc:  # the archive failed mid-way (a server gone, a damaged file)
        print(f"my-agent: {_one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        try:
            archive.shutdown()
        except Exception as exc:
            print(f"my-agent: {_one_line(exc)}", file=sys.stderr)


def _open(args: argparse.Namespace) -> IndexedArchiveProvider | None:
    from my_agent_core.memory.providers.registry import (  # here: start-up time (see above)
        ProviderContext,
        create_provider,
        provider_name,
        semantic_enabled,
    )

    folder = _workspace_folder(args.dir if args.dir is not None else Path.cwd())
    name = (args.provider or provider_name()).strip()
    semantic = args.semantic is True or semantic_enabled()
    if name == "archive":
        from my_agent_core.memory.providers.archive import archive_path, open_archive  # start-up

        if not archive_path(folder, create=False).exists():
            print(f"my-agent: no archive yet in {folder}", file=sys.stderr)
            return None
        if semantic:
            return _semantic_archive(folder, explicit=args.semantic is True)
        return open_archive(folder, report=_stderr)
    from my_agent_core.memory.providers.indexed import IndexedArchiveProvider  # start-up time

    if semantic and args.semantic is True:
        raise ValueError(f"--semantic works with the archive provider only, not {name!r}")
    provider = create_provider(name, ProviderContext(folder))
    if not isinstance(provider, IndexedArchiveProvider):
        if provider is not None:
            provider.shutdown()
        raise ValueError(f"the memory provider {name!r} has no archive to search from here")
    try:
        provider.check()  # a wrong host, role or database is an error, not "no match"
    except BaseException:
        provider.shutdown()
        raise
    return provider


def _semantic_archive(folder: Path, *, explicit: bool) -> IndexedArchiveProvider:
    """The folder's archive searched by meaning too; the model is loaded now (a search needs it),
    without a progress bar. Without the extra: an error when asked for, else keyword search."""
    from my_agent_core.memory.providers import semantic  # here: start-up time (see above)
    from my_agent_core.memory.providers.archive import open_archive

    reason = semantic.unavailable()
    if reason is not None:
        if explicit:
            raise ValueError(reason)
        print(f"my-agent: {reason}; searching by keywords.", file=sys.stderr)
        return open_archive(folder, report=_stderr)
    return semantic.HybridArchiveProvider(
        folder, embedder=semantic.MiniLMEmbedder(), report=_stderr
    )


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _one_line(exc: BaseException) -> str:
    """An error as one line a person can read."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _dispatch(archive: IndexedArchiveProvider, args: argparse.Namespace) -> int:
    if args.delete:
        if not archive.delete(args.delete):
            print(f"my-agent: no archived item {args.delete}", file=sys.stderr)
            return 1
        print(f"Deleted archived item {args.delete}.")
        return 0
    if args.show:
        item = archive.get(args.show)
        if item is None:
            print(f"my-agent: no archived item {args.show}", file=sys.stderr)
            return 1
        items = [item]
    elif args.list:
        items = archive.list_items(max(1, args.limit))
    else:
        items = archive.search_items(args.query, max(1, args.limit))
    if args.json:
        # \u escapes: no byte of an archived text can act on a terminal, and it stays valid JSON
        print(json.dumps([item.to_hit() for item in items], ensure_ascii=True, indent=2))
    else:
        for item in items:
            _print(item, full=bool(args.show))
    return 0 if items else 1


def _print(item: RecallItem, *, full: bool) -> None:
    """One item: archived text (a model's reply, a file's lines) may hold terminal escapes, so the
    header and the text are shown through `visible`, as everything the command line prints."""
    header = f"{item.id:>6}  {item.date or '----------'}  {item.label}"
    if full:
        print(visible(f"{header}\n{item.text}\n"))
        return
    flat = " ".join(item.text.split())
    print(visible(f"{header}\n        {flat if len(flat) <= 160 else flat[:159] + '…'}"))


def _workspace_folder(path: Path) -> Path:
    """The workspace folder of PATH: PATH itself, or the folder holding its .my_agent_core."""
    resolved = path.absolute()
    if resolved.name == "memory" and resolved.parent.name == ".my_agent_core":
        return resolved.parent.parent
    if resolved.name == ".my_agent_core":
        return resolved.parent
    return resolved
