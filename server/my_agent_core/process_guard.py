"""Keep the processes that hold the model's API key from being read by the commands they run.

The server (and `my-agent chat`) gets OPENAI_API_KEY in its environment, and runs commands the user
approved, some of them code from the repository (an allowed `pytest` runs a cloned conftest.py).
Those commands run as the same user, so they could read the key from `/proc/<server>/environ` or the
server's memory. A process marked not dumpable (`prctl(PR_SET_DUMPABLE, 0)`) has its `/proc` files
owned by root and cannot be traced by other processes of its user. The mark is per process: a
command the server starts is dumpable again once it execs, so nothing else changes. Linux only; a
no-op elsewhere.
"""

from __future__ import annotations

import ctypes
import logging
import sys

__all__ = ["is_protected", "protect_process"]

logger = logging.getLogger(__name__)

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


def _prctl(option: int, arg: int = 0) -> int | None:
    """prctl(2), or None where there is none (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # libc's, already loaded in this process
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return int(prctl(option, arg, 0, 0, 0))


def protect_process() -> bool:
    """Mark this process not dumpable; True when it is now protected."""
    result = _prctl(_PR_SET_DUMPABLE, 0)
    if result is None:
        return False
    if result != 0:
        logger.warning("could not protect the process from same-user reads (prctl failed)")
        return False
    return True


def is_protected() -> bool:
    """Whether this process is marked not dumpable."""
    return _prctl(_PR_GET_DUMPABLE) == 0
