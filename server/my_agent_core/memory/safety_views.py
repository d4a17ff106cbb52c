"""Disguised text the phrase rules would read past: letters spelled out one by one, leetspeak, and
base64. Each disguise is decoded into a view of the text that the same rules scan; a finding there is
reported, with the rule's own id, on the disguise in the original.

Decoding alone refuses nothing: "a b c d e f" squeezed, `k8s` read as "kbs" or a base64 key decoded
are not attacks, and a view that reads as ordinary text gives no finding. Only a view in which a rule
matches (an override, an exfiltration, ...) does, so initials, version numbers, ports, hashes and test
data in ordinary notes stay accepted.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterator

__all__ = ["disguised_issues"]

#: The phrase rules of safety.py: text -> [(rule id, start, end)].
Found = tuple[str, int, int]
Finder = Callable[[str], list[Found]]

# --- letters spelled out: "i g n o r e  a l l", "i.g.n.o.r.e a.l.l" ---------------------------------

# Six or more single letters, each followed by one separator (a space, ".", "-", "_", "·") or by a
# longer gap of spaces (the break between two words spelled out), up to a word that is not spelled
# out. A run starts only at its first letter (not after another single letter and its separator)
# and is taken whole, never re-tried from inside, so a long run costs one pass.
_L = r"[^\W\d_]"  # a letter
_NOT_INSIDE = "".join(rf"(?<!(?<!{_L}){_L}{sep})" for sep in ("[ .\\-_·]", " {2}", " {3}", " {4}"))
_SPELLED = re.compile(
    rf"(?<!{_L}){_NOT_INSIDE}(?:{_L}(?:[ .\-_·]| {{2,4}})(?={_L}(?!{_L}))){{5,}}+{_L}(?!{_L})"
)


# A cheap first look: most texts have no three single letters in a row, and skip the view at the
# cost of one quick search.
_SPELLED_GATE = re.compile(r"(?<!\w)\w[ .\-_·]{1,4}\w[ .\-_·]{1,4}\w(?!\w)")
_DROP_MARKS = str.maketrans("", "", ".-_·")


def _squeezed(run: str) -> str:
    """The words of a spelled-out run: single separators dropped, longer gaps kept as one space."""
    if run.count(" ") * 2 >= len(run) - 1:  # spaces separate the letters: a wider gap splits words
        return re.sub(r" {2,}", "\0", run).replace(" ", "").replace("\0", " ")
    return re.sub(r"\s+", "\0", run).translate(_DROP_MARKS).replace("\0", " ")


# --- leetspeak: "1gn0r3 4ll pr3v10u5 1n5truct10n5" ------------------------------------------------------

_LEET = str.maketrans("0134578@$", "oieastbas")
_LEET_WORD = re.compile(r"[A-Za-z0-9@$]*[A-Za-z][A-Za-z0-9@$]*")
_LEET_CHARS = re.compile(r"[0134578@$]")
# One word with a digit is everyday (k8s, utf8, s3); a leet phrase has several. The first look:
# two letters against a digit.
_LEET_WORDS_NEEDED = 2
_LEET_GATE = re.compile(r"[A-Za-z][0134578@$]|[0134578@$][A-Za-z]")

# --- base64: an instruction encoded so that no word of it shows ----------------------------------------

_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")
_REACH = 400  # characters of context around a disguise that the rules see with it


def disguised_issues(text: str, find: Finder) -> Iterator[Found]:
    """Findings of `find` in the decoded views of `text`, on the spans of the disguises."""
    yield from _spelled_out(text, find)
    yield from _leetspeak(text, find)
    yield from _base64(text, find)


def _spelled_out(text: str, find: Finder) -> Iterator[Found]:
    if _SPELLED_GATE.search(text) is None:
        return
    runs = list(_SPELLED.finditer(text))
    if not runs:
        return
    # The view: each run replaced by its words; `spans` remembers where each one went.
    parts: list[str] = []
    spans: list[tuple[int, int, int, int]] = []  # view start, view end, original start, end
    last = 0
    size = 0
    for run in runs:
        parts.append(text[last : run.start()])
        size += run.start() - last
        words = _squeezed(run.group())
        spans.append((size, size + len(words), run.start(), run.end()))
        parts.append(words)
        size += len(words)
        last = run.end()
    parts.append(text[last:])
    view = "".join(parts)
    for rule, start, end in _find_near(view, [(vs, ve) for vs, ve, _, _ in spans], find):
        hit = [(s, e) for vs, ve, s, e in spans if start < ve and vs < end]
        if hit:
            yield rule, hit[0][0], hit[-1][1]


def _leetspeak(text: str, find: Finder) -> Iterator[Found]:
    if _LEET_CHARS.search(text) is None or len(_LEET_GATE.findall(text)) < _LEET_WORDS_NEEDED:
        return
    changed: list[tuple[int, int]] = []

    def read(word: re.Match[str]) -> str:
        if _LEET_CHARS.search(word.group()) is None:
            return word.group()
        changed.append(word.span())
        return word.group().translate(_LEET)

    view = _LEET_WORD.sub(read, text)  # the same length: spans in the view are spans in the text
    if len(changed) < _LEET_WORDS_NEEDED:
        return
    for rule, start, end in _find_near(view, changed, find):
        if any(start < e and s < end for s, e in changed):
            yield rule, start, end


def _find_near(view: str, spans: list[tuple[int, int]], find: Finder) -> Iterator[Found]:
    """`find` on the stretches of `view` around `spans` (sorted), offsets into `view`: a rule's
    phrase is a sentence long, so a long text is not scanned whole again for a few disguises."""
    stretches: list[list[int]] = []
    for start, end in spans:
        lo, hi = max(0, start - _REACH), min(len(view), end + _REACH)
        if stretches and lo <= stretches[-1][1]:
            stretches[-1][1] = max(stretches[-1][1], hi)
        else:
            stretches.append([lo, hi])
    for lo, hi in stretches:
        for rule, start, end in find(view[lo:hi]):
            yield rule, start + lo, end + lo


def _base64(text: str, find: Finder) -> Iterator[Found]:
    """Every blob is looked at (a cap would let junk blobs shield a real one): what is decoded is
    shorter than the text, and binary data is dropped before the rules see it."""
    for blob in _BASE64.finditer(text):
        decoded = _decoded(blob.group())
        if decoded is None:
            continue
        found = find(decoded)
        if found:
            yield found[0][0], blob.start(), blob.end()


def _decoded(blob: str) -> str | None:
    """The text a base64 token stands for, when it is words (not a key, a hash or binary data)."""
    raw = blob.rstrip("=")
    padded = raw + "=" * (-len(raw) % 4)
    try:
        data = (
            base64.urlsafe_b64decode(padded)
            if "-" in raw or "_" in raw
            else base64.b64decode(padded, validate=True)
        )
        decoded = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
    if " " not in decoded or printable < len(decoded) * 0.95:
        return None
    return decoded
