"""`my-agent git-setup [FOLDER]`: share MEMORY.md through the repository, keep the rest private.

Three things, each idempotent and reported: `.gitattributes` routes MEMORY.md to the entry-wise merge
driver; the repository's config defines that driver with a command that works without `my-agent` on
git's PATH; `.my_agent_core/.gitignore` keeps out everything but MEMORY.md: what belongs to one person
on one machine (USER.md, the history journal, backups, the lock, temp files, chat sessions, the
archive; the first write of any front end already adds these lines, see `private.py`). Files of that
kind that are already committed are untracked only when asked (`--untrack`), since that is a change the
whole team receives.

The git config is per clone, never shared by a push: each teammate runs this once. Without it git
merges MEMORY.md as plain text, which still works but may conflict.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from my_agent_core.layout import FILE_NAMES, MEMORY_SUBDIR, memory_dir_of
from my_agent_core.paths import NotText, PathRefused, check_memory_folder, read_regular, read_text
from my_agent_core.private import PRIVATE_PATTERNS, ensure_ignored
from my_agent_core.safe_write import make_folders, write_atomic

__all__ = [
    "ATTRIBUTE_LINE",
    "DRIVER_NAME",
    "MEMORY_PATH",
    "PRIVATE_PATTERNS",
    "DriverStatus",
    "GitSetupError",
    "SetupReport",
    "driver_command",
    "driver_status",
    "git_setup",
]

DRIVER_NAME = "my-agent-memory"
MEMORY_PATH = "/".join((*MEMORY_SUBDIR, FILE_NAMES["memory"]))
ATTRIBUTE_LINE = f"{MEMORY_PATH} merge={DRIVER_NAME}"
_DRIVER_TITLE = "my-agent: entry-wise merge of MEMORY.md"
_MAX_ATTRIBUTES_BYTES = 1 << 20
_GIT_TIMEOUT_S = 60


class GitSetupError(Exception):
    """Setup could not be done; the message says why and what to do."""


@dataclass(slots=True)
class SetupReport:
    """What git-setup did (`done`) and what the person should know or do next (`notes`)."""

    folder: Path
    repository: Path
    done: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        lines = [f"my-agent git-setup: {self.folder} (repository {self.repository})"]
        lines += [f"  {line}" for line in self.done]
        lines += [f"  note: {line}" for line in self.notes]
        return lines


def driver_command(python: str | None = None) -> str:
    """The `merge.my-agent-memory.driver` command: this interpreter by absolute path, so git finds
    the driver whatever its PATH, in isolated mode where it can import the package that way.

    Isolated (`-I`, or at least `-P` on Python 3.11+) matters: git runs the driver in the work tree,
    and a plain `python -m` would import a `my_agent_core/` folder a cloned repository planted there.
    """
    exe = python or sys.executable
    flags = _isolation_flag(exe)
    return f"{shlex.quote(exe)}{flags} -m my_agent_core merge-driver %O %A %B %P"


def _isolation_flag(exe: str) -> str:
    for flag in ("-I", "-P"):
        try:
            probe = subprocess.run(
                [exe, flag, "-c", "import my_agent_core.team.driver"],
                capture_output=True,
                timeout=_GIT_TIMEOUT_S,
                check=False,
                cwd=os.path.abspath(os.sep),
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return f" {flag}"
    return ""


def git_setup(
    folder: Path | str, *, untrack: bool = False, command: str | None = None
) -> SetupReport:
    """Set up the repository holding `folder` for team memory (see the module docstring).

    `command`: the driver command to register (default: `driver_command()`).
    Raises GitSetupError (not a repository, git missing, a linked `.my_agent_core`, ...).
    """
    root = Path(folder).absolute()
    if not root.is_dir():
        raise GitSetupError(f"{root} is not a folder.")
    repository = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    base = root / MEMORY_SUBDIR[0]
    try:
        check_memory_folder(memory_dir_of(root))
    except PathRefused as exc:
        raise GitSetupError(str(exc)) from None
    if base.is_symlink() or (base.exists() and not base.is_dir()):
        raise GitSetupError(
            f"{base} is a link or not a folder; my-agent keeps memory only in a real folder inside "
            "the workspace. Move it away and retry."
        )
    report = SetupReport(root, repository)
    _set_attribute(root, report)
    _set_driver(root, command or driver_command(), report)
    _ignore_private(base, report)
    _untrack_private(root, untrack, report)
    return report


# ---------------------------------------------------------------------------------- the check


@dataclass(frozen=True, slots=True)
class DriverStatus:
    """Whether the clone holding a folder merges MEMORY.md with the driver.

    `routed`: git resolves the `merge` attribute of MEMORY.md to `my-agent-memory` (a committed
    `.gitattributes` says so); `configured`: git's config (this clone's, or the user's global one)
    defines `merge.my-agent-memory.driver`. Routed but not configured is the clone that git merges
    as text, leaving conflict markers: `needs_setup`. `files` are the files the answer was read
    from (the attributes file, the config files), so a caller can ask again when one changes.
    """

    repository: Path
    routed: bool
    configured: bool
    files: tuple[Path, ...] = ()

    @property
    def needs_setup(self) -> bool:
        return self.routed and not self.configured

    def notice(self) -> str:
        """What lint and the editor say about a clone that needs the setup."""
        return (
            f".gitattributes sends {MEMORY_PATH} to the `{DRIVER_NAME}` merge driver, but this "
            "clone has not set it up (its git config has no merge.my-agent-memory.driver), so git "
            "merges MEMORY.md as text and can leave conflict markers in it. Run `my-agent "
            "git-setup` once in this clone (it only adds the driver to .git/config; nothing is "
            "shared)."
        )


def driver_status(folder: Path | str, *, timeout_s: float = 10.0) -> DriverStatus | None:
    """Ask git whether the folder's MEMORY.md is routed to the driver and the driver is defined;
    None when the folder is not in a git work tree (or git is missing or refuses it). Reads only:
    `rev-parse`, `check-attr` and `config --get`, none of which runs a hook or changes anything."""
    root = Path(folder).absolute()
    if not root.is_dir():
        return None
    try:
        top = _git(root, "rev-parse", "--show-toplevel", "--git-common-dir", timeout_s=timeout_s)
        lines = top.splitlines()
        repository = Path(lines[0])
        common = Path(lines[1]) if len(lines) > 1 else repository / ".git"
        if not common.is_absolute():
            common = root / common
        routed = _merge_attribute(root, timeout_s=timeout_s) == DRIVER_NAME
        configured = bool(
            _git(
                root,
                "config",
                "--get",
                f"merge.{DRIVER_NAME}.driver",
                ok_codes=(0, 1),
                timeout_s=timeout_s,
            ).strip()
        )
    except (GitSetupError, IndexError):
        return None
    home = Path.home()
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    files = (
        root / ".gitattributes",
        repository / ".gitattributes",
        common / "config",
        common / "info" / "attributes",
        home / ".gitconfig",
        Path(xdg) / "git" / "config",
        *([Path(os.environ["GIT_CONFIG_GLOBAL"])] if os.environ.get("GIT_CONFIG_GLOBAL") else []),
    )
    return DriverStatus(repository, routed, configured, tuple(dict.fromkeys(files)))


# ---------------------------------------------------------------------------------- .gitattributes


def _set_attribute(root: Path, report: SetupReport) -> None:
    if _merge_attribute(root) == DRIVER_NAME:
        report.done.append(f".gitattributes: {MEMORY_PATH} already uses merge={DRIVER_NAME}")
        return
    path = root / ".gitattributes"
    if path.is_symlink():
        raise GitSetupError(
            f"{path} is a symbolic link; git ignores such a file and my-agent does not write "
            "through it. Replace it with a plain file and retry."
        )
    try:
        text = read_text(path, max_bytes=_MAX_ATTRIBUTES_BYTES, name=str(path)) or ""
    except NotText:
        raise GitSetupError(f"{path} is not valid UTF-8; fix it, then retry.") from None
    except PathRefused as exc:
        raise GitSetupError(str(exc)) from None
    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    _replace_file(path, text + ATTRIBUTE_LINE + newline)
    report.done.append(f'.gitattributes: added "{ATTRIBUTE_LINE}"')
    effective = _merge_attribute(root)
    if effective != DRIVER_NAME:
        report.notes.append(
            f"git still resolves the merge attribute of {MEMORY_PATH} to {effective!r}: another "
            ".gitattributes (deeper in the tree, or .git/info/attributes) overrides it; remove "
            "that line so the memory driver is used."
        )


def _merge_attribute(root: Path, *, timeout_s: float = _GIT_TIMEOUT_S) -> str:
    """What git says the `merge` attribute of MEMORY.md is (`unspecified`, `set`, a driver name)."""
    out = _git(root, "check-attr", "-z", "merge", "--", MEMORY_PATH, timeout_s=timeout_s)
    parts = out.split("\0")
    return parts[2] if len(parts) > 2 else "unspecified"


def _replace_file(path: Path, text: str) -> None:
    """Atomic rewrite through the one safe writer, keeping the file's mode."""
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:
        raise GitSetupError(f"cannot write {path}: {exc.strerror or exc}.") from None


