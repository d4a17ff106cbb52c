"""Every use of a pygls private internal, in one place (pygls is pinned `>=2.1,<3`, and a release may
move any of these): each has an accessor here saying why the server needs it, and `missing()` lists
the ones a pygls release no longer has, which `tests/lsp/test_pygls_internals.py` asserts is empty
(naming the attribute). docs/lsp-core.md explains the departures from pygls they serve.

The built-in handlers the protocol overrides (`lsp_initialize`, `lsp_shutdown`, `lsp_exit`, the
didOpen / didChange / didClose and didChangeWorkspaceFolders ones, decorated with `lsp_method`) are
found by pygls with `dir()` by method name: that convention is checked here too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

__all__ = [
    "INTERNALS",
    "Internal",
    "is_shut_down",
    "missing",
    "request_futures",
    "send_error",
    "server_of",
    "set_stop_event",
    "user_feature",
]


@dataclass(frozen=True)
class Internal:
    """A private attribute of pygls the server relies on: whose, which, and why."""

    owner: str  # "protocol" (JsonRPCProtocol / LanguageServerProtocol) or "server" (pygls Server)
    name: str
    why: str


INTERNALS: tuple[Internal, ...] = (
    Internal(
        "protocol",
        "_request_futures",
        "the requests in flight: `exit` waits for the running ones to answer (pygls exits at "
        "once), and a client response that fails to parse fails its pending future (pygls drops "
        "it and the caller waits forever)",
    ),
    Internal(
        "protocol",
        "_send_response",
        "answering a request pygls would drop (params that fail to deserialise, a frame the "
        "reader refused, a request after `shutdown`) with a JSON-RPC error; pygls has no public "
        "way to answer a request outside its handler",
    ),
    Internal(
        "protocol",
        "_shutdown",
        "whether `shutdown` was received: later requests are answered -32600, and `exit` "
        "returns 0 or 1 by it, as pygls' own `exit` does",
    ),
    Internal(
        "protocol",
        "_server",
        "the server object from inside the protocol's overridden built-ins (the buffers for "
        "didOpen / didChange / didClose, the lifecycle hooks)",
    ),
    Internal(
        "protocol",
        "fm",
        "`fm.features`: the feature handler registered for a built-in method, which our "
        "overridden built-ins still run after their own work (as pygls' built-ins do)",
    ),
    Internal(
        "server",
        "_stop_event",
        "our `start_io` runs its own frame reader; pygls' `shutdown()` stops the serving loop "
        "by setting this event, so ours must be the one it sets",
    ),
)

#: The built-in handlers `MyAgentProtocol` overrides by name (pygls collects built-ins by `dir()`).
OVERRIDDEN_BUILTINS: dict[str, str] = {
    "lsp_initialize": types.INITIALIZE,
    "lsp_shutdown": types.SHUTDOWN,
    "lsp_exit": types.EXIT,
    "lsp_workspace__did_change_workspace_folders": types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
    "lsp_text_document__did_open": types.TEXT_DOCUMENT_DID_OPEN,
    "lsp_text_document__did_change": types.TEXT_DOCUMENT_DID_CHANGE,
    "lsp_text_document__did_close": types.TEXT_DOCUMENT_DID_CLOSE,
}


def missing(protocol: Any, server: Any) -> list[str]:
    """The internals (`owner.name: why`) this pygls does not have in the shape the server needs,
    and the built-ins it no longer registers by method name; [] when all is well."""
    owners = {"protocol": protocol, "server": server}
    problems: list[str] = []
    for internal in INTERNALS:
        owner = owners[internal.owner]
        if not hasattr(owner, internal.name):
            problems.append(f"{internal.owner}.{internal.name} is gone ({internal.why})")
    if not isinstance(getattr(protocol, "_request_futures", None), dict):
        problems.append("protocol._request_futures is no longer a dict of futures")
    if not callable(getattr(protocol, "_send_response", None)):
        problems.append("protocol._send_response is no longer callable")
    if not isinstance(getattr(protocol, "_shutdown", None), bool):
        problems.append("protocol._shutdown is no longer a bool")
    fm = getattr(protocol, "fm", None)
    if not isinstance(getattr(fm, "features", None), dict):
        problems.append("protocol.fm.features is no longer a dict of feature handlers")
    builtins = getattr(fm, "builtin_features", None)
    for name, method in OVERRIDDEN_BUILTINS.items():
        base = type(protocol).__mro__[1:]
        if not any(name in vars(cls) for cls in base):
            problems.append(f"pygls' protocol has no built-in `{name}` to override")
        handler = builtins.get(method) if isinstance(builtins, dict) else None
        if getattr(handler, "__func__", None) is not getattr(type(protocol), name, None):
            problems.append(f"`{name}` is not the built-in pygls runs for {method}")
    return problems


def request_futures(protocol: Any) -> dict[Any, Future[Any]]:
    """The requests in flight, by message id (see INTERNALS: `_request_futures`)."""
    futures: dict[Any, Future[Any]] = protocol._request_futures
    return futures


def send_error(protocol: Any, msg_id: int | str, code: int, message: str) -> None:
    """Answer request `msg_id` with a JSON-RPC error (see INTERNALS: `_send_response`)."""
    protocol._send_response(msg_id, error=types.ResponseError(code=code, message=message))


def is_shut_down(protocol: Any) -> bool:
    """Whether `shutdown` was received (see INTERNALS: `_shutdown`)."""
    return bool(protocol._shutdown)


def server_of(protocol: Any) -> Any:
    """The server a protocol belongs to (see INTERNALS: `_server`)."""
    return protocol._server


def user_feature(protocol: Any, method: str) -> Callable[..., Any] | None:
    """The feature handler registered for `method`, if any (see INTERNALS: `fm`)."""
    handler: Callable[..., Any] | None = protocol.fm.features.get(method)
    return handler


def set_stop_event(server: Any, event: threading.Event) -> None:
    """Make `event` the one pygls' `shutdown()` sets (see INTERNALS: `_stop_event`)."""
    server._stop_event = event
