"""`my-agent mcp [--dir PATH] [--user-profile workspace|global] [--provider NAME] [--semantic]`: the
memory MCP server on stdio.

With a memory provider (`--provider`, else MY_AGENT_MEMORY_PROVIDER, else `archive`) the server
also offers `memory_search` (the built-in agent's own tool over the folder's `MemoryManager`), and
the entries a client's replace or remove takes out of memory go to that archive, as a chat
session's do. A provider that was asked for (flag or environment) must work: it is checked at start
(a PostgreSQL server that cannot be reached, a malformed DSN) and the command exits 2 saying why.
stdout carries the protocol only; everything a person should read goes to stderr (one
`my-agent mcp:` line per problem). The SDK is imported when the command runs, never when the
command line is built (the imports inside the functions below are there for that start-up time).

`--dir` must name a real place: MCP clients that do not expand `${workspaceFolder}` (Cline, Roo)
pass it literally, and a typo'd project path would silently start a new memory elsewhere; both are
refused before anything is created. Nothing is created until the first write.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from my_agent_core.layout import memory_dir_of
from my_agent_core.memory.limits import MEMORY_CHAR_LIMIT, USER_CHAR_LIMIT
from my_agent_core.memory.location import (
    USER_PROFILE_ENV,
    USER_PROFILES,
    open_store,
    resolve_user_profile,
    workspace_of,
)

if TYPE_CHECKING:
    from my_agent_core.memory.providers.base import MemoryManager
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.tools import Tool

__all__ = ["add_command", "dir_problem", "run"]

# An unexpanded variable: ${workspaceFolder}, $HOME, %USERPROFILE% (a client passed it literally).
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%")


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `mcp` on the `my-agent` subcommand parser."""
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
    parser.add_argument(
        "--semantic",
        action="store_true",
        default=None,
        help="the archive also searches by meaning (needs the `semantic` extra; "
        "MY_AGENT_SEMANTIC=1 does the same)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin; 2 when the memory folder or the provider is refused."""
    import anyio  # here: start-up time (the SDK's loop; see the top)

    from my_agent_core.memory.journal import MAX_RECORDS  # here: start-up time (see the top)
    from my_agent_core.memory.providers.base import ProviderFailed
    from my_agent_core.paths import PathRefused, check_memory_folder

    try:
        profile = resolve_user_profile(getattr(args, "user_profile", None))
    except ValueError as exc:
        print(f"my-agent mcp: {exc}", file=sys.stderr)
        return 2

    mem_dir = args.dir if args.dir is not None else memory_dir_of(Path.cwd())
    problem = dir_problem(mem_dir, given=args.dir is not None)
    if problem is not None:
        print(f"my-agent mcp: {problem}", file=sys.stderr)
        return 2
    try:
        check_memory_folder(mem_dir)
    except PathRefused as exc:
        print(f"my-agent mcp: {exc}", file=sys.stderr)
        return 2
    for name, value in (("--memory-limit", args.memory_limit), ("--user-limit", args.user_limit)):
        if value < 1:
            print(f"my-agent mcp: {name} must be a positive number of characters.", file=sys.stderr)
            return 2
    explicit = getattr(args, "provider", None)
    semantic = getattr(args, "semantic", None) is True
    if semantic:
        from my_agent_core.memory.providers.semantic import unavailable  # here: start-up time

        reason = unavailable()
        if reason is not None:
            print(f"my-agent mcp: --semantic: {reason}", file=sys.stderr)
            return 2
    manager = layer_two(mem_dir, explicit, semantic=semantic)
    if manager is None:
        return 2
    try:
        manager.check()  # a server that cannot be reached is an error now, not an empty search
    except ProviderFailed as exc:
        manager.shutdown()
        print(f"my-agent mcp: {exc}", file=sys.stderr)
        return 2
    store = open_store(
        mem_dir=mem_dir,
        user_profile=profile,
        memory_char_limit=args.memory_limit,
        user_char_limit=args.user_limit,
        author="mcp",
        on_write=manager.memory_write_listener(history=lambda: store.log(limit=MAX_RECORDS))
        if manager.active
        else None,
    )
    manager.catch_up(lambda: store.log(limit=MAX_RECORDS), wait=False)  # what a past write missed
    try:
        anyio.run(_serve, store, search_tool(manager), manager)
    finally:
        store.close()
        manager.shutdown()
    return 0


def dir_problem(mem_dir: Path, *, given: bool) -> str | None:
    """Why `--dir` cannot be the memory folder (None when it can), before anything is created:
    a variable the MCP client left unexpanded, or a project folder that does not exist (the
    memory folder itself, and its `.my_agent_core`, may be created in an existing one)."""
    text = str(mem_dir)
    found = _VARIABLE.search(text) or (re.match(r"~", text) if given else None)
    if found is not None:
        return (
            f"--dir {text!r} holds {found.group()!r}, which your MCP client passed without "
            "expanding it (Cline and Roo do not expand ${workspaceFolder}). Put the project's "
            "absolute path in the server's configuration instead; nothing was created."
        )
    path = Path(os.path.abspath(mem_dir))
    project = workspace_of(path) or path.parent
    if not project.is_dir():
        what = "does not exist" if not project.exists() else "is not a folder"
        return (
            f"the project folder {project} {what} (from --dir {text}); check the path in your MCP "
            "configuration. Nothing was created."
        )
    if path.exists() and not path.is_dir():
        return f"{path} is not a folder."
    return None


def layer_two(
    mem_dir: Path, explicit: str | None, *, semantic: bool = False
) -> MemoryManager | None:
    """The folder's `MemoryManager` (inactive when the memory provider is off or cannot start); None
    when a provider that was asked for (on the command line or by MY_AGENT_MEMORY_PROVIDER)
    cannot be used (exit 2). The default provider that fails is reported on stderr and the server
    runs without it."""
    from my_agent_core.memory.providers.base import MemoryManager  # here: start-up time
    from my_agent_core.memory.providers.registry import (
        PROVIDER_ENV,
        ProviderContext,
        build_manager,
        provider_name,
    )

    name = explicit.strip() if explicit is not None else provider_name()
    chosen = explicit is not None or bool(os.environ.get(PROVIDER_ENV, "").strip())
    source = "--provider" if explicit is not None else PROVIDER_ENV
    if name == "none":
        return MemoryManager()
    folder = workspace_of(mem_dir)
    if folder is None:
        why = (
            f"the memory provider {name!r} keeps its archive per workspace folder, and {mem_dir} "
            "is not a workspace's .my_agent_core/memory"
        )
        if chosen:
            print(f"my-agent mcp: {why} (asked for by {source}).", file=sys.stderr)
            return None
        print(f"my-agent mcp: {why}; serving without memory_search.", file=sys.stderr)
        return MemoryManager()

    def on_error(provider: str, message: str) -> None:
        print(f"my-agent mcp: {message}", file=sys.stderr)

    settings = {"semantic": True} if semantic else {}
    manager = build_manager(
        ProviderContext(folder, settings=settings), name=name, on_error=on_error
    )
    if chosen and not manager.active:
        return None
    return manager


def search_tool(manager: MemoryManager) -> Tool | None:
    """The built-in agent's `memory_search` over `manager` (scanned hits), when it is active."""
    if not manager.active:
        return None
    from my_agent_core.memory.providers.search_tool import make_memory_search_tool  # start-up

    return make_memory_search_tool(manager)


async def _serve(store: MemoryStore, search: Tool | None, manager: MemoryManager) -> None:
    from my_agent_core.mcp.pipes import stdio_streams  # here: start-up time (the SDK)
    from my_agent_core.mcp.server import build_server

    server = build_server(store, search=search, archive=manager if manager.active else None)
    async with stdio_streams() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
