"""Proof that a session file was written by my-agent for this user on this machine.

A session's header holds the system prompt and tool schemas a resume sends again, so a session file
shipped inside a cloned repository (checked out owner-only under umask 077, so file modes prove
nothing) would put the repository's prompt in front of the model. The writer therefore signs the
header line with a key kept in the user's state folder (`user_state.py`, outside every repository):
an HMAC-SHA256 over the line's exact bytes, stored as its last field `"mac"`. A header that does not
carry this machine's MAC is never resumed, whatever the file's mode or owner.

Sessions written before signing existed carry no MAC; they are refused too (they cannot be told apart
from a clone's), with a message that says how to go on.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import threading
from pathlib import Path

from ...paths import NotOwned, PathRefused, owned_by_user, read_regular
from ...safe_write import write_atomic
from ...user_state import StateFolderError, state_dir, state_folder
from .format import SessionDamaged, SessionError

__all__ = [
    "KEY_FILE",
    "SessionKeyError",
    "SessionNotTrusted",
    "sign_header",
    "verify_header",
]

KEY_FILE = "session-key"
_KEY_BYTES = 32
_DOMAIN = b"my-agent-session-header/1\0"
# The signed line ends with this field (the writer appends it last): `,"mac":"<64 hex>"}`.
_MAC_FIELD = re.compile(rb',"mac":"([0-9a-f]{64})"\}\Z')
_keys: dict[str, bytes] = {}
_keys_lock = threading.Lock()


class SessionNotTrusted(SessionDamaged):
    """The session file was not written by my-agent for this user on this machine (no MAC, or not
    this machine's): it is listed as not resumable and never resumed."""


class SessionKeyError(SessionError):
    """The key that signs sessions cannot be read or made; the message says what to do."""


def sign_header(line: bytes) -> bytes:
    """The header record `line` (one JSON object and its newline, as `encode_record` makes it)
    with its MAC appended as the last field; the key is created on first use."""
    body = line.rstrip(b"\n")
    if not body.endswith(b"}") or body == b"{}":
        raise ValueError("a header record is a non-empty JSON object")
    key = _key(create=True)
    assert key is not None  # made when missing
    mac = _mac(key, body)
    return body[:-1] + b',"mac":"' + mac.encode("ascii") + b'"}\n'


def verify_header(line: bytes, *, name: str) -> None:
    """Raise `SessionNotTrusted` unless the header `line` (without its newline) carries this
    machine's MAC; `SessionKeyError` when the key cannot be read."""
    found = _MAC_FIELD.search(line)
    if found is None:
        raise SessionNotTrusted(
            f"{name} carries no signature of this machine: it was saved by an older my-agent (before "
            "sessions were signed) or it was not written by my-agent at all (a cloned repository may "
            "have shipped it). It is not resumed; start a new chat (the file stays until you delete "
            "it)."
        )
    key = _key(create=False)
    if key is None:
        raise SessionNotTrusted(
            f"{name} was not written by my-agent for you on this machine (it is signed, but this "
            f"machine has signed no session yet: no key in {state_dir()}; a cloned repository may "
            "have shipped it). It is not resumed."
        )
    body = line[: found.start()] + b"}"
    if not hmac.compare_digest(_mac(key, body), found.group(1).decode("ascii")):
        raise SessionNotTrusted(
            f"{name} was not written by my-agent for you on this machine (its signature does not "
            "match this machine's key: a cloned repository may have shipped it, or it was copied "
            "from another computer). It is not resumed."
        )


def _mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, _DOMAIN + body, hashlib.sha256).hexdigest()


def _key(*, create: bool) -> bytes | None:
    """This user's session key (cached per key path); None when it does not exist and `create` is
    False. Created owner-only with the safe writer, exactly once even by racing processes."""
    path = state_dir() / KEY_FILE
    cached = _keys.get(str(path))
    if cached is not None:
        return cached
    with _keys_lock:
        try:
            folder = state_folder(create=create)
        except StateFolderError as exc:
            raise SessionKeyError(f"sessions cannot be signed or checked: {exc}") from None
        if folder is None:
            return None
        key = _read_key(folder / KEY_FILE)
        if key is None and create:
            try:
                write_atomic(folder / KEY_FILE, os.urandom(_KEY_BYTES), mode=0o600, exclusive=True)
            except FileExistsError:
                pass  # another process made it first: use that one
            except OSError as exc:
                raise SessionKeyError(
                    f"cannot create the session key in {folder}: {exc.strerror or exc}; the "
                    "session is not saved."
                ) from None
            key = _read_key(folder / KEY_FILE)
        if key is not None:
            _keys[str(path)] = key
        return key


def _read_key(path: Path) -> bytes | None:
    try:
        st = owned_by_user(path)
        if st is not None and st.st_size != _KEY_BYTES:
            raise NotOwned(path, st, wrong_kind=False)
    except NotOwned:
        raise SessionKeyError(
            f"the session key {path} is not an owner-only {_KEY_BYTES}-byte file of yours; move it "
            "away (sessions it signed can then no longer be resumed) and retry."
        ) from None
    except OSError as exc:
        raise SessionKeyError(f"the session key {path} cannot be read: {exc.strerror}") from None
    if st is None:
        return None
    try:
        data = read_regular(path, max_bytes=_KEY_BYTES, name=str(path))
    except PathRefused as exc:
        raise SessionKeyError(str(exc)) from None
    if data is None or len(data) != _KEY_BYTES:
        raise SessionKeyError(f"the session key {path} changed while it was read; retry.")
    return data