# ---------------------------------------------------------------------------------- git config


def _set_driver(root: Path, command: str, report: SetupReport) -> None:
    # The command first: git refuses to merge at all with a named driver that has no command.
    for key, value in (("driver", command), ("name", _DRIVER_TITLE)):
        name = f"merge.{DRIVER_NAME}.{key}"
        current = _git(root, "config", "--local", "--get", name, ok_codes=(0, 1)).rstrip("\n")
        if current == value:
            if key == "driver":
                report.done.append(f"git config: {name} already set: {value}")
            continue
        _git(root, "config", "--local", name, value)
        if key == "driver":
            was = f" (was: {current})" if current else ""
            report.done.append(f"git config: {name} = {value}{was}")
    report.notes.append(
        "the driver lives in this clone's .git/config, which a push does not share: each teammate "
        "runs `my-agent git-setup` once (without it git merges MEMORY.md as plain text)."
    )


# ---------------------------------------------------------------------------------- private files


def _ignore_private(base: Path, report: SetupReport) -> None:
    gitignore = base / ".gitignore"
    if gitignore.is_symlink():
        raise GitSetupError(
            f"{gitignore} is a symbolic link; replace it with a plain file and retry."
        )
    try:
        make_folders(base.parent, base.name)
    except (OSError, PathRefused) as exc:
        raise GitSetupError(f"cannot create {base}: {exc}") from None
    before = _lines(gitignore)
    problem = ensure_ignored(base, PRIVATE_PATTERNS)
    if problem is not None:
        raise GitSetupError(problem)
    added = [p for p in PRIVATE_PATTERNS if p not in before]
    rel = f"{MEMORY_SUBDIR[0]}/.gitignore"
    if added:
        report.done.append(f"{rel}: now keeps out everything but {MEMORY_PATH}")
    else:
        report.done.append(f"{rel}: private files already kept out")
    report.notes.append(
        f"commit .gitattributes, {rel} and {MEMORY_PATH}; USER.md, the history, backups, "
        "sessions and the archive stay on this machine."
    )


