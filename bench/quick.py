"""`--quick` for every bench: the same code path at small sizes, in seconds.

A bench nothing runs rots (one crashed for weeks before anyone noticed), so tests/test_benches.py runs
each bench with `--quick` and reads its figures. Quick sizes replace only the options left at their
defaults, so `--quick --rounds 50` still means 50 rounds. Not a bench itself: the benches import it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

__all__ = ["QUICK_NOTE", "add_quick", "parse"]

QUICK_NOTE = (
    "quick run: small sizes, the same code path (figures are for a smoke test, not a report)"
)


def add_quick(parser: argparse.ArgumentParser) -> None:
    """Add the `--quick` flag to a bench's parser."""
    parser.add_argument(
        "--quick", action="store_true", help="seconds: small sizes, the same code path"
    )


def parse(
    parser: argparse.ArgumentParser,
    sizes: Mapping[str, object],
    argv: Sequence[str] | None = None,
) -> argparse.Namespace:
    """Parse the command line (with `--quick` added); under `--quick`, every option of `sizes`
    still at its default takes the quick value, and the run says it is a quick one."""
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in sizes.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
        print(QUICK_NOTE)
    return args
