"""The model client of `my-agent chat` and `my-agent eval`: the options that name it, and the
client, checked before the first message.

A chat whose endpoint cannot be reached used to start, take a message, fail, and exit 0; now the
endpoint is asked once (`GET /models`, no retries, bounded) before the prompt shows, and one
`my-agent:` line says what is wrong (exit 2). Any answer but a refusal of the key counts as
reachable (a server without /models answers 404). A refusal (401/403) on a terminal asks for the key
once, hidden (a local server needs none, so none is asked for until the endpoint wants one).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, TextIO

from .api_key import ApiKeyError, RefuseKeyOnCommandLine, resolve_api_key

__all__ = ["CONNECT_S", "PROBE_S", "EndpointProblem", "add_endpoint_arguments", "connect"]

#: Seconds to wait for the endpoint's first answer at start-up, and for its TCP connection.
PROBE_S = 20.0
CONNECT_S = 10.0


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """`--model`, `--base-url`, `--api-key-file`, and `--api-key` refused (see api_key.py): the
    model and its endpoint, named the same way by every command that talks to one."""
    parser.add_argument("--model", help="model name (default: $MY_AGENT_MODEL)")
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://localhost:8080/v1 (default: $OPENAI_BASE_URL)",
    )
    parser.add_argument(
        "--api-key-file",
        metavar="PATH",
        help="read the API key from PATH (a file only you can read, e.g. chmod 600), '-' for the "
        "first line of standard input, or /dev/fd/N (default: $OPENAI_API_KEY, else a hidden "
        "prompt on a terminal)",
    )
    parser.add_argument(  # refused with a message, never used
        "--api-key", nargs="?", metavar="KEY", action=RefuseKeyOnCommandLine, help=argparse.SUPPRESS
    )


class EndpointProblem(Exception):
    """The endpoint cannot be used: not configured, not reachable, or it refused the key."""


class _KeyRefused(EndpointProblem):
    pass


def connect(
    base_url: str | None,
    key_file: str | None,
    *,
    stdin: TextIO,
    interactive: bool,
    prompt: Callable[[str], str] | None = None,
) -> Any:
    """An `openai.OpenAI` client whose endpoint has answered. The key: `key_file`, else
    OPENAI_API_KEY, else (on a terminal) a hidden prompt, asked at once for OpenAI's own endpoint
    and after a refusal for any other. Raises `EndpointProblem`; never puts the key in a message."""
    from .agent import AgentError, build_client  # here: start-up time (every `my-agent` parser)

    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    try:
        key = resolve_api_key(
            key_file,
            environ=os.environ,
            stdin=stdin,
            ask=interactive and url is None,
            prompt=prompt,
        )
        client = build_client(key, url)
        try:
            _check(client)
        except _KeyRefused:
            if key is not None or not interactive:
                raise
            key = resolve_api_key(None, environ={}, stdin=stdin, ask=True, prompt=prompt)
            if key is None:
                raise
            client = build_client(key, url)
            _check(client)
    except ApiKeyError as exc:
        raise EndpointProblem(str(exc)) from None
    except AgentError as exc:
        raise EndpointProblem(f"{exc} (or pass --api-key-file / --base-url)") from None
    return client


def _check(client: Any) -> None:
    """Raise `EndpointProblem` unless the endpoint answers (an error status is an answer, except a
    refusal of the key)."""
    import openai  # here: start-up time (every `my-agent` parser imports this module)

    where = str(client.base_url)
    probe = client.with_options(max_retries=0, timeout=openai.Timeout(PROBE_S, connect=CONNECT_S))
    try:
        probe.models.list()
    except openai.APITimeoutError:
        raise EndpointProblem(
            f"the model endpoint {where} did not answer within {PROBE_S:g} s"
        ) from None
    except openai.APIConnectionError as exc:
        reason = " ".join(str(exc.__cause__ or exc).split())
        raise EndpointProblem(f"cannot reach the model endpoint {where}: {reason}") from None
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise _KeyRefused(
            f"the model endpoint {where} refused the API key (HTTP {exc.status_code}): set "
            "OPENAI_API_KEY or pass --api-key-file PATH"
        ) from None
    except openai.APIError:
        return
