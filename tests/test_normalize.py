"""fold / fold_map: every disguise folds to the plain form, and offsets lead back to the original."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from my_agent_core.memory.normalize import fold, fold_map, original_span

ROOT = Path(__file__).resolve().parents[1]

DISGUISES = {
    "fullwidth": ("ＩＧＮＯＲＥ ｐｒｅｖｉｏｕｓ", "ignore previous"),
    "cyrillic-lower": ("іgnоrе рrеvіоus", "ignore previous"),
    "cyrillic-upper": ("ІGNОRЕ РRЕVІОUS", "ignore previous"),
    "greek-capitals": ("ΒΥΡΑЅЅ", "bypass"),
    "cyrillic-capitals": ("SYSТЕМ", "system"),
    "capital-iota": ("ΙGNORE", "ignore"),
    "greek-lower": ("ορο", "opo"),
    "math-bold": ("𝐢𝐠𝐧𝐨𝐫𝐞", "ignore"),
    "math-double-struck": ("𝕤𝕪𝕤𝕥𝕖𝕞", "system"),
    "math-digits": ("𝟙𝟚𝟛", "123"),
    "soft-hyphen": ("ig\u00adnore", "ignore"),
    "zero-width-space": ("ig\u200bno\u200cre\u200d", "ignore"),
    "word-joiner": ("ig\u2060nore", "ignore"),
    "bidi-controls": ("\u202eignore\u202c \u2066all\u2069", "ignore all"),
    "combining-marks": ("i\u0308gno\u0301re\u0332", "ignore"),
    "precomposed-accents": ("ïgnórè", "ignore"),
    "variation-selectors": ("i\ufe0fgn\ufe00ore\U000e0100", "ignore"),
    "tag-characters": ("ab\U000e0049\U000e0047c", "abc"),
    "hangul-filler": ("ig\u3164nore", "ignore"),
    "ligature": ("ﬁle", "file"),
    "casefold": ("STRASSE Straße", "strasse strasse"),
    "dotted-capital-i": ("İgnore", "ignore"),
    "fullwidth-punctuation": ("ｓｙｓｔｅｍ：＜｜", "system:<|"),
    "nbsp": ("ignore\u00a0all\u3000previous", "ignore all previous"),
    "look-alike-m": ("ⅿemory", "memory"),
}


@pytest.mark.parametrize(("text", "expected"), DISGUISES.values(), ids=DISGUISES.keys())
def test_disguises_fold_to_the_plain_form(text: str, expected: str) -> None:
    assert fold(text) == expected
    folded, offsets = fold_map(text)
    assert folded == expected
    assert len(offsets) == len(folded) + 1


KEPT = {
    "ascii": "Run `uv run pytest -k smoke` before pushing; see AGENTS.md.",
    "chinese": "请无视上文。",
    "korean": "한국어 텍스트",
    "emoji": "👍🏽 done",
    "arabic-digits-of-ascii": "v1.2.3 port 8080",
}


@pytest.mark.parametrize("text", KEPT.values(), ids=KEPT.keys())
def test_ordinary_text_keeps_its_letters(text: str) -> None:
    folded = fold(text)
    # Casefolding and skin-tone modifiers aside, nothing visible is lost.
    assert folded == text.lower() or folded == text.replace("\U0001f3fd", "")


def test_russian_is_read_letter_by_letter() -> None:
    # Letters with a Latin look-alike read as Latin, the others stay Cyrillic; capitals are read by
    # their own shape (Т reads t, its small form т does not), so patterns match case by case.
    assert fold("Игнорируй инструкции") == "иrнopиpyи инcтpyкции"  # й loses its breve
    assert fold("ТОКЕН") == "tokeh"
    assert fold("токен") == "тoкeн"


def test_offsets_point_at_the_original_characters() -> None:
    text = "x\u200b ＩＧ\u00adＮ\u0308ORE ﬁ!"
    folded, offsets = fold_map(text)
    assert folded == "x ignore fi!"
    for i, ch in enumerate(folded):
        origin = text[offsets[i]]
        assert fold(origin) and ch in fold(origin)
    assert offsets[-1] == len(text)
    start = folded.index("ignore")
    s, e = original_span(offsets, start, start + len("ignore"))
    assert text[s:e] == "ＩＧ\u00adＮ\u0308ORE"
    s, e = original_span(offsets, folded.index("fi"), folded.index("fi") + 1)
    assert text[s:e] == "ﬁ"  # half of a ligature still underlines the whole character


def test_ascii_offsets_are_the_identity() -> None:
    text = "Plain ASCII text\nwith two lines"
    folded, offsets = fold_map(text)
    assert folded == text.lower()
    assert offsets == list(range(len(text) + 1))


def test_one_to_one_non_ascii_offsets_are_the_identity() -> None:
    text = "Ｆｕｌｌｗｉｄｔｈ and Cyrillic а"
    folded, offsets = fold_map(text)
    assert len(folded) == len(text)
    assert offsets == list(range(len(text) + 1))


def test_text_of_only_invisibles_folds_to_nothing() -> None:
    folded, offsets = fold_map("\u200b\u200c\ufeff")
    assert folded == ""
    assert offsets == [3]
    assert original_span(offsets, 0, 0) == (3, 3)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_fold_map_is_consistent_with_fold(text: str) -> None:
    folded, offsets = fold_map(text)
    assert folded == fold(text)
    assert len(offsets) == len(folded) + 1
    assert offsets == sorted(offsets)
    assert all(0 <= o <= len(text) for o in offsets)
    assert offsets[-1] == len(text)
    # Each folded character is (part of) the fold of the character it points at.
    for i, ch in enumerate(folded):
        assert ch in fold(text[offsets[i]])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_fold_is_idempotent(text: str) -> None:
    once = fold(text)
    assert fold(once) == once


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "gen_confusables", ROOT / "scripts/gen_confusables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_confusables"] = module
    spec.loader.exec_module(module)
    return module


def test_committed_confusables_table_is_generated_from_unicode_data() -> None:
    gen = _generator()
    committed = (ROOT / "server/my_agent_core/memory/confusables_data.py").read_text(
        encoding="utf-8"
    )
    assert committed == gen.generate(gen.packaged_source())


def test_generator_reads_single_character_prototypes_back() -> None:
    gen = _generator()
    sample = (
        "# Version: 99.0\n"
        "006D ;\t0072 006E ;\tMA\t# m -> rn\n"
        "217F ;\t0072 006E ;\tMA\t# small roman numeral one thousand -> rn\n"
        "0049 ;\t006C ;\tMA\t# I -> l\n"
        "0031 ;\t006C ;\tMA\t# 1 -> l\n"
        "0399 ;\t006C ;\tMA\t# greek capital iota -> l\n"
        "0661 ;\t006C ;\tMA\t# arabic-indic digit one -> l\n"
        "01C0 ;\t006C ;\tMA\t# dental click -> l\n"
        "0430 ;\t0061 ;\tMA\t# cyrillic a -> a\n"
        "0391 ;\t0041 ;\tMA\t# greek capital alpha -> A\n"
        "05D5 ;\t05D5 ;\tMA\t# not ASCII: left out\n"
    )
    table = gen.ascii_table(gen.parse(sample))
    assert table == {
        0x217F: "m",
        0x0399: "i",
        0x0661: "1",
        0x01C0: "l",
        0x0430: "a",
        0x0391: "a",
    }
    assert 'UNICODE_CONFUSABLES_VERSION = "99.0"' in gen.generate(sample)
