"""Text for a terminal: what came from the model, a file, a command, a session or memory is shown,
never obeyed.

A terminal acts on control characters: ESC sequences erase lines, move the cursor, set the title or
write the clipboard (OSC 52); CR returns to the start of the line, BS steps back, C1 codes (U+009B is
CSI) do what ESC does, and bidi controls reorder what is drawn. Printed raw, a model's command line
could make a y/N prompt show `pytest -q` while `touch PWNED` runs. `visible` renders every such
character as its escape (`\\x1b`, `\\r`, `\\x9b`, `\\u202e`) and keeps the rest as it is: tabs, newlines,
letters of any script, emoji with their joiners (the safety scanner's judgement of invisible
characters, so the prompt and the terminal agree on what is hidden). `VisibleStream` puts a stream
behind it, so every line the command line writes passes this one function; the command line emits
no styling of its own, so nothing written through it is exempt.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import threading
import unicodedata
from collections.abc import Iterator
from typing import TextIO, cast

from my_agent_core.memory.invisible import hidden_spans

__all__ = ["VisibleStream", "as_visible", "is_terminal", "visible", "visible_output"]

#: Everything but tab, newline and printable ASCII: only these runs are looked at closely.
_NOT_PLAIN = re.compile(r"[^\t\n\x20-\x7e]+")
#: Zero-width characters whose meaning depends on their neighbours (ZWJ in an emoji, ZWNJ in a
#: Persian word, ZWSP between Thai words, tag characters in a subdivision flag): shown as they are
#: unless the scanner calls them hidden.
_CONTEXTUAL = re.compile("[\u200b-\u200d\U000e0000-\U000e007f]")
#: Categories a terminal draws as nothing or acts on: format (bidi, invisible), line and paragraph
#: separators, lone surrogates (undecodable bytes).
_NEVER_DRAWN = frozenset({"Cf", "Zl", "Zp", "Cs"})
_CONTEXT_CHARS = 16  # characters of what was written kept to judge what comes next
_HOLD_MAX = 64  # contextual characters held back at most, waiting for their next neighbour


def _escape(ch: str) -> str:
    if ch == "\r":
        return "\\r"
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


#: C0 (but tab and newline), DEL and C1 as their escapes, for `str.translate`.
_CONTROLS = {
    code: _escape(chr(code))
    for code in (*range(0x20), *range(0x7F, 0xA0))
    if chr(code) not in "\t\n"
}


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str, before: str = "") -> str:
    """`text` as a terminal may draw it: control, bidi and hidden characters as their escapes
    (tab and newline kept), everything else unchanged. `before`: what was printed just before,
    the context a joiner at the start of `text` is judged in (streamed text)."""
    if not _NOT_PLAIN.search(text):
        return text
    offset = len(before)
    out: list[str] = []
    last = 0
    for start, end in hidden_spans(before + text):  # in order, not overlapping
        if end <= offset:
            continue
        start = max(start - offset, last)
        out.append(_render(text[last:start]))
        out.append("".join(map(_escape, text[start : end - offset])))
        last = end - offset
    out.append(_render(text[last:]))
    return "".join(out)


def _render(segment: str) -> str:
    """A stretch with no hidden character in the scanner's judgement: controls escaped (at C
    speed), then the other characters a terminal draws as nothing or acts on."""
    if _CONTROL.search(segment):
        segment = segment.translate(_CONTROLS)
    if segment.replace("\n", "").replace("\t", "").isprintable():  # the common case: letters
        return segment
    return _NOT_PLAIN.sub(_render_run, segment)


def _render_run(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():  # letters, marks, symbols of any script: the common case
        return run
    return "".join(
        _escape(ch)
        if unicodedata.category(ch) in _NEVER_DRAWN and not _CONTEXTUAL.match(ch)
        else ch
        for ch in run
    )


class VisibleStream(io.TextIOBase):
    """A text stream that writes everything through `visible`.

    A trailing zero-width joiner is held back until the next write (it is invisible, so the screen
    looks the same): streamed text arrives in pieces, and an emoji's ZWJ may end one piece while
    the emoji it joins starts the next. Thread-safe: a chat's reply and its prompts share it."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream
        self._held = ""
        self._tail = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            pending = self._held + text
            cut = len(pending)
            while (
                cut > 0 and _CONTEXTUAL.match(pending[cut - 1]) and len(pending) - cut < _HOLD_MAX
            ):
                cut -= 1
            self._held = pending[cut:]
            self._emit(pending[:cut])
        return len(text)

    def _emit(self, ready: str) -> None:
        if ready:
            self._stream.write(visible(ready, self._tail))
            self._tail = (self._tail + ready)[-_CONTEXT_CHARS:]

    def release(self) -> None:
        """Write what is held back, judged with nothing after it."""
        with self._lock:
            held, self._held = self._held, ""
            self._emit(held)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        """Release what is held; the stream underneath stays open (it is not ours)."""
        if not self.closed:
            self.release()
            with contextlib.suppress(ValueError, OSError):
                self._stream.flush()
        super().close()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # input() reads it to encode its prompt
        return self._stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors


def is_terminal(stream: TextIO) -> bool:
    """Whether `stream` is a terminal: a stream without `isatty` (a test's stand-in), or a closed
    one, is not."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def as_visible(stream: TextIO) -> TextIO:
    """`stream` behind `VisibleStream` (itself when it already is one)."""
    if isinstance(stream, VisibleStream):
        return cast(TextIO, stream)
    return cast(TextIO, VisibleStream(stream))


@contextlib.contextmanager
def visible_output(*, stdout: bool = True) -> Iterator[None]:
    """Within the block, `sys.stderr` (and `sys.stdout`, unless it carries a protocol) writes
    through `visible`; both are put back after it."""
    saved = sys.stdout, sys.stderr
    wrapped: list[VisibleStream] = []
    try:
        if stdout and not isinstance(sys.stdout, VisibleStream):
            wrapped.append(VisibleStream(sys.stdout))
            sys.stdout = cast(TextIO, wrapped[-1])
        if not isinstance(sys.stderr, VisibleStream):
            wrapped.append(VisibleStream(sys.stderr))
            sys.stderr = cast(TextIO, wrapped[-1])
        yield
    finally:
        for stream in wrapped:
            with contextlib.suppress(ValueError, OSError):
                stream.close()
        sys.stdout, sys.stderr = saved
