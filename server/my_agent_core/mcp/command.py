"""`my-agent mcp [--dir PATH] [--user-profile workspace|global] [--provider NAME]`: the memory MCP
server on stdio.

With a memory provider (`--provider`, else MY_AGENT_MEMORY_PROVIDER, else `archive`) the server
also offers `memory_search` (the built-in agent's own tool over the folder's `MemoryManager`), and
the entries a client's replace or remove takes out of memory go to that archive, as a chat
session's do. stdout carries the protocol only; everything a person should read goes to stderr.
The SDK is imported when the command runs, never when the command line is built.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from my_agent_core.memory.providers.base import MemoryManager
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.tools import Tool

__all__ = ["add_command", "run"]


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mcp` on the `my-agent` subcommand parser."""
    from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT

    parser = sub.add_parser(
        "mcp",
        help="serve this folder's memory to other agents (Model Context Protocol on stdio)",
        description="A Model Context Protocol server on stdio: tool `memory` (and "
        "`memory_search` when a memory provider is active), resources memory://MEMORY.md and "
        "memory://USER.md, prompt `memory_context`.",
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
    parser.add_argument(
        "--provider",
        default=None,
        metavar="NAME",
        help="memory provider behind `memory_search`: archive, postgres (DSN from "
        "MY_AGENT_PG_DSN), none, or a plug-in (default: $MY_AGENT_MEMORY_PROVIDER or archive)",
    )  # the registry is not imported to build the parser: every `my-agent` command would pay
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
    explicit = getattr(args, "provider", None)
    manager = layer_two(mem_dir, explicit)
    if manager is None:
        return 2
    store = open_store(
        mem_dir=mem_dir,
        user_profile=profile,
        memory_char_limit=args.memory_limit,
        user_char_limit=args.user_limit,
        author="mcp",
        on_write=manager.memory_write_listener() if manager.active else None,
    )
    try:
        anyio.run(_serve, store, search_tool(manager))
    finally:
        store.close()
        manager.shutdown()
    return 0


def layer_two(mem_dir: Path, explicit: str | None) -> MemoryManager | None:
    """The folder's `MemoryManager` (inactive when the memory provider is off or cannot start); None when a
    provider named on the command line cannot be used (exit 2). A provider chosen by the
    environment that fails is reported on stderr and the server runs without it."""
    from my_agent_core.memory.location import workspace_of
    from my_agent_core.memory.providers.base import MemoryManager
    from my_agent_core.memory.providers.registry import (
        ProviderContext,
        build_manager,
        provider_name,
    )

    name = explicit.strip() if explicit is not None else provider_name()
    if name == "none":
        return MemoryManager()
    folder = workspace_of(mem_dir)
    if folder is None:
        why = (
            f"the memory provider {name!r} keeps its archive per workspace folder, and {mem_dir} "
            "is not a workspace's .my_agent_core/memory"
        )
        if explicit is not None:
            print(f"my-agent mcp: {why}.", file=sys.stderr)
            return None
        print(f"my-agent mcp: {why}; serving without memory_search.", file=sys.stderr)
        return MemoryManager()

    def on_error(provider: str, message: str) -> None:
        print(f"my-agent mcp: {message}", file=sys.stderr)

    manager = build_manager(ProviderContext(folder), name=name, on_error=on_error)
    if explicit is not None and not manager.active:
        return None
    return manager


def search_tool(manager: MemoryManager) -> Tool | None:
    """The built-in agent's `memory_search` over `manager` (scanned hits), when it is active."""
    if not manager.active:
        return None
    from my_agent_core.memory.providers.search_tool import make_memory_search_tool

    return make_memory_search_tool(manager)


async def _serve(store: MemoryStore, search: Tool | None) -> None:
    from mcp.server.stdio import stdio_server

    from my_agent_core.mcp.server import build_server

    server = build_server(store, search=search)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
