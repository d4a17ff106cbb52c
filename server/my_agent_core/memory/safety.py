"""Scanner for memory content that would steer, leak or hide things once it is in a system prompt.

Memory is injected into every future session's system prompt, and a cloned repository can ship memory
files, so a memory entry is an attack surface. The scanner is deliberately conservative about false
positives that bit other agents: ZWJ inside emoji sequences, ZWNJ in Persian or Indic words, and entries
that merely mention `AGENTS.md` or a URL are all fine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SafetyIssue", "describe", "is_safe", "scan", "strip_invisible"]


@dataclass(frozen=True, slots=True)
class SafetyIssue:
    """One finding: `kind` (injection, exfiltration, persistence, execution, invisible), offsets."""

    kind: str
    message: str
    start: int
    end: int


_F = re.IGNORECASE | re.DOTALL

# (kind, message, pattern, triggers). Each pattern targets an instruction aimed at the model or a payload,
# not a topic; a rule runs only when one of its trigger substrings (lowercase) occurs, which keeps the
# scan cheap on ordinary text.
_RULES: list[tuple[str, str, re.Pattern[str], tuple[str, ...]]] = [
    (
        "injection",
        "tells the model to ignore its instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,30}?"
            r"\b(?:previous|prior|above|earlier|preceding|original|system|developer|your)\b[^.\n]{0,20}?"
            r"\b(?:instructions?|prompts?|rules|guidelines|directives|guardrails)\b",
            _F,
        ),
        ("ignore", "disregard", "forget", "override", "bypass"),
    ),
    (
        "injection",
        "tells the model to ignore its instructions",
        re.compile(
            r"(?:忽略|无视|忘记|忽视|不要理会)[^。\n]{0,6}(?:之前|以上|上面|先前|上述|前面|系统|原有|原来|你的)"
            r"[^。\n]{0,8}(?:指令|指示|提示词?|规则|设定|要求)",
            _F,
        ),
        ("忽略", "无视", "忘记", "忽视", "不要理会"),
    ),
    (
        "injection",
        "tries to switch the model into another role or mode",
        re.compile(
            r"\byou\s+are\s+now\b[^.\n]{0,40}?\b(?:dan|jailbr\w*|unrestricted|unfiltered|"
            r"developer\s+mode|no\s+longer\s+bound|free\s+of)\b|\b(?:enable|enter|activate)\s+"
            r"(?:developer|god|jailbreak|dan)\s+mode\b",
            _F,
        ),
        ("you are now", " mode"),
    ),
    (
        "injection",
        "fakes a prompt boundary or a chat-template token",
        re.compile(
            r"</?\s*(?:MEMORY_CONTEXT|system|system[-_ ]prompt|instructions?)\s*>|<\|(?:im_start|im_end|system|"
            r"endoftext|begin_of_text|start_header_id|eot_id)\|>|\[/?INST\]|<<\s*/?SYS\s*>>|"
            r"^\s*#{1,6}\s*(?:system|new\s+instructions)\s*:?\s*$",
            _F | re.MULTILINE,
        ),
        ("<", "[inst", "[/inst", "#"),
    ),
    (
        "injection",
        "asks the model to reveal or rewrite its system prompt",
        re.compile(
            r"\b(?:reveal|print|output|repeat|leak|show)\b[^.\n]{0,30}\b(?:your|the)\s+system\s+prompt\b",
            _F,
        ),
        ("system prompt",),
    ),
    (
        "exfiltration",
        "sends secrets or environment data somewhere",
        re.compile(
            r"\b(?:send|post|upload|forward|exfiltrate|transmit|email|leak)\b[^.\n]{0,60}?"
            r"(?:api[\s_-]?keys?|secrets?|credentials?|passwords?|tokens?|private\s+keys?|\.env\b|"
            r"env(?:ironment)?\s+variables?|~/\.ssh|id_rsa|\.aws)",
            _F,
        ),
        ("send", "post", "upload", "forward", "exfiltrat", "transmit", "email", "leak"),
    ),
    (
        "exfiltration",
        "ships secrets or environment data in a network command",
        re.compile(
            r"\b(?:curl|wget|nc|ncat|invoke-webrequest|fetch)\b[^\n]{0,200}?(?:\$\(\s*(?:env|printenv|cat)\b|"
            r"\$\{?[A-Z_]*(?:KEY|TOKEN|SECRET|PASSWORD)[A-Z_]*\}?|~/\.ssh|id_rsa|\.aws/credentials|/etc/passwd)",
            _F,
        ),
        ("curl", "wget", "nc", "invoke-webrequest", "fetch"),
    ),
    (
        "exfiltration",
        "renders a remote image whose URL carries data (a classic exfiltration channel)",
        re.compile(r"!\[[^\]\n]*\]\(\s*https?://[^)\s]*\?[^)\s]*=[^)\s]*\)", _F),
        ("![",),
    ),
    (
        "persistence",
        "plants something in a shell profile, crontab or SSH keys",
        re.compile(
            r"(?:>>?|\btee\b(?:\s+-a)?)\s*[\"']?(?:~|\$HOME|/root|/home/\w+)/\.(?:bashrc|zshrc|profile|bash_profile|"
            r"ssh/authorized_keys)|\bcrontab\s+-|\b(?:add|append|write|put|insert)\b[^.\n]{0,40}?\b(?:to|into|in)\s+"
            r"[\"'`]?(?:~/)?\.(?:bashrc|zshrc|profile|bash_profile|ssh/authorized_keys)\b",
            _F,
        ),
        ("bashrc", "zshrc", "profile", "authorized_keys", "crontab"),
    ),
    (
        "persistence",
        "tells the model to keep doing something hidden from the user",
        re.compile(
            r"\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+user|them|anyone)\b|"
            r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|notify|alert)\s+the\s+user\b|"
            r"\bhide\s+(?:this|it|that)\s+from\s+the\s+user\b|"
            r"\bnever\s+mention\s+(?:this|it|that)\s+to\s+the\s+user\b",
            _F,
        ),
        ("tell", "inform", "notify", "alert", "hide", "mention"),
    ),
    (
        "execution",
        "pipes a download straight into a shell",
        re.compile(r"\b(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b", _F),
        ("curl", "wget"),
    ),
]

# Bidi embeddings/overrides/isolates (Trojan Source) and zero-width characters with no legitimate role
# in memory text. LRM/RLM are left alone: RTL writers use them.
_ALWAYS_INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u2060-\u2064\u180e\ufeff]")
_ZW_JOINERS = re.compile("[\u200c\u200d]")
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")

_INVISIBLE_NAMES = {
    "\u200b": "ZERO WIDTH SPACE",
    "\u200c": "ZERO WIDTH NON-JOINER",
    "\u200d": "ZERO WIDTH JOINER",
    "\u2060": "WORD JOINER",
    "\ufeff": "ZERO WIDTH NO-BREAK SPACE",
    "\u180e": "MONGOLIAN VOWEL SEPARATOR",
}


def _is_pictographic(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2B00 <= cp <= 0x2BFF
        or 0x2190 <= cp <= 0x21FF
        or 0x2300 <= cp <= 0x23FF
        or cp in (0x00A9, 0x00AE, 0x203C, 0x2049, 0x2122, 0x2139, 0x3030, 0x303D)
    )


def _is_emoji_tail(ch: str) -> bool:
    """Characters that may stand between an emoji and a following ZWJ (VS16, skin tones, keycap)."""
    cp = ord(ch)
    return cp in (0xFE0F, 0xFE0E, 0x20E3) or 0x1F3FB <= cp <= 0x1F3FF


def _is_joining_script(ch: str) -> bool:
    """Scripts where ZWNJ/ZWJ shape words: Arabic (Persian, Urdu...), Syriac, Indic, Sinhala, Hebrew."""
    cp = ord(ch)
    return (
        0x0590 <= cp <= 0x08FF  # Hebrew, Arabic, Syriac, Thaana, NKo, Arabic ext.
        or 0x0900 <= cp <= 0x0DFF  # Devanagari .. Sinhala
        or 0x0F00 <= cp <= 0x0FFF  # Tibetan
        or 0x1000 <= cp <= 0x109F  # Myanmar
        or 0xFB1D <= cp <= 0xFDFF  # Hebrew / Arabic presentation forms
        or 0xFE70 <= cp <= 0xFEFC
    )


def _joiner_is_legitimate(text: str, i: int) -> bool:
    prev = text[i - 1] if i > 0 else ""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if (prev and _is_joining_script(prev)) or (nxt and _is_joining_script(nxt)):
        return True  # e.g. Persian ZWNJ, Malayalam chillu (virama + ZWJ) at a word's end
    if not prev or not nxt:
        return False
    if text[i] == "\u200d":
        j = i - 1
        while j > 0 and _is_emoji_tail(text[j]):
            j -= 1
        return _is_pictographic(text[j]) and _is_pictographic(nxt)
    return False


def _invisible_issues(text: str) -> list[SafetyIssue]:
    issues: list[SafetyIssue] = []
    for m in _ALWAYS_INVISIBLE.finditer(text):
        ch = m.group()
        name = _INVISIBLE_NAMES.get(ch, "bidirectional control")
        issues.append(
            SafetyIssue(
                "invisible",
                f"contains an invisible character U+{ord(ch):04X} ({name})",
                m.start(),
                m.end(),
            )
        )
    for m in _ZW_JOINERS.finditer(text):
        if not _joiner_is_legitimate(text, m.start()):
            ch = m.group()
            issues.append(
                SafetyIssue(
                    "invisible",
                    f"contains an invisible character U+{ord(ch):04X} ({_INVISIBLE_NAMES[ch]})",
                    m.start(),
                    m.end(),
                )
            )
    for m in _TAG_RUN.finditer(text):
        # Emoji tag sequences (subdivision flags) are 🏴 + tags + CANCEL TAG; anything else hides text.
        is_flag = (
            m.start() > 0
            and text[m.start() - 1] == "\U0001f3f4"
            and m.group().endswith("\U000e007f")
        )
        if not is_flag:
            issues.append(
                SafetyIssue(
                    "invisible",
                    "contains invisible Unicode tag characters (hidden text)",
                    m.start(),
                    m.end(),
                )
            )
    return issues


def scan(text: str) -> list[SafetyIssue]:
    """Every unsafe span in `text`, in order of position."""
    issues = _invisible_issues(text)
    lowered = text.lower()
    for kind, message, pattern, triggers in _RULES:
        if not any(trigger in lowered for trigger in triggers):
            continue
        for m in pattern.finditer(text):
            issues.append(SafetyIssue(kind, message, m.start(), m.end()))
    issues.sort(key=lambda issue: (issue.start, issue.end))
    return issues


def is_safe(text: str) -> bool:
    """True when `scan` finds nothing."""
    return not scan(text)


def describe(issues: list[SafetyIssue]) -> str:
    """A short, non-quoting summary of what was found (safe to show to the model)."""
    seen: list[str] = []
    for issue in issues:
        if issue.message not in seen:
            seen.append(issue.message)
    return "; ".join(seen)


def strip_invisible(text: str) -> str:
    """The text without the invisible characters `scan` reports (legitimate joiners are kept)."""
    spans = [(i.start, i.end) for i in _invisible_issues(text)]
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in sorted(spans):
        if start >= last:
            out.append(text[last:start])
            last = end
    out.append(text[last:])
    return "".join(out)
