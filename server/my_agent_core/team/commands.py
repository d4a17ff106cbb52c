"""The command-line side of team memory: `my-agent merge-driver` and `my-agent git-setup`.

Only argparse (and the terminal's text, which every command loads) is imported at start-up; each
handler imports what it runs, so building the parser stays cheap for every other command. What they print names paths of a cloned repository and the
text of its entries: it goes through `terminal_text` like every other command's output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from my_agent_core.terminal_text import as_visible, visible

__all__ = ["add_commands"]


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `merge-driver` and `git-setup` on the `my-agent` subcommand parser."""
    # A description is %-formatted only when it holds "%(prog)": git's placeholders stay single.
    driver = sub.add_parser(
        "merge-driver",
        help="git merge driver: merge MEMORY.md entry by entry into OURS",
        description="Merge BASE and THEIRS into OURS entry by entry (git runs it as: "
        "my-agent merge-driver %O %A %B %P; `my-agent git-setup` configures that). "
        "Exit 0 when merged; 1 when a version cannot be read (git then reports a conflict).",
    )
    # argparse %-formats help strings: git's placeholders are written %% there.
    driver.add_argument("base", metavar="BASE", help="the common ancestor's version (git's %%O)")
    driver.add_argument(
        "ours", metavar="OURS", help="our version, where the merge is written (git's %%A)"
    )
    driver.add_argument("theirs", metavar="THEIRS", help="their version (git's %%B)")
    driver.add_argument(
        "path", metavar="PATH", nargs="?", help="the merged path, for messages (git's %%P)"
    )
    driver.set_defaults(handler=_merge_driver)

    setup = sub.add_parser(
        "git-setup",
        help="share MEMORY.md through git with the entry-wise merge; keep private files out",
        description="Set up the repository holding FOLDER for team memory: the entry-wise merge "
        "driver for MEMORY.md, and private files (USER.md, sessions, the archive) kept out of git.",
    )
    setup.add_argument(
        "folder",
        metavar="FOLDER",
        nargs="?",
        type=Path,
        default=None,
        help="a folder of the repository (default: the current one)",
    )
    setup.add_argument(
        "--untrack",
        action="store_true",
        help="also stop tracking private files that are already committed (git rm --cached)",
    )
    setup.set_defaults(handler=_git_setup)


def _merge_driver(args: argparse.Namespace) -> int:
    from my_agent_core.team.driver import run_driver  # here: start-up time (every my-agent parser)

    return run_driver(args.base, args.ours, args.theirs, args.path, err=as_visible(sys.stderr))


def _git_setup(args: argparse.Namespace) -> int:
    from my_agent_core.team.git_setup import GitSetupError, git_setup  # here: start-up time

    try:
        report = git_setup(
            args.folder if args.folder is not None else Path.cwd(), untrack=args.untrack
        )
    except GitSetupError as exc:
        print(visible(f"my-agent: git-setup: {exc}"), file=sys.stderr)
        return 2
    print(visible("\n".join(report.lines())))
    return 0
