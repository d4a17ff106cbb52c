"""`my-agent mcp [--dir PATH] [--user-profile workspace|global]`: the memory MCP server on stdio.

stdout carries the protocol only; everything a person should read goes to stderr. The SDK is
imported when the command runs, never when the command line is built.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from my_agent_core.memory.store import MemoryStore

__all__ = ["add_command", "run"]


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mcp` on the `my-agent` subcommand parser."""
    from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT

    parser = sub.add_parser(
        "mcp",
        help="serve this folder's memory to other agents (Model Context Protocol on stdio)",
        description="A Model Context Protocol server on stdio: tool `memory`, resources "
        "memory://MEMORY.md and memory://USER.md, prompt `memory_context`.",
    )
    parser.add_argument("--dir", type=Path, help="memory folder (default: ./.my_agent_core/memory)")
    parser.add_argument(
        "--memory-limit", type=int, default=MEMORY_CHAR_LIMIT, help="MEMORY.md budget"
    )
    parser.add_argument("--user-limit", type=int, default=USER_CHAR_LIMIT, help="USER.md budget")
    from my_agent_core.memory.location import USER_PROFILE_ENV, USER_PROFILES

    parser.add_argument(
        "--user-profile",
        choices=USER_PROFILES,
        default=None,
        help="where USER.md lives: this workspace, or one global profile in "
        f"${{XDG_CONFIG_HOME:-~/.config}}/my-agent-core (default: ${USER_PROFILE_ENV} or workspace)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin; 2 when the memory folder is refused."""
    import anyio

    from my_agent_core.memory.location import open_store, resolve_user_profile
    from my_agent_core.memory.paths import memory_dir_of
    from my_agent_core.paths import PathRefused, check_memory_folder

    try:
        profile = resolve_user_profile(getattr(args, "user_profile", None))
    except ValueError as exc:
        print(f"my-agent mcp: {exc}", file=sys.stderr)
        return 2

    mem_dir = args.dir if args.dir is not None else memory_dir_of(Path.cwd())
    try:
        check_memory_folder(mem_dir)
    except PathRefused as exc:
        print(f"my-agent mcp: {exc}", file=sys.stderr)
        return 2
    if mem_dir.exists() and not mem_dir.is_dir():
        print(f"my-agent mcp: {mem_dir} is not a folder.", file=sys.stderr)
        return 2
    for name, value in (("--memory-limit", args.memory_limit), ("--user-limit", args.user_limit)):
        if value < 1:
            print(f"my-agent mcp: {name} must be a positive number of characters.", file=sys.stderr)
            return 2
    store = open_store(
        mem_dir=mem_dir,
        user_profile=profile,
        memory_char_limit=args.memory_limit,
        user_char_limit=args.user_limit,
        author="mcp",
    )
    try:
        anyio.run(_serve, store)
    finally:
        store.close()
    return 0


async def _serve(store: MemoryStore) -> None:
    from mcp.server.stdio import stdio_server

    from my_agent_core.mcp.server import build_server

    server = build_server(store)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
