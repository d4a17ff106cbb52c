"""The rules of an edit, applied to a list of entries: what add, replace and remove do, what they refuse.

Pure functions of the entries as read under the lock (no disk, no lock), so the store can run them
for a write and for a preview alike, and every refusal carries the message the model needs to fix
its call: the entry it could not find, the ones an ambiguous text matches, the budget it would pass,
the safety finding in its content. Text the scanner blocks is never quoted back.

The scan (~30 us an entry) is remembered per text by `safety.scan` itself: a reviewed edit runs
its rules twice (preview, then apply), a refused edit is retried with the same text, and an entry
added or loaded earlier in the process is named again when it is replaced or removed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from my_agent_core.memory.conflicts import has_markers, marker_lines
from my_agent_core.memory.document import SECTION_SIGN, budget_used, normalize_entry, parse
from my_agent_core.memory.errors import MemoryEditError
from my_agent_core.memory.journal import Change
from my_agent_core.memory.render import (
    BLOCKED_PREVIEW,
    bounded_notes,
    one_line,
    quote,
    render_listing,
)
from my_agent_core.memory.safety import SafetyIssue, describe, scan
from my_agent_core.memory.similar import near_duplicate_note
from my_agent_core.memory.store_types import Operation

__all__ = [
    "Mutation",
    "NotFound",
    "apply_one",
    "batch",
    "check_content",
    "conflict_note",
    "entry_preview",
    "issues_of",
    "locate",
    "plan",
    "validate",
]

#: An edit as a function of the entries on disk: the entries it leaves, its changes, its notes.
Mutation = Callable[[list[str]], tuple[list[str], list[Change], list[str]]]

#: Texts longer than this (far longer than an entry should be) are previewed each time, so the
#: remembered previews stay small (at most `_REMEMBERED` of them).
REMEMBERED_CHARS = 4096
_REMEMBERED = 512


class NotFound(MemoryEditError):
    """`old_text` matched no entry; `batch` adds the listing of the entries as they are on disk."""


def validate(op: Operation) -> None:
    """Refuse an operation whose own fields are missing, before any file is looked at."""
    if op.action == "add":
        if not (op.content or "").strip():
            raise MemoryEditError("`content` is empty: pass the text of the entry to add.")
    elif op.action in ("replace", "remove"):
        if not (op.old_text or "").strip():
            raise MemoryEditError(
                f"`old_text` is empty: pass a short piece of text that appears in the one entry to {op.action}."
            )
        if op.action == "replace" and not (op.new_content or "").strip():
            raise MemoryEditError("`new_content` is empty: pass the full new text of the entry.")
    else:
        raise MemoryEditError(f"Unknown action {op.action!r}: use 'add', 'replace' or 'remove'.")


def batch(name: str, limit: int, operations: list[Operation]) -> tuple[str, Mutation]:
    """The journal action of `operations` on the file `name` and the mutation that applies them
    all or none (validated here, before any lock is taken)."""
    if not operations:
        raise MemoryEditError("No operations given: pass at least one add, replace or remove.")
    for op in operations:
        validate(op)
    several = len(operations) > 1
    action = "batch" if several else operations[0].action

    def mutate(entries: list[str]) -> tuple[list[str], list[Change], list[str]]:
        on_disk = list(entries)  # what error messages list: never an edit of this failed call
        changes: list[Change] = []
        notes: list[str] = []
        for n, op in enumerate(operations, start=1):
            prefix = f"Operation {n} of {len(operations)} ({op.action}): " if several else ""
            try:
                notes.append(apply_one(name, limit, entries, op, changes))
            except NotFound as exc:
                title = (
                    "Current entries (as on disk: nothing of this batch was saved)"
                    if several
                    else "Current entries"
                )
                listing = render_listing(on_disk, name=name, limit=limit, title=title)
                raise MemoryEditError(f"{prefix}{exc}\n{listing}") from None
            except MemoryEditError as exc:
                raise MemoryEditError(prefix + str(exc)) from None
        if several and on_disk and not entries:
            raise MemoryEditError(
                f"Refused: this batch would remove every entry of {name}, and one call never "
                "empties a memory file. Nothing was written. Keep the entries that still hold, or "
                "remove entries one call at a time; the user can clear the file by hand."
            )
        return entries, changes, bounded_notes(notes)

    return action, mutate


def plan(
    name: str, limit: int, original: list[str], mutate: Mutation
) -> tuple[list[str], list[Change], str]:
    """Apply `mutate` to the entries on disk (`original`): the entries it leaves, its changes and
    the success message; refused when it would grow the file past its budget (an edit that does
    not grow it is accepted even over budget, so a hand-overfilled file can be repaired)."""
    before_used = budget_used(original)
    entries, changes, notes = mutate(list(original))
    after_used = budget_used(entries)
    if after_used > limit and after_used > before_used:
        raise MemoryEditError(
            f"{name} is full: this edit needs {after_used}/{limit} chars, the store now uses "
            f"{before_used}/{limit}. Nothing was written. Consolidate in this turn: merge related "
            "entries into one shorter entry with `replace` (or several edits at once with "
            "`operations`), or `remove` outdated ones, then retry. If nothing can go, do not "
            f"retry: carry on with your reply.\n{render_listing(original, name=name, limit=limit)}"
        )
    return entries, changes, f"{' '.join(notes)} ({after_used}/{limit} chars used)"


def apply_one(
    name: str, limit: int, entries: list[str], op: Operation, changes: list[Change]
) -> str:
    """Apply one validated operation to `entries` in place, appending its changes; its note."""
    if op.action == "add":
        content = normalize_entry(op.content or "")
        check_content(content, "content")
        if content in entries:
            return f"Entry already exists in {name}; nothing to add."
        entries.append(content)
        changes.append(Change(len(entries) - 1, None, content))
        return f"Added to {name}.{near_duplicate_note(entries[:-1], content, name)}"
    index = locate(name, limit, entries, op.old_text or "")
    old = entries[index]
    if op.action == "remove":
        del entries[index]
        changes.append(Change(index, old, None))
        return f'Removed from {name}: "{entry_preview(old)}".'
    new = normalize_entry(op.new_content or "")
    check_content(new, "new_content")
    if new == old:
        return f"The entry in {name} already reads exactly that; nothing to replace."
    if new in entries:  # replacing with an existing entry merges the two
        del entries[index]
        changes.append(Change(index, old, None))
        return f'Removed "{entry_preview(old)}" from {name}: its replacement already exists.'
    entries[index] = new
    changes.append(Change(index, old, new))
    return f'Replaced the entry "{entry_preview(old)}" in {name}.'


def locate(name: str, limit: int, entries: list[str], old_text: str) -> int:
    """The index of the one entry `old_text` addresses: an entry equal to it wins over entries
    that merely contain it; none (`NotFound`) or several (listed) are refused."""
    needle = normalize_entry(old_text)
    if not needle:
        raise MemoryEditError(
            "`old_text` is empty: pass a short piece of text that appears in one entry."
        )
    exact = [i for i, entry in enumerate(entries) if entry == needle]
    if exact:
        return exact[0]
    matches = [i for i, entry in enumerate(entries) if needle in entry]
    if len(matches) == 1:
        return matches[0]
    if not matches:  # `batch` adds the listing of the entries on disk
        raise NotFound(
            f"No entry in {name} contains {quote(needle, what='old_text')}. Check the current "
            "entries and use a piece of text copied from one of them."
        )
    listing = render_listing(
        entries,
        name=name,
        limit=limit,
        title="Matching entries",
        numbers=[i + 1 for i in matches],
    )
    raise MemoryEditError(
        f"Ambiguous: {quote(needle, what='old_text')} matches {len(matches)} entries in {name}. "
        f"Nothing was changed. Pass a longer old_text that appears in only one of them.\n{listing}"
    )


def check_content(content: str, field_name: str) -> None:
    """Refuse new entry text that is empty, not valid Unicode, more than one entry, or unsafe
    (memory is placed in future system prompts)."""
    if not content:
        raise MemoryEditError(f"`{field_name}` is empty: pass the text of the entry.")
    try:
        if not content.isascii():
            content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MemoryEditError(
            f"`{field_name}` is not valid Unicode text (a lone surrogate at position {exc.start}); "
            "send the text as proper UTF-8."
        ) from None
    doc = parse(content) if SECTION_SIGN in content else None  # no §, no delimiter line
    if doc is not None and (len(doc.entries) != 1 or doc.delimiters):
        raise MemoryEditError(
            f"`{field_name}` contains a line holding only §, the entry delimiter; pass one entry "
            "per operation (several adds can go in one call with `operations`)."
        )
    if has_markers(content) and any(m.kind != "=" for m in marker_lines(content)):
        raise MemoryEditError(
            f"`{field_name}` holds a line that starts like a git conflict marker (`<<<<<<<`, "
            "`|||||||` or `>>>>>>>`); memory would read it as a merge conflict. Pass the fact "
            "without that line."
        )
    issues = issues_of(content)
    if issues:
        raise MemoryEditError(
            f"Refused as unsafe content: it {describe(list(issues))}. Memory is placed in future system "
            "prompts, so it must hold plain facts and preferences, not instructions, hidden "
            "characters or payloads. Rephrase it as a plain fact, or skip saving it."
        )


def conflict_note(name: str, blocks: int, backup_dir: str) -> str:
    """Said after a write to a file that held git conflict markers (see `conflicts.py`)."""
    what = (
        f"{blocks} git conflict block{'' if blocks == 1 else 's'}"
        if blocks
        else "git conflict markers"
    )
    return (
        f" Note: {name} held {what} (git merges it as text where the `my-agent-memory` merge "
        "driver is not set up; `my-agent git-setup` sets it up). Both sides were kept as "
        f"entries, as the merge driver keeps them, and the markers are gone; the file as it was is "
        f"in {backup_dir}/."
    )


def issues_of(text: str) -> tuple[SafetyIssue, ...]:
    """What the safety scanner finds in `text` (`safety.scan` remembers the findings per text)."""
    return tuple(scan(text))


def entry_preview(text: str) -> str:
    """An entry named in a success message: one line, bounded, never a blocked entry's text
    (`render.preview`; the scan remembered by `safety.scan`, the line here, per text)."""
    if scan(text):
        return BLOCKED_PREVIEW
    if len(text) > REMEMBERED_CHARS:
        return one_line(text)
    return _one_line(text)


@functools.lru_cache(maxsize=_REMEMBERED)
def _one_line(text: str) -> str:
    return one_line(text)
