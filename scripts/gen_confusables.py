"""Generate `server/my_agent_core/memory/confusables_data.py` from Unicode's confusables (UTS #39).

The scanner folds look-alike letters to ASCII before matching; the table it uses is data, not a
hand-typed list, so it comes from Unicode's own confusables file. By default the data shipped in the
PyPI package `confusable-homoglyphs` (a test dependency; its JSON is generated from Unicode's
confusables.txt) is read; Unicode's confusables.txt itself can be passed with `--source`.

Only single code points whose prototype is printable ASCII are kept. A prototype that is several ASCII
characters but the skeleton of ONE ASCII character (`m` -> `rn`) is replaced by that character, so a
look-alike of `m` folds to `m`, not `rn`; where several ASCII characters share a skeleton (`l`, `I`,
`1`), digits read as digits and capitals as the capital. Values are lowercase, as `fold` casefolds.

Run: .venv/bin/python scripts/gen_confusables.py [--source confusables.txt] [--check]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.resources
import json
import re
import sys
import unicodedata
from pathlib import Path

TARGET = Path(__file__).resolve().parents[1] / "server/my_agent_core/memory/confusables_data.py"
PACKAGE = "confusable-homoglyphs"

_LINE = re.compile(r"^([0-9A-F]{4,6})\s*;\s*([0-9A-F ]+?)\s*;\s*MA\b")
_VERSION = re.compile(r"^#\s*Version:\s*(\S+)", re.MULTILINE)


def packaged_source() -> tuple[dict[str, str], str]:
    """source -> prototype from the `confusable-homoglyphs` data, and a version label."""
    files = importlib.resources.files("confusable_homoglyphs")
    matrix = json.loads((files / "confusables.json").read_text(encoding="utf-8"))
    version = f"{PACKAGE} {importlib.metadata.version(PACKAGE)}"
    return parse_matrix(matrix), version


def parse_matrix(matrix: dict[str, list[dict[str, str]]]) -> dict[str, str]:
    """source -> prototype from a confusables matrix (each line of confusables.txt both ways).

    UTS #39 prototypes are fixed points (a prototype is never itself a source), so a source has
    exactly one entry, its prototype, while a prototype lists the sources that read as it. Only
    printable-ASCII prototypes matter here.
    """
    table: dict[str, str] = {}
    for source, entries in matrix.items():
        if len(source) != 1 or len(entries) != 1:
            continue
        proto = entries[0]["c"]
        if not _printable_ascii(proto):
            continue
        if source.isascii() and len(matrix.get(proto, ())) <= 1:
            continue  # a lone ASCII pair: which one is the prototype cannot be told
        table[source] = proto
    return table


def parse(text: str) -> dict[str, str]:
    """source character -> prototype string, from Unicode's confusables.txt."""
    table: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            source = chr(int(m.group(1), 16))
            table[source] = "".join(chr(int(cp, 16)) for cp in m.group(2).split())
    return table


def _printable_ascii(s: str) -> bool:
    return bool(s) and all(0x20 < ord(c) < 0x7F for c in s)


def _reading(source: str, proto: str, readers: set[str]) -> str:
    """The ASCII character (or string) a reader sees in `source`, whose skeleton is `proto`.

    Several ASCII characters can share a skeleton (`l`, `I`, `1` and `|` all have `l`): a digit is
    read as the ASCII digit of its value, a capital as the capital letter, a single character whose
    skeleton is several (`rn`) as the one character with that skeleton (`m`).
    """
    digit = unicodedata.digit(source, None)
    if digit is not None and str(digit) in readers:
        return str(digit)
    capitals = sorted(r for r in readers if r.isupper())
    if source.isupper() and len(capitals) == 1:
        return capitals[0]
    singles = sorted(r for r in readers if len(r) == 1)
    if len(proto) > 1 and len(singles) == 1:
        return singles[0]
    return proto


def ascii_table(prototypes: dict[str, str]) -> dict[int, str]:
    """Non-ASCII source code point -> lowercase printable ASCII it reads as."""
    readers: dict[str, set[str]] = {}
    for source, proto in prototypes.items():
        if source.isascii():
            readers.setdefault(proto, {proto} if len(proto) == 1 else set()).add(source)
    table: dict[int, str] = {}
    for source, proto in sorted(prototypes.items()):
        if source.isascii():
            continue
        reading = _reading(source, proto, readers.get(proto, {proto}))
        if _printable_ascii(reading):
            table[ord(source)] = reading.lower()
    return table


def _quoted(value: str) -> str:
    """The literal as ruff format writes it: double quotes unless that needs more escapes."""
    escaped = value.replace("\\", "\\\\")
    if '"' in value and "'" not in value:
        return "'" + escaped + "'"
    return '"' + escaped.replace('"', '\\"') + '"'


def render(table: dict[int, str], version: str) -> str:
    lines = [
        f'"""Look-alike characters -> the ASCII they read as (Unicode confusables, {version}).',
        "",
        "GENERATED by scripts/gen_confusables.py; do not edit by hand.",
        '"""',
        "",
        f'UNICODE_CONFUSABLES_VERSION = "{version}"',
        "",
        "CONFUSABLES: dict[int, str] = {",
    ]
    lines += [f"    0x{cp:04X}: {_quoted(value)}," for cp, value in sorted(table.items())]
    lines += ["}", ""]
    return "\n".join(lines)


def generate(text: str) -> str:
    """The module text for a confusables.txt."""
    m = _VERSION.search(text)
    return render(ascii_table(parse(text)), f"confusables.txt {m.group(1) if m else 'unknown'}")


def generate_packaged() -> str:
    """The module text for the packaged data (what is committed)."""
    prototypes, version = packaged_source()
    return render(ascii_table(prototypes), version)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="Unicode's confusables.txt (default: packaged)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is out of date")
    args = parser.parse_args()
    if args.source:
        module = generate(args.source.read_text(encoding="utf-8-sig"))
    else:
        module = generate_packaged()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != module:
            print(f"{TARGET} is out of date: run scripts/gen_confusables.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(module, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