def _lines(path: Path) -> set[str]:
    try:
        data = read_regular(path, max_bytes=_MAX_ATTRIBUTES_BYTES, name=str(path))
    except PathRefused as exc:
        raise GitSetupError(str(exc)) from None
    return {line.strip() for line in (data or b"").decode("utf-8", "replace").splitlines()}


def _untrack_private(root: Path, untrack: bool, report: SetupReport) -> None:
    out = _git(
        root,
        "ls-files",
        "-z",
        "--cached",
        "--ignored",
        "--exclude-standard",
        "--",
        MEMORY_SUBDIR[0],
    )
    tracked = [p for p in out.split("\0") if p]
    if not tracked:
        return
    listed = ", ".join(tracked)
    if not untrack:
        report.notes.append(
            f"already committed, though private: {listed}. Run `my-agent git-setup --untrack` to "
            "stop tracking them (they stay on disk); they remain in the history."
        )
        return
    _git(root, "rm", "--cached", "-q", "--", *tracked, literal=True)
    report.done.append(
        f"untracked (kept on disk): {listed}; commit the removal. They remain in the history."
    )


# ---------------------------------------------------------------------------------- running git


def _git(
    cwd: Path,
    *args: str,
    ok_codes: tuple[int, ...] = (0,),
    literal: bool = False,
    timeout_s: float = _GIT_TIMEOUT_S,
) -> str:
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    if literal:
        env["GIT_LITERAL_PATHSPECS"] = "1"
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            timeout=timeout_s,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitSetupError("git is not installed (or not on PATH).") from None
    except subprocess.TimeoutExpired:
        raise GitSetupError(f"`git {args[0]}` did not finish in {timeout_s:g} s.") from None
    if done.returncode not in ok_codes:
        detail = done.stderr.strip() or f"exit {done.returncode}"
        if args[0] == "rev-parse":
            raise GitSetupError(
                f"{cwd} is not inside a git work tree ({detail}); run `git init` first."
            )
        raise GitSetupError(f"`git {' '.join(args[:3])}` failed: {detail}")
    return done.stdout
