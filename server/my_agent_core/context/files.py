"""Context files frozen into the prompt: AGENTS.md, CLAUDE.md, GEMINI.md, copilot-instructions.md.

A project's own instructions for agents belong in the system prompt next to memory, under the same
rule: read once when a session starts and kept as one string, so the prompt stays byte-identical
for the session (the caller keeps `ContextSnapshot.block`; a new session reads them again). They
come from the repository, which may be someone else's: each file is read through the one path
check (no link out of the folder, no FIFO or device, bounded), cut to a per-file budget with a
note, scanned like a memory entry (an unsafe file is withheld as `[BLOCKED: ...]`, never quoted)
and rendered by `memory/render.py`.

Never call this for an untrusted folder: the caller decides trust (the language server knows the
editor's untrusted folders) and passes nothing of such a folder to the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from my_agent_core.memory.render import ContextDocument, cut, render_context_block
from my_agent_core.memory.safety import scan
from my_agent_core.paths import PathRefused, read_regular, resolve_inside

__all__ = [
    "CONTEXT_FILE_NAMES",
    "DEFAULT_MAX_CHARS",
    "READ_MAX_BYTES",
    "ContextFile",
    "ContextSnapshot",
    "ContextText",
    "read_context_files",
    "read_context_texts",
]

#: The files read, in the order they appear in the prompt (the contract's names).
CONTEXT_FILE_NAMES: tuple[str, ...] = (
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
)
#: Characters of one file that enter the prompt (setting `myAgent.context.maxChars`).
DEFAULT_MAX_CHARS = 8000
#: Bytes read of one file at most: a file past it is read that far and reported as cut.
READ_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ContextFile:
    """One context file as a session saw it (what `chat/snapshot` returns as `contextFiles`).

    `chars`: characters of its text (of what was read, for a file past `READ_MAX_BYTES`); `cut`:
    only its first `max_chars` are in the prompt; `blocked`: the scanner withheld it; `error`: why
    it was not read at all (then it is not in the prompt); `same_as`: an earlier context file with
    the same text (CLAUDE.md as a link to AGENTS.md), which the prompt does not repeat."""

    name: str
    path: Path
    chars: int
    cut: bool
    blocked: bool
    error: str | None = None
    same_as: str | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "path": str(self.path),
            "chars": self.chars,
            "cut": self.cut,
            "blocked": self.blocked,
        }
        if self.error is not None:
            data["error"] = self.error
        if self.same_as is not None:
            data["sameAs"] = self.same_as
        return data


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    """The context files of a folder at one moment: `block` is the rendered `<PROJECT_CONTEXT>`
    text for the system prompt ("" when there is none), `files` what each file contributed."""

    block: str
    files: tuple[ContextFile, ...]

    def to_json(self) -> list[dict[str, object]]:
        return [f.to_json() for f in self.files]


@dataclass(frozen=True, slots=True)
class ContextText:
    """A readable context file's name, real path and whole text (line ends normalised)."""

    name: str
    path: Path
    text: str
    truncated: bool


def read_context_texts(
    folder: Path | str, *, max_bytes: int = READ_MAX_BYTES
) -> tuple[list[ContextText], list[ContextFile]]:
    """The context files present in `folder`: those that could be read, and those that could not
    (as `ContextFile`s with `error`). Missing files are neither."""
    texts: list[ContextText] = []
    failed: list[ContextFile] = []
    for name in CONTEXT_FILE_NAMES:
        candidate = os.path.join(folder, name)
        if not os.path.lexists(candidate):
            continue
        try:
            real = resolve_inside(folder, name, what=name)
            data = read_regular(real, max_bytes=max_bytes, truncate=True, name=name)
        except PathRefused as exc:
            failed.append(ContextFile(name, Path(candidate), 0, False, False, str(exc)))
            continue
        if data is None:  # a dangling link, or removed meanwhile
            continue
        truncated = len(data) >= max_bytes
        try:
            text = data.decode("utf-8-sig") if not truncated else _decode_cut(data)
        except UnicodeDecodeError as exc:
            error = f"{name} is not valid UTF-8 (bad byte at offset {exc.start}); it is not used."
            failed.append(ContextFile(name, real, 0, False, False, error))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        texts.append(ContextText(name, real, text, truncated))
    return texts, failed


def _decode_cut(data: bytes) -> str:
    """Text of a file read only up to the bound: a character split by the cut is dropped."""
    for trim in range(4):
        try:
            return data[: len(data) - trim].decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            if exc.start < len(data) - 4:
                raise
    return data.decode("utf-8-sig")  # raises the real error


def read_context_files(
    folder: Path | str, *, max_chars: int = DEFAULT_MAX_CHARS, max_bytes: int = READ_MAX_BYTES
) -> ContextSnapshot:
    """Read the folder's context files once and render them for a session's system prompt.

    Deterministic: the same files give the same bytes. Each file's first `max_chars` characters
    are shown, with a note when it was cut; a file whose shown text the safety scanner flags is
    withheld (`blocked`); a file with the same text as an earlier one is not repeated. Only for a
    trusted folder (see the module's docstring)."""
    limit = max(1, int(max_chars))
    texts, failed = read_context_texts(folder, max_bytes=max_bytes)
    documents: list[ContextDocument] = []
    files: dict[str, ContextFile] = {f.name: f for f in failed}
    first_with: dict[str, str] = {}
    for item in texts:
        body = item.text.strip("\n")
        shown, was_cut = cut(body, limit)
        was_cut = was_cut or item.truncated
        same = first_with.get(body)
        if same is not None:
            earlier = files[same]
            files[item.name] = ContextFile(
                item.name, item.path, len(body), earlier.cut, earlier.blocked, None, same
            )
            continue
        first_with[body] = item.name
        issues = tuple(scan(shown))
        files[item.name] = ContextFile(item.name, item.path, len(body), was_cut, bool(issues))
        if body.strip():
            documents.append(ContextDocument(item.name, body, issues))
    ordered = tuple(files[name] for name in CONTEXT_FILE_NAMES if name in files)
    return ContextSnapshot(render_context_block(documents, max_chars=limit), ordered)
