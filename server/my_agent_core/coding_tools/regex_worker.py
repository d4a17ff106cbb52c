"""A model's regex, run over texts in a child process that its parent can kill.

Python's `re` backtracks: `(a+)+$` on a line of forty `a`s and a `b` never returns, and a regex
running in C cannot be interrupted from another thread (nor does it let one run: it holds the GIL).
So when ripgrep (a linear engine) is missing, the pure-Python search sends each file's bytes to
this script, run as `python -I -S regex_worker.py` (standard library only: nothing of the workspace
or the environment is imported), and kills it at the call's deadline (`untrusted_regex.py`).

Protocol (stdin / stdout, binary): one JSON line `{"pattern": ..., "limit": N}`; the answer is
`{"ok": true}` or `{"error": "..."}` (a regex Python cannot compile). Then, per text: an 8-byte
big-endian length and the bytes; the answer is one JSON line, the list of `[line, text, column]`
of its first `limit` matching lines (`regex_lines`). End of input ends the process.
"""

from __future__ import annotations

import json
import re
import struct
import sys

__all__ = ["regex_lines"]


def regex_lines(data: bytes, pattern: re.Pattern[str], limit: int) -> list[tuple[int, str, int]]:
    """Lines where `pattern` matches within the line alone (as ripgrep's line-oriented search):
    (line number, line, column of the first match), at most `limit` of them.

    The whole text is searched for speed; a match that runs past its line's end is checked again
    on that line alone, so `\\s+` or `[^x]*` never join two lines.
    """
    text = data.decode("utf-8", errors="surrogateescape")
    found: list[tuple[int, str, int]] = []
    pos = 0
    line_no = 1
    counted_to = 0
    while len(found) < limit:
        match = pattern.search(text, pos)
        if match is None or (match.start() == len(text) and (not text or text[-1] == "\n")):
            break
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.start())
        end = len(text) if end < 0 else end
        line = text[start:end]
        line_no += text.count("\n", counted_to, start)
        counted_to = start
        if match.end() <= end:
            found.append((line_no, _shown(line), match.start() - start))
        else:
            own = pattern.search(line)
            if own is not None:
                found.append((line_no, _shown(line), own.start()))
        if end >= len(text):
            break
        pos = end + 1
    return found


def _shown(line: str) -> str:
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _answer(out: object) -> None:
    sys.stdout.buffer.write(json.dumps(out).encode("ascii") + b"\n")
    sys.stdout.buffer.flush()


def main() -> int:
    stdin = sys.stdin.buffer
    header = json.loads(stdin.readline())
    try:
        pattern = re.compile(header["pattern"], re.MULTILINE)
    except (re.error, RecursionError, OverflowError, ValueError, MemoryError) as exc:
        _answer({"error": str(exc) or type(exc).__name__})
        return 0
    _answer({"ok": True})
    limit = int(header["limit"])
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return 0
        (size,) = struct.unpack(">Q", head)
        _answer(regex_lines(stdin.read(size), pattern, limit))


if __name__ == "__main__":
    raise SystemExit(main())
