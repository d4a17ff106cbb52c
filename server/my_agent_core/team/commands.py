"""The command-line side of team memory: `my-agent merge-driver` and `my-agent git-setup`.

Only argparse is imported at start-up; each handler imports what it runs, so building the parser
stays cheap for every other command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_commands"]


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `merge-driver` and `git-setup` on the `my-agent` subcommand parser."""
    driver = sub.add_parser(
        "merge-driver",
        help="git merge driver: merge MEMORY.md entry by entry into OURS",
        description="Merge BASE and THEIRS into OURS entry by entry (git: %%O %%A %%B %%P). "
        "Exit 0 when merged; 1 when a version cannot be read (git then reports a conflict).",
    )
    driver.add_argument("base", metavar="BASE")
    driver.add_argument("ours", metavar="OURS")
    driver.add_argument("theirs", metavar="THEIRS")
    driver.add_argument("path", metavar="PATH", nargs="?", help="the merged path, for messages")
    driver.set_defaults(handler=_merge_driver)

    setup = sub.add_parser(
        "git-setup",
        help="share MEMORY.md through git with the entry-wise merge; keep private files out",
    )
    setup.add_argument("folder", metavar="FOLDER", nargs="?", type=Path, default=None)
    setup.add_argument(
        "--untrack",
        action="store_true",
        help="also stop tracking private files that are already committed (git rm --cached)",
    )
    setup.set_defaults(handler=_git_setup)


def _merge_driver(args: argparse.Namespace) -> int:
    from my_agent_core.team.driver import run_driver

    return run_driver(args.base, args.ours, args.theirs, args.path)


def _git_setup(args: argparse.Namespace) -> int:
    from my_agent_core.team.git_setup import GitSetupError, git_setup

    try:
        report = git_setup(
            args.folder if args.folder is not None else Path.cwd(), untrack=args.untrack
        )
    except GitSetupError as exc:
        print(f"my-agent git-setup: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 0
