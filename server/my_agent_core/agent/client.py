"""The model client seam: the few calls the agent makes, and the `openai.OpenAI` that usually makes them.

The agent only ever calls `client.chat.completions.create(model=..., messages=..., stream=True,
...)` and iterates the stream it returns (closing it when done or cancelled). `ModelClient` is that
shape as a `Protocol`: `openai.OpenAI` satisfies it (mypy checks `build_client`), and so does any
stand-in a test or an embedding application writes, without inheriting from anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from .errors import AgentConfigError

if TYPE_CHECKING:
    import openai

__all__ = ["ChatCompletions", "ChunkStream", "ModelChat", "ModelClient", "build_client"]


class ChunkStream(Protocol):
    """A streamed response: its `ChatCompletionChunk`s (read with `getattr`: providers differ), and
    `close()` to release the connection early."""

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class ChatCompletions(Protocol):
    """`client.chat.completions`: `create(**request)` with `stream=True` returns a `ChunkStream`."""

    @property
    def create(self) -> Callable[..., ChunkStream]: ...


class ModelChat(Protocol):
    """`client.chat`."""

    @property
    def completions(self) -> ChatCompletions: ...


class ModelClient(Protocol):
    """What `Agent(client=...)` needs: `client.chat.completions.create(...)`, streaming."""

    @property
    def chat(self) -> ModelChat: ...


def build_client(api_key: str | None = None, base_url: str | None = None) -> openai.OpenAI:
    """An `openai.OpenAI` client from the arguments or OPENAI_API_KEY / OPENAI_BASE_URL.

    A key is required unless a base URL is given (local endpoints usually need none)."""
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if not key:
        if not url:
            raise AgentConfigError(
                "No model endpoint configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
                "OpenAI-compatible endpoint), or pass client=."
            )
        key = "no-key"
    import openai  # here: importing the agent must not import openai (~0.2 s)

    try:
        return openai.OpenAI(api_key=key, base_url=url)
    except openai.OpenAIError as exc:
        raise AgentConfigError(f"Cannot build the OpenAI client: {exc}") from exc
