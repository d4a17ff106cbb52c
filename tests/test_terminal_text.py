"""terminal_text: control, bidi and hidden characters are shown as escapes, everything else as it is."""

from __future__ import annotations

import io
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from my_agent_core.terminal_text import VisibleStream, visible, visible_output

#: What a hostile text uses to drive a terminal or to spoof what it shows.
HOSTILE = {
    "erase line and return": ("touch PWNED\x1b[2K\rpytest -q", "touch PWNED\\x1b[2K\\rpytest -q"),
    "cursor up": ("a\x1b[1Ab", "a\\x1b[1Ab"),
    "OSC 52 clipboard": ("\x1b]52;c;dG91Y2ggUFdORUQ=\x07", "\\x1b]52;c;dG91Y2ggUFdORUQ=\\x07"),
    "OSC title, ST end": ("\x1b]0;owned\x1b\\", "\\x1b]0;owned\\x1b\\"),
    "bell": ("ding\x07", "ding\\x07"),
    "backspaces": ("rm -rf /\x08\x08\x08\x08\x08\x08\x08\x08ls", "rm -rf /" + "\\x08" * 8 + "ls"),
    "carriage return": ("evil\rgood", "evil\\rgood"),
    "C1 CSI": ("x\x9b2Ky", "x\\x9b2Ky"),
    "C1 OSC": ("\x9d52;c;AAAA\x9c", "\\x9d52;c;AAAA\\x9c"),
    "NUL, DEL": ("a\x00b\x7fc", "a\\x00b\\x7fc"),
    "bidi override": ("pytest -q\u202e#DEWNP hcuot", "pytest -q\\u202e#DEWNP hcuot"),
    "bidi isolate": ("\u2066ls\u2069", "\\u2066ls\\u2069"),
    "LRM / RLM": ("a\u200eb\u200fc", "a\\u200eb\\u200fc"),
    "line separator": ("one\u2028two", "one\\u2028two"),
    "lone zero width joiner": ("py\u200dtest", "py\\u200dtest"),
    "tag characters": ("ok\U000e0041\U000e0042", "ok\\U000e0041\\U000e0042"),
    "BOM, word joiner": ("\ufeffa\u2060b", "\\ufeffa\\u2060b"),
    "vertical tab, form feed": ("a\x0bb\x0cc", "a\\x0bb\\x0cc"),
    "lone surrogate": ("bad\udcff", "bad\\udcff"),
}

#: Their benign twins: text a person writes, which must come out exactly as it went in.
BENIGN = [
    "plain ASCII: pytest -q && echo ok ~ [] {} \\ done",
    "tab\tand\nnewline",
    "中文 日本語 한국어 Ελληνικά кириллица café naïve",
    "emoji 👍🏽 family 👨\u200d👩\u200d👧 heart on fire ❤\ufe0f\u200d🔥 keycap 1\ufe0f\u20e3",
    "flag of Scotland 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
    "Persian ZWNJ: می\u200cخواهم",
    "Thai with ZWSP: ภาษา\u200bไทย",
    "right-to-left text without controls: שלום עולם مرحبا",
    "spaces: no-break\u00a0space, ideographic\u3000space",
    "a literal backslash-x: \\x1b stays as typed",
]


def drives_terminal(text: str) -> list[str]:
    """The characters of `text` a terminal would act on or that reorder or hide what it shows."""
    contextual = "\u200b\u200c\u200d" + "".join(map(chr, range(0xE0020, 0xE0080)))
    return [
        ch
        for ch in text
        if (ch < " " and ch not in "\t\n")
        or "\x7f" <= ch <= "\x9f"
        or (unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Cs") and ch not in contextual)
    ]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_sequence_is_shown_not_obeyed(name: str) -> None:
    raw, shown = HOSTILE[name]
    assert visible(raw) == shown
    assert drives_terminal(visible(raw)) == []


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_text_is_kept_as_it_is(text: str) -> None:
    assert visible(text) == text


def test_a_joiner_is_judged_by_its_neighbours() -> None:
    assert visible("👨\u200d👩") == "👨\u200d👩"  # joins two emoji
    assert visible("rm\u200d -rf") == "rm\\u200d -rf"  # hides inside a word
    assert visible("🏴\U000e0067\U000e007f") == "🏴\U000e0067\U000e007f"  # a flag's tags
    assert visible("x\U000e0067\U000e007f") == "x\\U000e0067\\U000e007f"  # smuggled ASCII


@given(st.text())
def test_nothing_that_drives_a_terminal_survives(text: str) -> None:
    shown = visible(text)
    controls = [ch for ch in shown if ch not in "\t\n" and (ch < " " or "\x7f" <= ch <= "\x9f")]
    assert controls == [], repr(shown)
    assert not any("\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069" for ch in shown)
    assert visible(shown) == shown  # shown once is shown for good: wrapping twice is harmless


#: Not controls, yet hidden when alone (the scanner's judgement): variation selectors with no base,
#: Hangul fillers that draw as blank.
_HIDDEN_WHEN_ALONE = (
    "".join(map(chr, range(0xFE00, 0xFE10)))
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
    + "\u3164\uffa0"
)


@given(
    st.text(
        st.characters(
            blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"),
            blacklist_characters=_HIDDEN_WHEN_ALONE,
        )
    )
)
def test_text_without_controls_is_unchanged(text: str) -> None:
    assert visible(text) == text


def test_a_variation_selector_needs_its_base() -> None:
    assert visible("\u2764\ufe0f") == "\u2764\ufe0f"
    assert visible(" \ufe0f") == " \\ufe0f"


def test_a_stream_joins_an_emoji_split_across_writes() -> None:
    sink = io.StringIO()
    stream = VisibleStream(sink)
    for piece in ("family 👨", "\u200d", "👩\u200d", "👧 ok\n", "bad\u200d", "\n"):
        stream.write(piece)
    stream.write("\x1b[2K")
    stream.close()
    assert sink.getvalue() == "family 👨\u200d👩\u200d👧 ok\nbad\\u200d\n\\x1b[2K"


def test_a_trailing_joiner_is_released_at_the_end() -> None:
    sink = io.StringIO()
    stream = VisibleStream(sink)
    stream.write("end\u200d")
    assert sink.getvalue() == "end"  # held: it is invisible, and its neighbour may follow
    stream.release()
    assert sink.getvalue() == "end\\u200d"


def test_visible_output_wraps_and_restores_the_standard_streams(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    before = sys.stdout, sys.stderr
    with visible_output():
        print("out \x1b[31mred")
        print("err \x07", file=sys.stderr)
        with visible_output():  # nested: not wrapped twice, not closed early
            print("inner \x1b")
        print("still \x1b")
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert captured.out == "out \\x1b[31mred\ninner \\x1b\nstill \\x1b\n"
    assert captured.err == "err \\x07\n"
    with visible_output(stdout=False):
        print("protocol \x1b")  # a command that speaks a protocol on stdout keeps it raw
    assert capsys.readouterr().out == "protocol \x1b\n"
