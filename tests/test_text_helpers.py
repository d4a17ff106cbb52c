"""`common_prefix` / `common_suffix` (memory/text.py) against a character-by-character reference:
they gallop and bisect with `startswith`/`endswith` at offsets, so every boundary of a span (the
first span, each doubling, the bisected one, a limit) is where an off-by-one would hide."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from my_agent_core.memory.text import common_prefix, common_suffix

#: Few letters, so long common runs are likely; a character outside the BMP and a CR/LF pair too.
ALPHABET = st.sampled_from(list("ab§\r\n🎉"))


def reference_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def with_edits(draw: st.DrawFn, base: str) -> str:
    chars = list(base)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(chars)))
        if chars and at < len(chars) and draw(st.booleans()):
            del chars[at]
        else:
            chars.insert(at, draw(ALPHABET))
    return "".join(chars)


@st.composite
def edited_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """A text and the same text after a few edits (spans of every size share long runs)."""
    base = draw(st.text(alphabet=ALPHABET, max_size=600))
    return base, with_edits(draw, base)


@given(edited_pairs(), st.booleans())
@settings(max_examples=400, deadline=None)
def test_prefix_and_suffix_match_the_reference(pair: tuple[str, str], swap: bool) -> None:
    a, b = pair[::-1] if swap else pair
    prefix = common_prefix(a, b)
    assert prefix == reference_prefix(a, b)
    assert common_suffix(a, b) == reference_prefix(a[::-1], b[::-1])
    left = min(len(a), len(b)) - prefix
    assert common_suffix(a, b, limit=left) == min(reference_prefix(a[::-1], b[::-1]), left)


def test_long_equal_runs_across_every_span_size() -> None:
    for n in (0, 1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 5000):
        same = "x" * n
        assert common_prefix(same, same) == n
        assert common_prefix(same + "a", same + "b") == n
        assert common_suffix("a" + same, "b" + same) == n
        assert common_suffix(same, same, limit=n // 2) == n // 2


def test_one_difference_at_every_position() -> None:
    """Whichever span or bisection step the difference falls in, it is found exactly."""
    n = 700  # the first spans: 64, 128, 256, 512 (ends at 64, 192, 448, 960)
    a = "x" * n
    for k in range(n):
        b = a[:k] + "y" + a[k + 1 :]
        assert (common_prefix(a, b), common_suffix(a, b)) == (k, n - 1 - k), k
        shorter = a[:k] + a[k + 1 :]  # a deletion: both answers can be right, the limit decides
        assert common_prefix(a, shorter) == n - 1
        assert common_suffix(a, shorter, limit=0) == 0
