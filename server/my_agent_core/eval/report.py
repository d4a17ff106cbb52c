"""The eval's three outputs: the JSON object, the terminal tables, and the self-contained HTML report.

Every piece of text in the HTML report that came from a model, a scenario or a file is escaped
(`html.escape`), the page loads nothing from anywhere (inline CSS, no scripts) and its Content
Security Policy forbids scripts and remote loads anyway, so a report can be opened in a browser or
an editor's webview whatever a model wrote.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from html import escape
from typing import Any

from .runner import CaseResult, SessionLog
from .scenario import CATEGORIES

__all__ = ["categories", "html_report", "summary", "tables"]


def categories(results: Sequence[CaseResult]) -> dict[str, dict[str, int]]:
    """`{category: {"passed", "total"}}`: the shipped categories first, in their order."""
    names = [c for c in CATEGORIES if any(r.scenario.category == c for r in results)]
    names += sorted({r.scenario.category for r in results} - set(names))
    return {
        name: {
            "passed": sum(r.passed for r in results if r.scenario.category == name),
            "total": sum(r.scenario.category == name for r in results),
        }
        for name in names
    }


def summary(model: str, results: Sequence[CaseResult]) -> dict[str, Any]:
    """The object `--json` prints: `{"model", "categories", "cases"}` and nothing else."""
    return {
        "model": model,
        "categories": categories(results),
        "cases": [
            {
                "id": r.scenario.id,
                "category": r.scenario.category,
                "passed": r.passed,
                "why": r.why,
            }
            for r in results
        ],
    }


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def tables(model: str, results: Sequence[CaseResult], *, width: int = 100) -> str:
    """A table per category (its cases: pass or fail, cache hit rate, why it failed), then the
    totals per category."""
    by_category = categories(results)
    id_width = max((len(r.scenario.id) for r in results), default=10)
    lines = [f"my-agent eval · model {model} · {len(results)} scenarios", ""]
    for name, counts in by_category.items():
        lines.append(f"{name}  {counts['passed']}/{counts['total']}")
        for r in (r for r in results if r.scenario.category == name):
            mark = "PASS" if r.passed else "FAIL"
            head = f"  {mark}  {r.scenario.id:<{id_width}}  cache {rate(r.cache_hit_rate):>4}"
            why = "" if r.passed else "  " + _one_line(r.why, max(20, width - len(head) - 2))
            lines.append(head + why)
        lines.append("")
    name_width = max([len("category"), *(len(n) for n in by_category)])
    lines.append(f"{'category':<{name_width}}  passed")
    for name, counts in by_category.items():
        lines.append(f"{name:<{name_width}}  {counts['passed']:>3}/{counts['total']}")
    passed = sum(r.passed for r in results)
    lines.append(f"{'total':<{name_width}}  {passed:>3}/{len(results)}")
    return "\n".join(line.rstrip() for line in lines)


# --------------------------------------------------------------------------------------------- HTML

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1b1b;background:#fff;max-width:1100px}
h1{font-size:20px}h2{font-size:17px;margin-top:28px}h3{font-size:15px;margin:0}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.pass{color:#116b11;font-weight:600}.fail{color:#b00020;font-weight:600}
.case{border:1px solid #ddd;border-radius:6px;padding:10px 14px;margin:12px 0}
.why{margin:6px 0}.msg{border-left:3px solid #ccc;padding:2px 10px;margin:6px 0}
.user{border-color:#3366cc}.assistant{border-color:#2e8b57}.tool{border-color:#999}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:6px;margin:4px 0}
.muted{color:#666}
@media (prefers-color-scheme: dark){body{background:#1e1e1e;color:#ddd}pre{background:#2a2a2a}
td,th,.case{border-color:#444}.pass{color:#6c6}.fail{color:#f77}.muted{color:#999}}
"""


