"""Team memory in the editor: what a merge left (`merge-pair` hints from the recorded pairs) and a
clone that git would merge as text (`driver-not-set-up` on MEMORY.md, with a button).

Whether the clone merges MEMORY.md with the driver is asked of git (`team/git_setup.driver_status`:
`rev-parse`, `check-attr`, `config --get`) on a worker thread, never on the request loop, and asked
again only when one of the files the answer came from changed (checked at most once a second, by
their stat signature); when the answer changes, the folder's open memory files are re-linted and
published. Untrusted folders are not asked (their git config is the repository's own).

The button is a code action whose command is the client's `myAgent.gitSetup` (a terminal-free
run through this server's `myAgent/gitSetup {folder?}`): the repository's config changes only when
the user clicks it. The request answers `{ok, lines}` (what `my-agent git-setup` prints) and
re-checks the folder at once, so the notice goes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from my_agent_core.layout import FILE_NAMES, memory_dir_of
from my_agent_core.memory.lint import driver_notice, merge_pair_findings

from .params import invalid, opt_str, to_params
from .publish import relint_folder

if TYPE_CHECKING:
    from my_agent_core.memory.lint import Finding, PieceLayout
    from my_agent_core.memory.merge_pairs import MergePair
    from my_agent_core.team.git_setup import DriverStatus

    from .memory_buffer import LayoutRules, MemoryBuffer
    from .server import MyAgentServer

__all__ = [
    "GIT_SETUP_COMMAND",
    "GIT_SETUP_METHOD",
    "CombinedRules",
    "FolderDriverStatus",
    "GitSetupResult",
    "TeamChecks",
    "TeamRules",
    "register",
    "team_checks",
]

logger = logging.getLogger(__name__)

#: The client command the notice's button runs (client/src/gitSetup.ts).
GIT_SETUP_COMMAND = "myAgent.gitSetup"
#: The request that command sends: `{folder?: uri}` -> `{ok, lines}`.
GIT_SETUP_METHOD = "myAgent/gitSetup"
#: The files git's answer came from are looked at no more often than this (seconds).
_RECHECK_S = 1.0
#: memory/merge_pairs.PAIRS_FILE, named here so that module loads only when a record exists.
_PAIRS_FILE = "merge-pairs.json"

Signature = tuple[tuple[int, int, int] | None, ...]


class GitSetupResult(TypedDict):
    ok: bool
    lines: list[str]


def _signature(files: tuple[Path | str, ...]) -> Signature:
    found: list[tuple[int, int, int] | None] = []
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(found)


class FolderDriverStatus:
    """One workspace folder's answer to "is the merge driver set up?", kept current off the loop."""

    def __init__(self, folder: Path, on_change: Any) -> None:
        self.folder = folder
        self._on_change = on_change
        self._lock = threading.Lock()
        self.status: DriverStatus | None = None
        self.known = False
        self._signature: Signature | None = None
        self._looked_at = float("-inf")
        self._running = False

    def notice(self) -> str | None:
        """The notice when the clone needs `my-agent git-setup` (None: it does not, or not known
        yet); starts a check when there is none or a file it came from changed."""
        self._maybe_check()
        status = self.status
        return status.notice() if status is not None and status.needs_setup else None

    def check_now(self) -> None:
        """Ask git again at once (on this thread): after `git-setup` ran."""
        self._apply(self._ask())

    def _maybe_check(self) -> None:
        now = time.monotonic()
        with self._lock:
            if self._running or now - self._looked_at < _RECHECK_S:
                return
            self._looked_at = now
            if self.known:
                files = self.status.files if self.status is not None else ()
                if not files or _signature(files) == self._signature:
                    return
            self._running = True
        threading.Thread(target=self._run, name="my-agent-driver-status", daemon=True).start()

    def _run(self) -> None:
        try:
            self._apply(self._ask())
        finally:
            with self._lock:
                self._running = False

    def _ask(self) -> tuple[DriverStatus | None, Signature | None]:
        from my_agent_core.team.git_setup import driver_status  # here: start-up time

        try:
            status = driver_status(self.folder)
        except Exception:  # a check that fails must never break lint
            logger.exception("checking the merge driver of %s failed", self.folder)
            status = None
        return status, _signature(status.files) if status is not None else None

    def _apply(self, found: tuple[DriverStatus | None, Signature | None]) -> None:
        status, signature = found
        with self._lock:
            before = self.status.needs_setup if self.status is not None else None
            self.status, self._signature, self.known = status, signature, True
            after = status.needs_setup if status is not None else None
        if before != after:
            self._on_change(self.folder)


