"""A change as a unified diff, as git shows it: what the user approves for a workspace edit and for
a memory write alike (below both, so each imports it from below)."""

from __future__ import annotations

import difflib

__all__ = ["unified_diff"]


def unified_diff(before: str | None, after: str, relpath: str) -> str:
    """A unified diff of the change (from /dev/null for a new file), LF line ends, marking a last
    line without a newline as git does."""
    old = _diff_lines(before or "")
    new = _diff_lines(after)
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{relpath}",
        tofile=f"b/{relpath}",
        lineterm="\n",
    )
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _diff_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
        return [line + "\n" for line in lines]
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines else [])
