"""Searches a person makes of an archive, for both archive backends: a query of several words finds the
items holding all of them first, and a word finds its other forms ("slow" -> "slower", "tests" ->
"test"), while a longer word never matches a shorter one it merely starts like ("string" is not
"strict") and an exact form ranks above another form.

`ARCHIVED` is what gets archived (as turns); `SEARCHES` are (query, groups of markers): every item of
a group is found, and ranks above every item of the next group. `ranked_as_expected` checks one.
"""

from __future__ import annotations

ARCHIVED: list[tuple[str, str]] = [
    ("Why is everything so slow today?", "The VPN is slow again; try the office network."),
    ("The deploy suite of scripts, where is it?", "ops/deploy: the suite of shell scripts."),
    ("Can you write a test for the parser?", "Added tests/test_parser.py with one test."),
    ("Is the nightly build slow?", "A little: the nightly suite takes 20 minutes."),
    ("The tests got slower, why?", "The whole suite is slower since the fixtures moved to disk."),
    ("What is the testament format?", "The release testament lists every signed artifact."),
    ("Strict mode?", "mypy runs in strict mode in CI."),
    ("How do we render a string?", "Through render_text, which escapes the string."),
]

SEARCHES: list[tuple[str, list[list[str]]]] = [
    # every word, in other forms (tests, slower), beats items holding one or two of them exactly
    (
        "slow test suite",
        [["fixtures moved to disk"], ["VPN is slow", "nightly suite", "test_parser"]],
    ),
    # one word finds its other forms too, after its exact form
    ("slow", [["VPN is slow", "nightly suite"], ["fixtures moved to disk"]]),
    ("tests", [["test_parser.py", "fixtures moved to disk"], ["testament"]]),
    ("test", [["test_parser.py"], ["fixtures moved to disk", "testament"]]),
    ("string", [["escapes the string"]]),
]

NOT_FOUND: list[tuple[str, str]] = [("string", "strict mode"), ("slowness", "VPN is slow")]
"""(query, marker) pairs that must NOT match: a word never matches words it is longer than."""


def ranked_as_expected(texts: list[str], groups: list[list[str]]) -> str | None:
    """None when `texts` (search results, best first) meet `groups`; else what is wrong."""

    def position(marker: str) -> int | None:
        return next((n for n, text in enumerate(texts) if marker in text), None)

    previous_worst = -1
    for group in groups:
        places = {marker: position(marker) for marker in group}
        missing = [marker for marker, place in places.items() if place is None]
        if missing:
            return f"not found: {missing} in {texts}"
        best = min(p for p in places.values() if p is not None)
        if best < previous_worst:
            return f"{group} should come after the group before it in {texts}"
        previous_worst = max(p for p in places.values() if p is not None)
    return None
