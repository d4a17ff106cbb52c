"""An example third-party memory provider: archive turns to a JSON Lines file, recall the ones that
share two long words with the user's message.

Install it as a plug-in by declaring an entry point in your package's pyproject.toml:

    [project.entry-points."my_agent_core.memory_providers"]
    notes-example = "example_provider:NotesProvider"

then choose it with `myAgent.memory.provider: "notes-example"`. The entry point names a factory that
takes one `ProviderContext`; a MemoryProvider subclass whose __init__ takes the context is one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from my_agent_core.memory.providers import MemoryProvider, ProviderContext, SearchHit
from my_agent_core.private import private_dir

_WORD = re.compile(r"[^\W_]{5,}")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)}


class NotesProvider(MemoryProvider):
    """Turns in `<folder>/.my_agent_core/notes-example/turns.jsonl` (private, git-ignored)."""

    name = "notes-example"

    def __init__(self, context: ProviderContext) -> None:
        self.path: Path = private_dir(context.folder, "notes-example") / "turns.jsonl"

    def _turns(self) -> list[dict[str, str]]:
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def sync_turn(self, user: str, assistant: str) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"user": user, "assistant": assistant}) + "\n")

    def prefetch(self, query: str) -> str:
        wanted = _words(query)
        related = [
            f"user: {t['user']}\nassistant: {t['assistant']}"
            for t in self._turns()
            if len(wanted & _words(t["user"] + " " + t["assistant"])) >= 2
        ]
        return "\n\n".join(related[-3:])  # "" when nothing is related: most turns

    def search(self, query: str, limit: int) -> list[SearchHit]:
        wanted = _words(query)
        hits: list[SearchHit] = []
        for n, t in enumerate(self._turns()):
            text = f"user: {t['user']}\nassistant: {t['assistant']}"
            shared = len(wanted & _words(text))
            if shared:
                hits.append(
                    SearchHit(
                        id=str(n), kind="turn", text=text, created="", score=shared, source="turn"
                    )
                )
        return sorted(hits, key=lambda hit: -hit["score"])[:limit]
