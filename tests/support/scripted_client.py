"""An in-process model client: the `ModelClient` protocol without HTTP, for tests of the seam itself.

It answers each `chat.completions.create(...)` with the next scripted reply as a stream of chunk
objects shaped like the SDK's (`choices[0].delta.content`, `usage`), and records every request.
Everything else in the tests talks to a real `openai.OpenAI` over HTTP (tests/support/fake_openai.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from my_agent_core.agent import ModelClient

__all__ = ["ScriptedClient"]


class _Stream:
    def __init__(self, chunks: list[Any]) -> None:
        self._chunks = chunks
        self.closed = False

    def __iter__(self) -> Iterator[Any]:
        return iter(self._chunks)

    def close(self) -> None:
        self.closed = True


class _Completions:
    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        self.streams: list[_Stream] = []

    def create(self, **request: Any) -> _Stream:
        self.requests.append(request)
        text = self.replies.pop(0)
        pieces = [text[i : i + 4] for i in range(0, len(text), 4)]
        chunks: list[Any] = [
            SimpleNamespace(usage=None, choices=[SimpleNamespace(delta=SimpleNamespace(content=p))])
            for p in pieces
        ]
        usage = SimpleNamespace(prompt_tokens=10, completion_tokens=len(pieces), total_tokens=0)
        chunks.append(SimpleNamespace(usage=usage, choices=[]))
        stream = _Stream(chunks)
        self.streams.append(stream)
        return stream


class _Chat:
    def __init__(self, replies: list[str]) -> None:
        self.completions = _Completions(replies)


class ScriptedClient:
    """`client.chat.completions.create(...)` answering `replies` in order."""

    def __init__(self, *replies: str) -> None:
        self.chat = _Chat(list(replies))


def _satisfies_the_protocol() -> ModelClient:
    return ScriptedClient("x")  # mypy: the stand-in is a ModelClient
