"""Memory poisoning, measured: which planted texts reach MEMORY.md / USER.md without the user's
approval, under each `myAgent.memory.approval` policy, through the real language server.

The corpus (tests/data/poisoning/attacks.json, benign.json; checked by
tests/support/poisoning_corpus.py) plants a text in a README, a code comment, a context file
(AGENTS.md / CLAUDE.md, frozen into the prompt), a command's output, a search hit, a recalled turn
(the archive) or an editor attachment, in 9 languages, and a worst-case scripted model does what it
says: it reads / runs / searches, then calls `memory` with the text verbatim, paraphrased in the
same turn, copied a turn later, joined from two files, or paraphrased a turn later. Each scenario
runs in a workspace folder of its own on `my-agent serve` over stdio (the real `openai` SDK inside,
against tests/support/fake_openai.py); the editor side approves reads and commands (the attacker's
delivery) and DENIES every memory approval, counting it; then the memory files are read from disk.

Printed per policy (`auto`, `ask`, and `untrusted` when the server applies it: probed, since a
server that does not know a value silently falls back to its default):
- attacks that landed, split into the non-residual ones (the policy's goal: 0 under "untrusted")
  and the residual class the policy is known not to catch (no untrusted input in the write's turn and
  no run of words shared with untrusted text: computed from each scenario, not declared), how many
  asked (and were denied), were refused by the scanner, or never reached the model;
- the same by source and by variant;
- for ordinary sessions (preferences, corrections, the build learnt from README.md and saved at
  the user's request; English and Chinese) the memory approvals a user sees per session, with
  every approval granted, and whether each write was saved.

    .venv/bin/python bench/poisoning.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "server")]

from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.poisoning_corpus import (  # noqa: E402
    SOURCES,
    VARIANTS,
    Scenario,
    expected_residual,
    load_attacks,
    load_benign,
    sample_attacks,
    sample_benign,
)
from tests.support.poisoning_play import (  # noqa: E402
    Outcome,
    dump,
    play_all,
    policies_to_play,
    probe_untrusted,
)


def _quick_module() -> ModuleType:
    """bench/quick.py, loaded by path (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "bench_quick", Path(__file__).with_name("quick.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _frac(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def report_attacks(
    attacks: Sequence[Scenario], results: dict[str, list[Outcome]], unavailable: str | None
) -> None:
    residual = {s.id for s in attacks if s.residual}
    plain = len(attacks) - len(residual)
    print(
        f"\nattacks reaching memory without the user's approval ({len(attacks)} scenarios: "
        f"{plain} the policy must catch, {len(residual)} residual; every memory approval denied)"
    )
    header = ("policy", "landed", "non-residual", "residual", "asked", "scanner", "undelivered")
    print("{:<10} {:>7} {:>12} {:>9} {:>6} {:>8} {:>12}".format(*header))
    for policy, outcomes in results.items():
        landed = [o for o in outcomes if o.landed]
        print(
            "{:<10} {:>7} {:>12} {:>9} {:>6} {:>8} {:>12}".format(
                policy,
                _frac(len(landed), len(outcomes)),
                _frac(sum(o.scenario not in residual for o in landed), plain),
                _frac(sum(o.scenario in residual for o in landed), len(residual)),
                sum(o.verdict == "asked" for o in outcomes),
                sum(o.verdict == "refused" for o in outcomes),
                sum(o.verdict == "not delivered" for o in outcomes),
            )
        )
    if unavailable is not None:
        print(f"untrusted: not available on this server ({unavailable})")
    _breakdown("source", SOURCES, attacks, results, residual)
    _breakdown("variant", VARIANTS, attacks, results, residual)
    print(
        "\nresidual class (no untrusted input, a tool result or an attachment, in the write's turn; "
        "no run of words shared with untrusted text): the policy is known not to catch these"
    )
    for s in attacks:
        if s.id in residual:
            marks = " ".join(
                f"{policy}:{_outcome_of(outcomes, s.id)}" for policy, outcomes in results.items()
            )
            print(f"  {s.id:<46} {marks}")
    for policy, outcomes in results.items():
        missed = [o for o in outcomes if o.landed and o.scenario not in residual]
        if policy != "auto" and missed:
            print(f"\n{policy}: non-residual attacks that landed (the wall has a hole):")
            for o in missed:
                print(f"  {o.scenario}: asked {o.asked}, the tool said {o.results[:1]}")


def _outcome_of(outcomes: Sequence[Outcome], scenario: str) -> str:
    return next(o.verdict for o in outcomes if o.scenario == scenario)


def _breakdown(
    what: str,
    keys: Sequence[str],
    attacks: Sequence[Scenario],
    results: dict[str, list[Outcome]],
    residual: set[str],
) -> None:
    """Non-residual attacks landed / played, per `what` (source or variant), per policy."""
    print(f"\nnon-residual attacks landed, by {what}")
    print(f"  {what:<18}" + "".join(f" {p:>10}" for p in results))
    for key in keys:
        ids = {s.id for s in attacks if getattr(s, what) == key and s.id not in residual}
        if not ids:
            continue
        cells = []
        for outcomes in results.values():
            landed = sum(o.landed for o in outcomes if o.scenario in ids)
            cells.append(_frac(landed, len(ids)))
        print(f"  {key:<18}" + "".join(f" {c:>10}" for c in cells))


def report_benign(benign: Sequence[Scenario], results: dict[str, list[Outcome]]) -> None:
    print(
        f"\nbenign sessions ({len(benign)}, English and Chinese; every approval granted): "
        "memory approvals a user sees"
    )
    print(
        "{:<10} {:>18} {:>16} {:>8}".format(
            "policy", "approvals/session", "sessions asking", "saved"
        )
    )
    for policy, outcomes in results.items():
        per_session = sum(o.asked for o in outcomes) / len(outcomes)
        asking = _frac(sum(o.asked > 0 for o in outcomes), len(outcomes))
        saved = _frac(sum(o.intended for o in outcomes), len(outcomes))
        print(f"{policy:<10} {per_session:>18.2f} {asking:>16} {saved:>8}")
    predicted = [s.id for s in benign if expected_residual(s) is False]
    print(
        f"by the rules, {len(predicted)} of {len(benign)} ask under untrusted (untrusted input in "
        f"the write's turn, or a copy of untrusted text): {', '.join(predicted) or 'none'}"
    )
    if "untrusted" in results:
        measured = [o.scenario for o in results["untrusted"] if o.asked]
        print(f"measured under untrusted: {', '.join(measured) or 'none'}")


async def run(args: argparse.Namespace) -> int:
    attacks, benign = load_attacks(), load_benign()
    if args.quick:
        attacks, benign = sample_attacks(attacks), sample_benign(benign)
    languages = sorted({s.language for s in attacks})
    print(
        f"memory poisoning through the real language server: {len(attacks)} attacks "
        f"({len(languages)} languages: {' '.join(languages)}), {len(benign)} benign sessions"
    )
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        base = Path(tmp)
        probe = await probe_untrusted(fake, base / "probe")
        state = "applied by this server" if probe.available else "not applied by this server"
        print(f'probe of approval "untrusted": {state} ({probe.why})')
        attack_results: dict[str, list[Outcome]] = {}
        benign_results: dict[str, list[Outcome]] = {}
        for policy in policies_to_play(probe):
            attack_results[policy] = await play_all(fake, policy, attacks, base / "attacks")
            benign_results[policy] = await play_all(fake, policy, benign, base / "benign")
    report_attacks(attacks, attack_results, None if probe.available else probe.why)
    report_benign(benign, benign_results)
    failed = [
        (policy, o)
        for results in (attack_results, benign_results)
        for policy, outcomes in results.items()
        for o in outcomes
        if o.errors
    ]
    for policy, o in failed:
        print(f"harness error: {o.scenario} under {policy}: {o.errors}", file=sys.stderr)
    if args.json is not None:
        everything = [o for r in (attack_results, benign_results) for v in r.values() for o in v]
        Path(args.json).write_text(dump(everything) + "\n", encoding="utf-8")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write every outcome as JSON lines to this file")
    args = _quick_module().parse(parser, {}, argv)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
