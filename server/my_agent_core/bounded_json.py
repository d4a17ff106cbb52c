"""JSON from disk with a bound on its nesting: a file 100,000 levels deep is refused, never parsed.

Session files, the history journal and a project's package.json come from folders a cloned repository
controls. `json.loads` recurses once per level, so a deep enough file raises `RecursionError` (which
callers do not expect) or, just under the interpreter's limit, parses into a value that makes the next
`json.dumps` or any recursive walk fail later, far from the file. `loads` counts the depth first, in one
linear pass over the bytes, and refuses a document deeper than `MAX_DEPTH` with `JsonTooDeep` (a
`ValueError`, like any other document that is not the JSON a reader accepts).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

__all__ = ["MAX_DEPTH", "JsonTooDeep", "depth_exceeds", "loads"]

#: Far deeper than anything this program writes (a session header with nested tool schemas is ~20).
MAX_DEPTH = 100

# A JSON string, from its quote to its closing quote or to the end of the text (an unterminated one):
# once started it always matches, with possessive loops, so the scan is linear whatever the input.
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)', re.DOTALL)
_STRING_TEXT = re.compile(_STRING.pattern.decode("ascii"), re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class JsonTooDeep(ValueError):
    """A JSON document nested deeper than the reader's bound; it was not parsed."""


def depth_exceeds(data: bytes | str, max_depth: int = MAX_DEPTH) -> bool:
    """Whether the arrays and objects of `data` nest deeper than `max_depth` (brackets inside strings
    do not count). Linear time; a text with few brackets is answered by two counts."""
    if isinstance(data, str):
        if data.count("[") + data.count("{") <= max_depth:
            return False
        outside = _STRING_TEXT.sub("", data).encode("utf-8", "surrogatepass")
    else:
        if data.count(b"[") + data.count(b"{") <= max_depth:
            return False
        outside = _STRING.sub(b"", data)
    brackets = outside.translate(None, _NOT_BRACKETS)
    return any(depth > max_depth for depth in accumulate(_STEP[b] for b in brackets))


def loads(data: bytes | str, *, max_depth: int = MAX_DEPTH, what: str = "the JSON") -> Any:
    """`json.loads(data)` for a document at most `max_depth` levels deep (`JsonTooDeep` otherwise;
    `ValueError` / `UnicodeDecodeError` for text that is not JSON, as `json.loads` raises them)."""
    if depth_exceeds(data, max_depth):
        raise JsonTooDeep(f"{what} nests deeper than {max_depth} levels; it is not read")
    try:
        return json.loads(data)
    except RecursionError:  # only when called with almost no stack left: still not a crash
        raise JsonTooDeep(f"{what} nests too deep to be read here") from None
