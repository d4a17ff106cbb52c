"""list_files and search_text as the model reads them: sorted, capped, with a note saying how to
narrow down when something was left out."""

from __future__ import annotations

import json
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from my_agent_core.paths import kind_of

from .folder import Folder, WorkspaceError
from .listing import ListingCache, ListingStopped, list_paths
from .seams import CancelToken
from .search import SearchError, SearchResult, SearchStopped, search
from .settings import WorkspaceSettings
from .textfile import cut_line
from .unsaved import overlay_unsaved, unsaved_texts

__all__ = ["FindTools"]

_STOPPED = {
    "cancelled": "The turn was cancelled; the {what} was stopped. Do not retry it now.",
    "timeout": "The {what} took longer than {seconds:g} s and was stopped; narrow it with path or glob.",
    "regex-timeout": (
        "The regex took longer than {seconds:g} s and was stopped: without ripgrep, regexes run on "
        "Python's backtracking engine, where nested repetition such as `(a+)+` or `(a|aa)*` can "
        "take exponential time. Rewrite it without nested or overlapping repeats (e.g. `a+` for "
        "`(a+)+`), search for a literal part of it with regex=false, or narrow it with path or glob."
    ),
}


@dataclass
class FindTools:
    """list_files and search_text of one folder; `rg` is the ripgrep search_text uses (None: the
    pure-Python search). Listings are remembered between calls while nothing changed."""

    folder: Folder
    settings: WorkspaceSettings
    rg: str | None
    cancel: CancelToken | None = None
    _cache: ListingCache = field(default_factory=ListingCache)

    def list(self, path: str | None, glob: str | None) -> str:
        self._check_cancel("listing")
        start = self.folder.resolve(path, default=".")
        rel = self.folder.rel(start)
        if not start.exists():
            raise WorkspaceError(self.folder.describe_missing(start))
        try:
            listing = list_paths(
                self.folder.root,
                start,
                glob=glob or None,
                scan_limit=self.settings.list_scan_limit,
                cancel=self.cancel,
                timeout_s=self.settings.search_timeout_s,
                cache=self._cache,
            )
        except ValueError as exc:
            raise WorkspaceError(str(exc)) from None
        except ListingStopped as exc:
            raise WorkspaceError(self._stopped(str(exc), "listing")) from None
        where = "the workspace folder" if rel == "." else rel
        matching = f" matching {glob!r}" if glob else ""
        cap = self.settings.list_max_entries
        shown, total = listing.paths[:cap], len(listing.paths)
        if not shown:
            return (
                f"No files under {where}{matching}. (Files ignored by .gitignore are not listed; "
                "name an ignored folder in path to list it anyway.)"
            )
        count = f"{total:,}" if listing.complete else f"more than {total:,}"
        lines = [f"{count} file{'s' if total != 1 else ''} under {where}{matching}:"]
        lines.extend(_shown_path(rel) for rel in shown)
        if total > cap or not listing.complete:
            lines.append(
                f"[showing the first {len(shown):,} of {count} files: narrow it with path (a "
                "subfolder) or glob (e.g. '*.py')]"
            )
        return "\n".join(lines)

    def search(self, query: str, path: str | None, glob: str | None, regex: bool) -> str:
        self._check_cancel("search")
        deadline = time.monotonic() + self.settings.search_timeout_s  # the whole call
        start = self.folder.resolve(path, default=".")
        rel = self.folder.rel(start)
        if not start.exists():
            raise WorkspaceError(self.folder.describe_missing(start))
        mode = start.stat().st_mode
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):  # a FIFO would block a reader
            raise WorkspaceError(
                f"{rel} is {kind_of(mode)}, not a file or folder; it is not searched."
            )
        settings = self.settings
        try:
            result = search(
                self.folder.root,
                start,
                query,
                regex=regex,
                glob=glob or None,
                rg=self.rg,
                max_per_file=settings.search_max_per_file,
                collect_limit=settings.search_collect_limit,
                max_filesize=settings.search_max_filesize,
                cancel=self.cancel,
                deadline=deadline,
            )
            unsaved_note = self._search_unsaved(result, start, query, glob or None, regex, deadline)
        except (SearchError, ValueError) as exc:
            raise WorkspaceError(str(exc)) from None
        except SearchStopped as exc:
            raise WorkspaceError(self._stopped(str(exc), "search")) from None
        except ListingStopped as exc:
            raise WorkspaceError(self._stopped(str(exc), "search")) from None
        where = "the workspace folder" if rel == "." else rel
        matching = f" (files matching {glob!r})" if glob else ""
        kind = "regex" if regex else "text"
        if not result.hits:
            if unsaved_note:
                unsaved_note = " " + unsaved_note
            hint = (
                "The search is case-sensitive; try a shorter or different query, or regex=true "
                "with (?i) to ignore case."
                if not regex
                else "Check the regex, or try (?i) to ignore case."
            )
            return (
                f"No matches for the {kind} {query!r} in {where}{matching}. {hint} (Files ignored "
                f"by .gitignore and binary files are not searched.){unsaved_note}"
            )
        hits = result.hits
        files = len({hit.path for hit in hits})
        cap = settings.search_max_results
        shown = hits[:cap]
        total = f"{len(hits):,}" if result.complete else f"more than {len(hits):,}"
        header = f"{total} matching line{'s' if len(hits) != 1 else ''} in {files:,} file"
        header += f"{'s' if files != 1 else ''} for the {kind} {query!r} in {where}{matching}:"
        lines = [header]
        lines.extend(
            f"{_shown_path(hit.path)}:{hit.line}: "
            f"{cut_line(hit.text, settings.search_line_chars, around=hit.column)}"
            for hit in shown
        )
        if len(hits) > cap or not result.complete:
            lines.append(
                f"[showing the first {len(shown):,} of {total} matching lines: narrow it with path, "
                "glob or a more specific query]"
            )
        more = sorted(result.more_in)
        if more:
            listed = ", ".join(more[:10]) + (
                f" and {len(more) - 10} more" if len(more) > 10 else ""
            )
            lines.append(
                f"[only the first {settings.search_max_per_file} matching lines of each file are "
                f"shown; more match in {listed}: search that file with path to see them]"
            )
        if unsaved_note:
            lines.append(unsaved_note)
        return "\n".join(lines)

    def _search_unsaved(
        self,
        result: SearchResult,
        start: Path,
        query: str,
        glob: str | None,
        regex: bool,
        deadline: float,
    ) -> str:
        """Search the unsaved editor text of the open files the search covers instead of their
        disk copies; the note for the model ("" when no open file has unsaved edits)."""
        settings = self.settings
        texts = unsaved_texts(self.folder, start, max_bytes=settings.search_max_filesize)
        if not texts:
            return ""
        listing = list_paths(  # which of them the search covers: .gitignore and glob as rg
            self.folder.root,
            start,
            glob=glob,
            scan_limit=settings.list_scan_limit,
            cancel=self.cancel,
            timeout_s=max(0.0, deadline - time.monotonic()),
            cache=self._cache,
        )
        covered = set(listing.paths)
        texts = {rel: text for rel, text in texts.items() if rel in covered}
        if not texts:
            return ""
        names = ", ".join(_shown_path(rel) for rel in sorted(texts))
        overlay_unsaved(
            result,
            texts,
            query=query,
            regex=regex,
            max_per_file=settings.search_max_per_file,
            collect_limit=settings.search_collect_limit,
            rg=self.rg,
            deadline=deadline,
            cancel=self.cancel,
        )
        return f"[searched the unsaved editor text of {names}]"

    def _check_cancel(self, what: str) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise WorkspaceError(self._stopped("cancelled", what))

    def _stopped(self, why: str, what: str) -> str:
        template = _STOPPED.get(why, "The {what} was stopped.")
        return template.format(what=what, seconds=self.settings.search_timeout_s)


def _shown_path(rel: str) -> str:
    """A path as one line: a name with a line break or another control character (a hostile
    repository can create one) is shown quoted, so it cannot forge more lines of the result."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in rel):
        return json.dumps(rel, ensure_ascii=False)
    return rel
