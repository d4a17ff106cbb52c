"""The workspace index: which files a folder has, what its task files define, what it renamed.

The lint rules that keep memory true ask it questions on every keystroke ("does `scripts/test.sh`
exist?", "does the Makefile define `test`?"), so it is built ONCE (one walk of the files the
workspace tools see, `.gitignore` honoured) and then kept up to date by file events: created,
changed, deleted, renamed. The language server feeds it `workspace/didChangeWatchedFiles`; the CLI
builds it once. It never walks the folder again per question, and a burst of events (a branch
switch) or an edited ignore file just rebuilds it.

It remembers the renames it observed (an explicit rename event, or a delete and a create of the
same name in one batch), so a stale path in memory can be fixed to the new one.

Memory: a set of relative paths plus counts per folder and per base name (~6 MB for 20,000 files).
Thread-safe: the language server applies events on one thread and lints on another.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from my_agent_core.coding_tools.ignore import IgnoreRules, WalkCancelled, level_of, walk_files
from my_agent_core.coding_tools.ripgrep import BASE_FLAGS
from my_agent_core.context.events import FileEvent, IndexChange
from my_agent_core.context.files import CONTEXT_FILE_NAMES, ContextText, read_context_texts
from my_agent_core.context.manifests import (
    JUST_NAMES,
    MAKE_NAMES,
    NPM_NAME,
    TaskNames,
    just_recipes,
    make_targets,
    npm_scripts,
)
from my_agent_core.paths import PathRefused, read_regular, resolve_inside

__all__ = [
    "MANIFEST_MAX_BYTES",
    "REBUILD_AT",
    "FileEvent",
    "IndexChange",
    "WorkspaceIndex",
]

#: A batch with more events than this rebuilds the index (cheaper than thousands of checks).
REBUILD_AT = 500
#: Bytes read of a package.json, Makefile or justfile.
MANIFEST_MAX_BYTES = 1024 * 1024
_MAX_RENAMES = 1000
_RULES_MEMO = 512
#: No path longer than this can exist (Linux's PATH_MAX): such a "path" in a note is not asked about
#: the disk, and a walk down its folders (each with its ignore files) is never started.
PATH_MAX = 4096
_IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore"})
_WATCHED = frozenset({NPM_NAME, *MAKE_NAMES, *JUST_NAMES, *CONTEXT_FILE_NAMES})
_BUILD_TIMEOUT_S = 120.0


class WorkspaceIndex:
    """The files of one folder that the workspace tools see, kept current by events."""

    def __init__(self, folder: Path | str, *, ripgrep: str | None = None) -> None:
        self.folder = Path(os.path.realpath(folder))
        self._root = str(self.folder)
        self._ripgrep = ripgrep
        self._lock = threading.RLock()
        self._files: set[str] = set()
        self._dirs: dict[str, int] = {}  # folder -> number of indexed files below it
        self._basenames: dict[str, list[str]] = {}  # file name -> the paths that end in it
        self._top: set[str] = set()  # every name at the root, ignored ones too
        self._renames: OrderedDict[str, str] = OrderedDict()
        self._rules: dict[str, IgnoreRules] = {}
        self._tasks: dict[str, TaskNames | None] = {}
        self._context: tuple[ContextText, ...] = ()
        #: Bumped by every change that can change a lint result.
        self.generation = 0
        #: Whether the last walk ran to its end (False: cancelled or timed out; paths are partial).
        self.complete = True

    # ------------------------------------------------------------------ building

    @classmethod
    def build(cls, folder: Path | str, *, ripgrep: str | None = None) -> WorkspaceIndex:
        """Walk the folder once (ripgrep's `--files` when given, else the tools' own walker)."""
        index = cls(folder, ripgrep=ripgrep)
        index.rebuild()
        return index

    def rebuild(self) -> None:
        """Walk the whole folder again (after a burst of events or an ignore file changed)."""
        paths, complete = self._walk()
        with self._lock:
            self._files = set()
            self._dirs = {}
            self._basenames = {}
            for rel in paths:
                self._add(rel)
            self._rules = {}
            self._top = self._scan_top()
            self.complete = complete
            self._reload_tasks()
            self._reload_context()
            self.generation += 1

    def _walk(self) -> tuple[list[str], bool]:
        if not os.path.isdir(self._root):
            return [], True
        if self._ripgrep is not None:
            found = self._walk_ripgrep(self._ripgrep)
            if found is not None:
                return found, True
        deadline = time.monotonic() + _BUILD_TIMEOUT_S
        paths: list[str] = []
        try:
            paths.extend(walk_files(self.folder, self.folder, deadline=deadline))
        except WalkCancelled:
            return paths, False
        return paths, True

    def _walk_ripgrep(self, rg: str) -> list[str] | None:
        """`rg --files` with the tools' flags (the same files as the walker); None on failure."""
        try:
            done = subprocess.run(
                [rg, "--files", "--null", *BASE_FLAGS, "--glob", "!.git"],
                cwd=self._root,
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=_BUILD_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode not in (0, 1):  # 1: no files at all
            return None
        out = done.stdout.decode("utf-8", "surrogateescape")
        # Without --follow, rg skips symbolic links, as the walker does.
        return [p[2:] if p.startswith("./") else p for p in out.split("\0") if p]

    def _scan_top(self) -> set[str]:
        try:
            with os.scandir(self._root) as it:
                return {entry.name for entry in it if entry.name != ".git"}
        except OSError:
            return set()

    # ------------------------------------------------------------------ questions

    def __len__(self) -> int:
        return len(self._files)

    def has_file(self, rel: str) -> bool:
        """A visible file at `rel` (relative, `/`-separated)."""
        return rel in self._files

    def has_dir(self, rel: str) -> bool:
        """A folder with visible files below it."""
        return self._dirs.get(rel.rstrip("/"), 0) > 0

    def has_basename(self, name: str) -> bool:
        """Some visible file, anywhere, is called `name`."""
        return name in self._basenames

    def has_top_level(self, name: str) -> bool:
        """An entry of that name at the folder's root, ignored or not (`node_modules`, `dist`)."""
        return name in self._top

    def exists(self, rel: str) -> bool:
        """`rel` is a visible file or folder, or exists on disk inside the folder (an ignored file
        such as `.venv/bin/python`, itself a link or not); a path whose folder leads out of the
        folder never exists here."""
        if self.has_file(rel) or self.has_dir(rel):
            return True
        if len(rel) > PATH_MAX or not os.path.lexists(os.path.join(self._root, rel)):
            return False  # one lstat for the usual answer: missing
        parent, _, name = rel.rstrip("/").rpartition("/")
        try:
            real_parent = resolve_inside(self.folder, parent) if parent else self.folder
        except PathRefused:
            return False
        return os.path.lexists(os.path.join(real_parent, name))

    def ends_a_path(self, rel: str) -> bool:
        """Some visible file's path ends with `/rel` (`agent/core.py` for
        `server/pkg/agent/core.py`): a path written relative to a package or a sub-project."""
        name = rel.rsplit("/", 1)[-1]
        suffix = "/" + rel
        return any(path.endswith(suffix) for path in self._basenames.get(name, ()))

    def ignored(self, rel: str) -> bool:
        """The ignore rules exclude `rel` (or a folder above it): a build output, a local file,
        something a clean checkout does not have."""
        path = rel.rstrip("/")
        if len(path) > PATH_MAX:
            return False
        with self._lock:  # a name in a note may be a file or a folder (`dist/` ignores a folder)
            return not self._visible(path, is_dir=True) or (
                not rel.endswith("/") and not self._visible(path, is_dir=False)
            )

    def renamed_to(self, rel: str) -> str | None:
        """The path `rel` has now when a rename of it (or of a folder above it) was observed and
        the new path exists; else None."""
        with self._lock:
            probe = rel.rstrip("/")
            if not self._renames or len(probe) > PATH_MAX:
                return None
            new = self._renames.get(probe)
            if new is None:
                parts = probe.split("/")
                for depth in range(len(parts) - 1, 0, -1):
                    head = "/".join(parts[:depth])
                    moved = self._renames.get(head)
                    if moved is not None:
                        new = moved + "/" + "/".join(parts[depth:])
                        break
            if new is None or not (self.has_file(new) or self.has_dir(new)):
                return None
            return new

    def renamed_name(self, name: str) -> str | None:
        """For a bare file name: what a file of that name was renamed to (its new name when it
        stayed in its folder, else its new path), when such a rename was observed; else None."""
        with self._lock:
            for old, new in reversed(self._renames.items()):
                if old.rsplit("/", 1)[-1] == name and self.has_file(new):
                    return new.rsplit("/", 1)[-1] if _parent(old) == _parent(new) else new
        return None

    def tasks(self, tool: Literal["npm", "make", "just"]) -> TaskNames | None:
        """What the root's package.json / Makefile / justfile defines (None: there is no such
        file, so a command naming it is not checked)."""
        return self._tasks.get(tool)

    @property
    def context_texts(self) -> tuple[ContextText, ...]:
        """The folder's context files as they are now (for the in-context-file rule)."""
        return self._context

    # ------------------------------------------------------------------ events

    def apply(self, events: Iterable[FileEvent]) -> IndexChange:
        """Bring the index up to date with a batch of events; says what changed."""
        batch = [(event, self._relative(event.path)) for event in events]
        if len(batch) > REBUILD_AT or any(rel and _is_ignore_file(rel) for _e, rel in batch):
            self.rebuild()  # walks outside the lock: lints go on meanwhile
            with self._lock:
                for event, rel in batch:
                    old = self._relative(event.old) if event.old is not None else None
                    if event.kind == "renamed" and rel is not None and old is not None:
                        self._remember_rename(old, rel)
            return IndexChange(rebuilt=True)
        with self._lock:
            deleted: list[str] = []
            created: list[str] = []
            files = manifests = context = False
            for event, rel in batch:
                if rel is None:
                    continue
                if event.kind == "renamed" and event.old is not None:
                    old = self._relative(event.old)
                    if old is not None:
                        files |= self._remove(old)
                        files |= self._create(rel)
                        self._remember_rename(old, rel)
                elif event.kind == "deleted":
                    if self._remove(rel):
                        files = True
                        deleted.append(rel)
                elif (event.kind == "created" or not self.has_file(rel)) and self._create(rel):
                    files = True
                    created.append(rel)
                manifests |= rel in _TASK_FILES
                context |= rel in CONTEXT_FILE_NAMES
            self._infer_renames(deleted, created)
            if manifests:
                self._reload_tasks()
            if context:
                self._reload_context()
            if files:
                self._top = self._scan_top()
            change = IndexChange(files, manifests, context)
            if change.any:
                self.generation += 1
            return change

    def _relative(self, path: str) -> str | None:
        """`path` relative to the folder, `/`-separated; None outside it or inside `.git`."""
        raw = os.path.normpath(path if os.path.isabs(path) else os.path.join(self._root, path))
        if raw != self._root and not raw.startswith(self._root + os.sep):
            real = os.path.realpath(raw)  # an event may name the folder through a link
            if real != self._root and not real.startswith(self._root + os.sep):
                return None
            raw = real
        rel = raw[len(self._root) + 1 :].replace(os.sep, "/")
        if not rel or rel == ".git" or rel.startswith(".git/"):
            return None
        return rel

    def _add(self, rel: str) -> None:
        if rel in self._files:
            return
        self._files.add(rel)
        name = rel.rsplit("/", 1)[-1]
        self._basenames.setdefault(name, []).append(rel)
        head = rel
        while "/" in head:
            head = head.rsplit("/", 1)[0]
            self._dirs[head] = self._dirs.get(head, 0) + 1

    def _discard(self, rel: str) -> None:
        if rel not in self._files:
            return
        self._files.discard(rel)
        name = rel.rsplit("/", 1)[-1]
        paths = self._basenames.get(name)
        if paths is not None:
            paths.remove(rel)
            if not paths:
                del self._basenames[name]
        head = rel
        while "/" in head:
            head = head.rsplit("/", 1)[0]
            _decrement(self._dirs, head)

    def _remove(self, rel: str) -> bool:
        """Drop a file, or every file below a folder; True when something was indexed there."""
        if rel in self._files:
            self._discard(rel)
            return True
        if not self.has_dir(rel):
            return False
        prefix = rel + "/"
        for path in [p for p in self._files if p.startswith(prefix)]:
            self._discard(path)
        return True

    def _create(self, rel: str) -> bool:
        """Index a new file, or the visible files of a new folder; True when something was added."""
        path = os.path.join(self._root, rel)
        if os.path.islink(path):
            return False  # the tools never follow links, nor does the index
        if os.path.isdir(path):
            if not self._visible(rel, is_dir=True):
                return False
            before = len(self._files)
            try:
                for found in walk_files(self.folder, Path(path), deadline=time.monotonic() + 30):
                    self._add(found)
            except WalkCancelled:
                self.complete = False
            return len(self._files) > before
        if not os.path.isfile(path) or rel in self._files or not self._visible(rel, is_dir=False):
            return False
        self._add(rel)
        return True

    def _visible(self, rel: str, *, is_dir: bool) -> bool:
        """Whether the walker would list `rel`: neither it nor a folder above it is ignored. The
        rules are carried down one folder at a time (each folder's ignore files read once and
        remembered); below a folder that does not exist there are no more ignore files to read."""
        parts = rel.split("/")
        rules = self._root_rules()
        prefix = ""
        path = self._root
        on_disk = True
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            path = f"{path}/{part}"
            if rules.ignored(path, is_dir or not last):
                return False
            if last:
                break
            prefix = f"{prefix}/{part}" if prefix else part
            if on_disk:
                rules, on_disk = self._rules_below(rules, prefix, path)
        return True

    def _root_rules(self) -> IgnoreRules:
        """The ignore rules in force at the folder's root (its own and the folders' above)."""
        rules = self._rules.get("")
        if rules is None:
            rules = self._rules[""] = IgnoreRules.above(self.folder)
        return rules

    def _rules_below(self, above: IgnoreRules, prefix: str, path: str) -> tuple[IgnoreRules, bool]:
        """The rules for the entries of folder `prefix` (at `path`), from those above it; False
        when that folder is not a real folder of the workspace (nothing below has ignore files)."""
        rules = self._rules.get(prefix)
        if rules is not None:
            return rules, True
        if os.path.islink(path) or not os.path.isdir(path):
            return above, False
        rules = above.below(level_of(path))
        if len(self._rules) >= _RULES_MEMO:
            self._rules.clear()
        self._rules[prefix] = rules
        return rules, True

    def _remember_rename(self, old: str, new: str) -> None:
        if old == new:
            return
        for key, value in list(self._renames.items()):  # a -> old becomes a -> new
            if value == old:
                self._renames[key] = new
        self._renames.pop(new, None)
        self._renames[old] = new
        self._renames.move_to_end(old)
        while len(self._renames) > _MAX_RENAMES:
            self._renames.popitem(last=False)

    def _infer_renames(self, deleted: list[str], created: list[str]) -> None:
        """A delete and a create in one batch are a rename when they pair up unambiguously: the
        same name in another folder (a move), or the only pair, in one folder with one extension."""
        if not deleted or not created:
            return
        by_name: dict[str, list[str]] = {}
        for new in created:
            by_name.setdefault(new.rsplit("/", 1)[-1], []).append(new)
        unpaired_old: list[str] = []
        taken: set[str] = set()
        for old in deleted:
            same = by_name.get(old.rsplit("/", 1)[-1], [])
            if len(same) == 1 and same[0] not in taken:
                self._remember_rename(old, same[0])
                taken.add(same[0])
            else:
                unpaired_old.append(old)
        unpaired_new = [c for c in created if c not in taken]
        if len(unpaired_old) == 1 and len(unpaired_new) == 1:
            old, new = unpaired_old[0], unpaired_new[0]
            if _parent(old) == _parent(new) and _extension(old) == _extension(new):
                self._remember_rename(old, new)

    # ------------------------------------------------------------------ task files and context

    def _reload_tasks(self) -> None:
        self._tasks = {
            "npm": self._read_tasks((NPM_NAME,), npm_scripts),
            "make": self._read_make(),
            "just": self._read_tasks(JUST_NAMES, just_recipes),
        }

    def _read_tasks(
        self, names: tuple[str, ...], reader: Callable[[str, str], TaskNames]
    ) -> TaskNames | None:
        for name in names:
            text = self._read_root_file(name)
            if text is not None:
                return reader(text, name)
        return None

    def _read_make(self) -> TaskNames | None:
        for name in MAKE_NAMES:
            text = self._read_root_file(name)
            if text is not None:
                return make_targets(text, name, read_include=self._read_root_file)
        return None

    def _read_root_file(self, name: str) -> str | None:
        """A task file's text (None: missing, a link out, not a regular file, too big, not UTF-8)."""
        try:
            real = resolve_inside(self.folder, name, what=name)
            data = read_regular(real, max_bytes=MANIFEST_MAX_BYTES, name=name)
        except PathRefused:
            return None
        if data is None:
            return None
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None

    def _reload_context(self) -> None:
        texts, _failed = read_context_texts(self.folder)
        self._context = tuple(texts)


_TASK_FILES = frozenset(_WATCHED - set(CONTEXT_FILE_NAMES))


def _is_ignore_file(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] in _IGNORE_FILES


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


def _parent(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def _extension(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1] if "." in name.lstrip(".") else ""