def html_report(
    model: str, results: Sequence[CaseResult], *, when: datetime.datetime | None = None
) -> str:
    """The whole report as one HTML page (no external assets, no scripts)."""
    when = when or datetime.datetime.now().astimezone()
    counts = categories(results)
    passed = sum(r.passed for r in results)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>my-agent eval · {escape(model)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Memory eval · model {escape(model)}</h1>",
        f'<p class="muted">{escape(when.strftime("%Y-%m-%d %H:%M %Z"))} · {passed}/{len(results)}'
        " scenarios passed · scored by deterministic checks, no model as judge</p>",
        "<table><tr><th>category</th><th>passed</th></tr>",
    ]
    for name, c in counts.items():
        parts.append(f"<tr><td>{escape(name)}</td><td>{c['passed']}/{c['total']}</td></tr>")
    parts.append("</table>")
    for name in counts:
        parts.append(f"<h2>{escape(name)}</h2>")
        parts.extend(_case(r) for r in results if r.scenario.category == name)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _case(result: CaseResult) -> str:
    s = result.scenario
    mark = '<span class="pass">PASS</span>' if result.passed else '<span class="fail">FAIL</span>'
    out = [
        f'<section class="case" id="{escape(s.id)}">',
        f"<h3>{mark} {escape(s.id)} <span class='muted'>· {escape(s.lang)}</span></h3>",
        f"<p>{escape(s.title)}</p>",
        f'<p class="why"><b>Why:</b> {escape(result.why)}</p>',
        f"<p class='muted'>prompt-cache hit rate {escape(rate(result.cache_hit_rate))} · "
        f"{sum(log.prompt_tokens for log in result.sessions)} prompt tokens · "
        f"{result.seconds:.1f} s</p>",
        "<table><tr><th>check</th><th>result</th><th>why</th></tr>",
    ]
    for check in result.checks:
        label = check.check.why or check.check.kind
        status = "pass" if check.passed else "fail"
        out.append(
            f"<tr><td>{escape(label)}</td><td class='{status}'>{status}</td>"
            f"<td>{escape(check.why)}</td></tr>"
        )
    out.append("</table>")
    if result.error is not None:
        out.append(f"<p class='fail'>The run stopped: {escape(result.error)}</p>")
    for n, log in enumerate(result.sessions, start=1):
        out.append(_session(n, log))
    out.append(_memory_files(result))
    out.append("</section>")
    return "\n".join(out)


def _session(number: int, log: SessionLog) -> str:
    out = [
        f"<details open><summary>Session {number} · cache {escape(rate(_session_rate(log)))}"
        "</summary>",
        "<details><summary class='muted'>system prompt</summary>",
        f"<pre>{escape(log.system_prompt)}</pre></details>",
    ]
    for message in log.messages:
        out.append(_message(message))
    out.append("</details>")
    return "\n".join(out)


def _session_rate(log: SessionLog) -> float | None:
    if log.cached_tokens is None or not log.reported_prompt_tokens:
        return None
    return log.cached_tokens / log.reported_prompt_tokens


def _message(message: dict[str, Any]) -> str:
    role = str(message.get("role", ""))
    css = role if role in ("user", "assistant", "tool") else "tool"
    out = [f'<div class="msg {css}"><b>{escape(role)}</b>']
    content = message.get("content")
    if isinstance(content, str) and content:
        out.append(f"<pre>{escape(content)}</pre>")
    elif content is not None and not isinstance(content, str):
        out.append(f"<pre>{escape(json.dumps(content, ensure_ascii=False))}</pre>")
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            function = {}
        name, arguments = str(function.get("name", "")), str(function.get("arguments", ""))
        out.append(f"<pre>→ {escape(name)} {escape(arguments)}</pre>")
    out.append("</div>")
    return "".join(out)


def _memory_files(result: CaseResult) -> str:
    out = ["<details><summary>Memory after the run</summary>"]
    for name, entries in result.outcome.after.items():
        before = result.outcome.before.get(name, [])
        out.append(
            f"<p><b>{escape(name)}</b> ({len(before)} entries before, {len(entries)} after)</p>"
        )
        text = "\n§\n".join(entries) if entries else "(empty)"
        out.append(f"<pre>{escape(text)}</pre>")
    out.append("</details>")
    return "\n".join(out)
