"""Text as the tools show and change it: decoding, binary detection, line ends, numbered windows.

Files come from anywhere (a BOM, CRLF line ends, a latin-1 file, a PNG, a 5 MB minified line), and
the model must get a readable, bounded view of each, plus a way to read on. Line numbers count `\\n`
only, as editors and grep do.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BOM",
    "Decoded",
    "Window",
    "clean_text",
    "count_lines",
    "cut_line",
    "decode_for_edit",
    "decode_for_read",
    "is_binary",
    "newline_of",
    "number_lines",
]

BOM = "\ufeff"
_BINARY_SNIFF = 8192


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB: images, archives, UTF-16 (the test git and ripgrep use)."""
    return b"\x00" in data[:_BINARY_SNIFF]


@dataclass(frozen=True)
class Decoded:
    """A file's text without its BOM; `exact` is False when undecodable bytes were replaced."""

    text: str
    bom: bool
    exact: bool


def decode_for_read(data: bytes) -> Decoded:
    """UTF-8 (a BOM is dropped); other bytes are shown as U+FFFD rather than refused."""
    bom = data.startswith(b"\xef\xbb\xbf")
    body = data[3:] if bom else data
    try:
        return Decoded(body.decode("utf-8"), bom, True)
    except UnicodeDecodeError:
        return Decoded(body.decode("utf-8", errors="replace"), bom, False)


def decode_for_edit(data: bytes) -> Decoded | None:
    """The exact text of a UTF-8 file, or None: an edit must never rewrite bytes it could not read."""
    decoded = decode_for_read(data)
    return decoded if decoded.exact else None


def clean_text(text: str) -> str:
    """`text` without lone surrogates (half an emoji from a model's stream), which no file and no
    later request could encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def newline_of(text: str) -> str:
    """ "\\r\\n" when every line end of `text` is CRLF, else "\\n" (mixed files are matched as they are)."""
    lf = text.count("\n")
    return "\r\n" if lf and text.count("\r\n") == lf else "\n"


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def cut_line(line: str, limit: int, *, around: int = 0) -> str:
    """`line` cut to about `limit` characters, keeping the part near `around` (a match's column)."""
    if len(line) <= limit:
        return line
    start = max(0, min(around - limit // 4, len(line) - limit))
    shown = line[start : start + limit]
    head = "…" if start > 0 else ""
    tail = "…" if start + limit < len(line) else ""
    return f"{head}{shown}{tail} [line cut: {len(line):,} chars]"


@dataclass(frozen=True)
class Window:
    """Numbered lines `first`..`last` of a text of `total` lines; `next_line` is where to read on
    (None when the window reached the end)."""

    body: str
    first: int
    last: int
    total: int
    next_line: int | None


def number_lines(
    text: str,
    *,
    start: int,
    end: int | None,
    max_lines: int,
    max_chars: int,
    line_chars: int,
) -> Window:
    """Lines `start`..`end` (1-based, inclusive) as `<number>\\t<line>`, bounded in lines and
    characters; a line longer than `line_chars` is cut with a note. `start` must be <= total."""
    total = count_lines(text)
    last_wanted = total if end is None else min(end, total)
    last_wanted = min(last_wanted, start + max_lines - 1)
    pos = 0
    for _ in range(start - 1):  # skip to the first wanted line without splitting the whole text
        pos = text.index("\n", pos) + 1
    out: list[str] = []
    used = 0
    number = start
    while number <= last_wanted:
        nl = text.find("\n", pos)
        line = text[pos:] if nl < 0 else text[pos:nl]
        pos = len(text) if nl < 0 else nl + 1
        if line.endswith("\r"):
            line = line[:-1]
        shown = f"{number:>6}\t{cut_line(line, line_chars)}"
        if out and used + len(shown) + 1 > max_chars:
            break
        out.append(shown)
        used += len(shown) + 1
        number += 1
    last = number - 1
    next_line = last + 1 if last < total else None
    return Window("\n".join(out), start, last, total, next_line)
