"""Finding and running ripgrep: the fast path of search_text and list_files.

`rg` comes from the machine (Debian's `ripgrep`), from a configured path, or from the editor (VS
Code ships one under `node_modules/@vscode/ripgrep/bin/`). It is always run with `--no-config`, so
neither the environment nor a cloned repository can add flags (such as a preprocessor that runs a
program), and with the flags that make it see the same files as the pure-Python walker.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

__all__ = ["BASE_FLAGS", "editor_ripgrep_paths", "find_ripgrep"]

BASE_FLAGS: tuple[str, ...] = (
    "--no-config",
    "--hidden",
    "--no-require-git",
    "--no-ignore-global",
    "--no-messages",
)

_BUNDLED = (
    ("node_modules", "@vscode", "ripgrep", "bin", "rg"),
    ("node_modules.asar.unpacked", "@vscode", "ripgrep", "bin", "rg"),
)


def editor_ripgrep_paths(app_root: str | os.PathLike[str]) -> list[Path]:
    """Where VS Code (`vscode.env.appRoot`) or code-server (`lib/vscode`) keeps its ripgrep."""
    return [Path(app_root).joinpath(*parts) for parts in _BUNDLED]


@lru_cache(maxsize=16)
def _works(path: str) -> bool:
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.startswith(b"ripgrep")


def find_ripgrep(
    configured: str | None = None, *, app_roots: Sequence[str | os.PathLike[str]] = ()
) -> str | None:
    """The first working `rg`: the configured path, then PATH, then the editors' bundled copies."""
    candidates: list[str] = []
    if configured:
        candidates.append(os.path.expanduser(configured))
    found = shutil.which("rg")
    if found:
        candidates.append(found)
    for app_root in app_roots:
        candidates.extend(str(path) for path in editor_ripgrep_paths(app_root))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and _works(candidate):
            return candidate
    return None