class TeamRules:
    """The team findings of one open memory file (a `LayoutRules` beside the workspace rules)."""

    def __init__(self, mem_dir: Path, file_name: str, status: FolderDriverStatus | None) -> None:
        self.mem_dir = mem_dir
        self.file_name = file_name
        self.status = status if file_name == FILE_NAMES["memory"] else None
        self._record = (str(mem_dir / _PAIRS_FILE),)
        self._pairs: tuple[Signature, list[MergePair]] | None = None

    def lint_layout(self, layout: PieceLayout) -> list[Finding]:
        pairs = self.pairs()
        findings = merge_pair_findings(layout, pairs) if pairs else []
        if self.status is not None:
            notice = self.status.notice()
            if notice is not None:
                findings.append(driver_notice(layout, notice))
        return findings

    def pairs(self) -> list[MergePair]:
        """The recorded pairs of this file (read again only when the record changed)."""
        signature = _signature(self._record)
        if self._pairs is None or self._pairs[0] != signature:
            found: list[MergePair] = []
            if signature[0] is not None:
                from my_agent_core.memory.merge_pairs import read_pairs  # only with a record

                found = read_pairs(self.mem_dir, self.file_name)
            self._pairs = (signature, found)
        return self._pairs[1]


class CombinedRules:
    """Several `LayoutRules` as one (what `MemoryBuffer.workspace` holds)."""

    def __init__(self, *rules: LayoutRules) -> None:
        self.rules = rules

    def lint_layout(self, layout: PieceLayout) -> list[Finding]:
        found: list[Finding] = []
        for rules in self.rules:
            found += rules.lint_layout(layout)
        return found


class TeamChecks:
    """The driver status of each workspace folder with an open memory file, for one server."""

    def __init__(self, ls: MyAgentServer) -> None:
        self.ls = ls
        self._folders: dict[Path, FolderDriverStatus] = {}
        self._lock = threading.Lock()

    def rules_for(self, buf: MemoryBuffer) -> TeamRules:
        path = Path(os.path.realpath(buf.folder))
        status = self.status_of(path) if self.ls.config.is_trusted(buf.folder) else None
        file_name = FILE_NAMES.get(buf.target, "")
        return TeamRules(memory_dir_of(buf.folder), file_name, status)

    def status_of(self, folder: Path) -> FolderDriverStatus:
        key = Path(os.path.realpath(folder))
        with self._lock:
            found = self._folders.get(key)
            if found is None:
                found = self._folders[key] = FolderDriverStatus(
                    key, lambda f: self.ls.post(relint_folder, self.ls, f)
                )
        return found


_CHECKS: weakref.WeakKeyDictionary[Any, TeamChecks] = weakref.WeakKeyDictionary()


def team_checks(ls: MyAgentServer) -> TeamChecks:
    """The server's team checks (one per server, made on first use)."""
    found = _CHECKS.get(ls)
    if found is None:
        found = _CHECKS[ls] = TeamChecks(ls)
    return found


def register(ls: MyAgentServer) -> None:
    """`myAgent/gitSetup {folder?}`: run `my-agent git-setup` on a workspace folder (trusted only)."""

    @ls.feature(GIT_SETUP_METHOD)
    async def git_setup_request(ls: MyAgentServer, raw: Any) -> GitSetupResult:
        params = to_params(raw)
        folder = ls.memory.resolve(opt_str(params, "folder"))
        if not ls.config.is_trusted(folder.path):
            raise invalid(
                f"the folder {folder.path.name!r} is not trusted (Restricted Mode): its git "
                "configuration is not changed"
            )

        def run() -> GitSetupResult:
            from my_agent_core.team.git_setup import GitSetupError, git_setup  # start-up time

            try:
                report = git_setup(folder.path)
            except GitSetupError as exc:
                return {"ok": False, "lines": [f"my-agent git-setup: {exc}"]}
            team_checks(ls).status_of(folder.path).check_now()
            return {"ok": True, "lines": report.lines()}

        return await asyncio.to_thread(run)
