"""read_file, edit_file and write_file: what the model reads and how its changes reach the user.

Reads and diffs use the text the user sees (the unsaved buffer first). A change is shown to the user
as a unified diff and applied only once approved, through the EditApplier, which refuses when the text
changed meanwhile; every refusal comes back as a message the model can act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from my_agent_core.approval import ApprovalGate, ApprovalRequest
from my_agent_core.memory.refusal import refusal
from my_agent_core.textdiff import unified_diff

from .folder import Folder, Text, WorkspaceError
from .seams import ApplyError, EditApplier, FileChange
from .settings import WorkspaceSettings
from .textfile import count_lines, cut_line, newline_of, number_lines

__all__ = ["FileTools"]

_NUMBERED = re.compile(r"^[^\S\n]*\d+\t", re.MULTILINE)  # `\s*` here crossed lines: quadratic
_SNIPPET_CONTEXT = 3
_SNIPPET_MAX = 40


@dataclass
class FileTools:
    """The file operations of one folder; each returns the model's result text or raises
    WorkspaceError with a message that says how to fix the call."""

    folder: Folder
    gate: ApprovalGate
    applier: EditApplier
    settings: WorkspaceSettings

    # --- read ---------------------------------------------------------------------------------------

    def read(self, path: str, start_line: int | None, end_line: int | None) -> str:
        real = self.folder.resolve(path)
        rel = self.folder.rel(real)
        current = self.folder.text_of(real, max_bytes=self.settings.read_max_bytes, truncate=True)
        if current is None:
            raise WorkspaceError(self.folder.describe_missing(real))
        start = 1 if start_line is None else start_line
        if start < 1:
            raise WorkspaceError("start_line counts from 1; pass start_line=1 for the top.")
        if end_line is not None and end_line < start:
            raise WorkspaceError(
                f"end_line ({end_line}) is before start_line ({start}); pass end_line >= start_line "
                "or leave it out to read on from start_line."
            )
        total = count_lines(current.text)
        source = " (unsaved text from the editor)" if current.source == "buffer" else ""
        if total == 0:
            return f"{rel} is empty{source}."
        if start > total:
            raise WorkspaceError(
                f"{rel} has {total:,} lines{self._partial_note(current)}; start_line={start} is past "
                f"the end. Pass a start_line from 1 to {total:,}."
            )
        window = number_lines(
            current.text,
            start=start,
            end=end_line,
            max_lines=self.settings.read_max_lines,
            max_chars=self.settings.read_max_chars,
            line_chars=self.settings.line_max_chars,
        )
        of = f"the first {total:,}" if current.partial else f"{total:,}"
        parts = [f"{rel}: lines {window.first:,}-{window.last:,} of {of}{source}", window.body]
        wanted_last = total if end_line is None else min(end_line, total)
        if window.next_line is not None and window.last < wanted_last:
            parts.append(
                f"[cut to keep this result short: call read_file with start_line="
                f"{window.next_line} to read on]"
            )
        elif window.next_line is not None and end_line is None:
            parts.append(f"[read on with start_line={window.next_line}]")
        if current.partial and window.next_line is None:
            parts.append(self._partial_note(current).strip(" ()") + ".")
        if not current.exact:
            parts.append(
                "[the file is not valid UTF-8: undecodable bytes are shown as U+FFFD; edit_file "
                "and write_file will not change it]"
            )
        return "\n".join(parts)

    def _partial_note(self, current: Text) -> str:
        if not current.partial:
            return ""
        return (
            f" (the file is {current.disk_size:,} bytes; read_file reaches only its first "
            f"{self.settings.read_max_bytes:,} bytes: use search_text with its path, or "
            "run_command, to find lines further on)"
        )

    # --- edit ---------------------------------------------------------------------------------------

    def edit(self, path: str, old_text: str, new_text: str) -> str:
        real = self.folder.resolve(path)
        rel = self.folder.rel(real)
        self.folder.check_writable(real)
        if not old_text:
            raise WorkspaceError(
                "old_text is empty: pass the exact text to replace (include a neighbouring line to "
                "insert next to it), or use write_file to create or rewrite a whole file."
            )
        current = self._editable(real, rel)
        if current is None:
            raise WorkspaceError(
                f"{self.folder.describe_missing(real)} To create it, use write_file."
            )
        text = current.text
        newline = newline_of(text)
        old = _with_newline(old_text, newline)
        new = _with_newline(new_text, newline)
        if old == new:
            raise WorkspaceError("old_text and new_text are the same; there is nothing to change.")
        where = _occurrences(text, old)
        if not where:
            raise WorkspaceError(_not_found(rel, text, old_text, current))
        if len(where) > 1:
            lines = ", ".join(str(_line_at(text, pos)) for pos in where[:20])
            more = "" if len(where) <= 20 else f" and {len(where) - 20} more"
            raise WorkspaceError(
                f"old_text occurs {len(where)} times in {rel} (at lines {lines}{more}); it must "
                "match exactly once. Include more of the surrounding lines in old_text so it is "
                "unique."
            )
        pos = where[0]
        after = text[:pos] + new + text[pos + len(old) :]
        self._change(real, rel, current, after, title=f"Edit {rel}")
        first = _line_at(after, pos)
        last = first + max(0, new.count("\n") - (1 if new.endswith("\n") else 0))
        return f"Edited {rel}: the one occurrence of old_text is replaced.\n" + self._snippet(
            after, first, last
        )

    def _snippet(self, text: str, first: int, last: int) -> str:
        start = max(1, first - _SNIPPET_CONTEXT)
        end = min(count_lines(text), last + _SNIPPET_CONTEXT, start + _SNIPPET_MAX - 1)
        if count_lines(text) == 0:
            return "(the file is now empty)"
        window = number_lines(
            text,
            start=start,
            end=end,
            max_lines=_SNIPPET_MAX,
            max_chars=self.settings.read_max_chars // 4,
            line_chars=self.settings.line_max_chars,
        )
        return f"Lines {window.first}-{window.last} now read:\n{window.body}"

    # --- write --------------------------------------------------------------------------------------

    def write(self, path: str, content: str) -> str:
        real = self.folder.resolve(path)
        rel = self.folder.rel(real)
        self.folder.check_writable(real)
        if len(content.encode("utf-8", "replace")) > self.settings.edit_max_bytes:
            raise WorkspaceError(
                f"The content is larger than {self.settings.edit_max_bytes:,} bytes; write_file "
                "does not write files that large. Split the file, or generate it with a command."
            )
        blocked = self.folder.blocked_parent(real)
        if blocked is not None:
            raise WorkspaceError(blocked)
        current = self._editable(real, rel)
        if current is not None and newline_of(current.text) == "\r\n" and "\r" not in content:
            content = content.replace("\n", "\r\n")  # keep the file's line ends
        if current is not None and current.text == content:
            return f"{rel} already has exactly this content; nothing was written."
        verb = "Create" if current is None else "Overwrite"
        self._change(real, rel, current, content, title=f"{verb} {rel}")
        lines = count_lines(content)
        done = "Created" if current is None else "Wrote"
        return f"{done} {rel} ({lines:,} line{'s' if lines != 1 else ''})."

    # --- shared -------------------------------------------------------------------------------------

    def _editable(self, real: Path, rel: str) -> Text | None:
        current = self.folder.text_of(real, max_bytes=self.settings.edit_max_bytes, truncate=False)
        if current is not None and not current.exact:
            raise WorkspaceError(
                f"{rel} is not valid UTF-8 text; edit_file and write_file only change UTF-8 "
                "files (so no byte is rewritten unread). Use run_command if it must change."
            )
        return current

    def _change(
        self, real: Path, rel: str, current: Text | None, after: str, *, title: str
    ) -> None:
        before = None if current is None else current.text
        diff = unified_diff(before, after, rel)
        change = FileChange(
            path=real,
            relpath=rel,
            before=before,
            after=after,
            source="new" if current is None else current.source,
            diff=diff,
            bom=current.bom if current is not None else False,
        )
        request = ApprovalRequest(
            kind="edit", title=title, detail=diff, path=real, relpath=rel, new_text=after
        )
        decision = self.gate.decide(request)
        what = f"this {'creation' if current is None else 'change'} of {rel}"
        if not decision.approved:
            raise WorkspaceError(refusal(decision, what))
        try:
            self.applier.apply(change)
        except ApplyError as exc:
            raise WorkspaceError(f"The change was approved but not applied: {exc}") from None


def _with_newline(text: str, newline: str) -> str:
    text = text.replace("\r\n", "\n")
    return text.replace("\n", "\r\n") if newline == "\r\n" else text


def _occurrences(text: str, needle: str, limit: int = 100) -> list[int]:
    found: list[int] = []
    pos = text.find(needle)
    while pos >= 0 and len(found) < limit:
        found.append(pos)
        pos = text.find(needle, pos + 1)
    return found


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _not_found(rel: str, text: str, old_text: str, current: Text) -> str:
    where = " (in the unsaved editor text)" if current.source == "buffer" else ""
    base = f"old_text was not found in {rel}{where}."
    if _NUMBERED.search(old_text):
        return (
            f"{base} It seems to include the line numbers of read_file's output; pass only the "
            "file's text, without the numbers and the tab after them."
        )
    wanted = [line.strip() for line in old_text.replace("\r\n", "\n").strip("\n").split("\n")]
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    if wanted and wanted[0]:
        size = len(wanted)
        for index in range(len(lines) - size + 1):
            if lines[index : index + size] == wanted:
                return (
                    f"{base} Lines {index + 1}-{index + size} match it except for whitespace "
                    f"(indentation, tabs or trailing spaces). Read them with read_file "
                    f"start_line={index + 1} and copy them exactly."
                )
        firsts = [index + 1 for index, line in enumerate(lines) if line == wanted[0]]
        if firsts:
            shown = ", ".join(str(n) for n in firsts[:5])
            return (
                f"{base} Its first line appears at line {shown}, but the lines after it differ. "
                "Read that part again with read_file and copy old_text exactly."
            )
    preview = cut_line(old_text.split("\n")[0], 120)
    return (
        f"{base} (Its first line: {preview!r}.) Read the file again with read_file (it may have "
        "changed) and copy old_text exactly, including indentation."
    )
