"""Where `my-agent chat` gets the model's API key: never from its own command line.

A command line is readable by every process of the user (`ps`, `/proc/<pid>/cmdline`), and the
not-dumpable mark that hides the environment (process_guard.py) does not cover it, so a command the
chat runs could hand a key passed as `--api-key` to the model. The key comes instead, first match
wins, from `--api-key-file` (a file only its owner can read; `-` for the first line of standard
input; `/dev/fd/N` for a pipe), from OPENAI_API_KEY, or from a hidden prompt on a terminal.
"""

from __future__ import annotations

import argparse
import getpass
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from .terminal_text import is_terminal

__all__ = [
    "KEY_FILE_MAX_BYTES",
    "ApiKeyError",
    "RefuseKeyOnCommandLine",
    "read_key_file",
    "resolve_api_key",
]

#: Bytes read of a key file: any real key is far shorter; a wrong path (a log) is not slurped.
KEY_FILE_MAX_BYTES = 64 * 1024
KEY_WAYS = (
    "set OPENAI_API_KEY, pass --api-key-file PATH (a file only you can read; '-' reads the first "
    "line of standard input), or type it when the chat asks"
)


class ApiKeyError(Exception):
    """The key could not be taken from where it was said to be; the message never holds the key."""


class RefuseKeyOnCommandLine(argparse.Action):
    """`--api-key`: refused with what to use instead, before anything runs (the value is never
    echoed)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "--api-key is not accepted: a key on the command line can be read by every program "
            f"you run (ps, /proc/PID/cmdline). Instead, {KEY_WAYS}."
        )


def resolve_api_key(
    key_file: str | None,
    *,
    environ: Mapping[str, str],
    stdin: TextIO,
    ask: bool,
    prompt: Callable[[str], str] | None = None,
) -> str | None:
    """The key from `key_file`, else OPENAI_API_KEY, else (when `ask`: a terminal, and no other
    way configured) a hidden prompt; None when there is none. Raises `ApiKeyError`."""
    if key_file is not None:
        if key_file == "-":
            if is_terminal(stdin):
                return _one_key(_hidden_prompt(prompt), "the prompt")
            return _one_key(stdin.readline(), "standard input")
        return read_key_file(key_file)
    key = environ.get("OPENAI_API_KEY")
    if key:
        return key
    if not ask:
        return None
    typed = _hidden_prompt(prompt).strip()
    return _one_key(typed, "the prompt") if typed else None


def read_key_file(path: str) -> str:
    """The key held in `path`: a regular file that is yours and that nobody else can read (like
    ssh's keys), or a pipe (`/dev/fd/N`, `<(pass show ...)`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise ApiKeyError(f"cannot open the API key file {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            if info.st_uid != os.getuid():
                raise ApiKeyError(f"the API key file {path} belongs to another user; use your own")
            if info.st_mode & 0o077:
                raise ApiKeyError(
                    f"the API key file {path} can be read by other users (mode "
                    f"{stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {path}"
                )
        elif not (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
            raise ApiKeyError(f"the API key file {path} is not a regular file or a pipe")
        chunks: list[bytes] = []
        size = 0
        while size <= KEY_FILE_MAX_BYTES and (chunk := os.read(fd, 8192)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ApiKeyError(f"cannot read the API key file {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > KEY_FILE_MAX_BYTES:
        raise ApiKeyError(f"the API key file {path} is far too large to hold just a key")
    try:
        text = b"".join(chunks).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ApiKeyError(f"the API key file {path} is not UTF-8 text") from None
    return _one_key(text, f"the API key file {path}")


def _one_key(text: str, where: str) -> str:
    key = text.strip()
    if not key:
        raise ApiKeyError(f"{where} holds no API key")
    if not key.isprintable() or any(ch.isspace() for ch in key):
        raise ApiKeyError(f"{where} must hold the API key alone, on one line")
    return key


def _hidden_prompt(prompt: Callable[[str], str] | None) -> str:
    ask = prompt or (lambda text: getpass.getpass(text, stream=sys.stderr))
    return ask("API key for the model endpoint (not shown; see `my-agent chat --help`): ")
