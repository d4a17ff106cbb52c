"""Requests to the client from a chat turn's worker thread: sent on the event loop, waited for there.

A tool call runs in a worker thread, but everything that writes to the client's stream must happen on
the event loop (one writer, whole frames). `ClientLink.request` posts the request to the loop and
blocks the worker until the client answers, the turn is cancelled (then the request is cancelled with
`$/cancelRequest`) or a time limit passes. Params may be built on the loop (`params_on_loop`), so a
check of an open document and the version sent with it see the same state.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from my_agent_core.coding_tools import CancelToken

__all__ = ["ClientCancelled", "ClientLink", "ClientTimeout", "LoopServer"]

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05
CANCEL_REQUEST = "$/cancelRequest"


class ClientCancelled(Exception):
    """The turn was cancelled while the request waited; the request was cancelled too."""


class ClientTimeout(Exception):
    """The client did not answer within the time limit."""


class _Protocol(Protocol):
    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Callable[[Any], None] | None = None,
        msg_id: str | int | None = None,
    ) -> Future[Any]: ...

    def notify(self, method: str, params: Any | None = None) -> None: ...


class LoopServer(Protocol):
    """What the link needs of the server: its protocol and a way to run code on the event loop."""

    @property
    def protocol(self) -> Any: ...

    def post(self, fn: Callable[..., Any], *args: Any) -> None: ...


class ClientLink:
    """Server -> client requests for worker threads (never call `request` on the event loop)."""

    def __init__(self, server: LoopServer) -> None:
        self._server = server

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        params_on_loop: Callable[[], Any] | None = None,
        cancel: CancelToken | None = None,
        timeout_s: float | None = None,
    ) -> Any:
        """The client's result. Raises the client's error (a `JsonRpcException`), `ClientCancelled`
        when `cancel` was set first, `ClientTimeout` after `timeout_s`; an exception raised by
        `params_on_loop` (run on the loop just before sending) is raised here, nothing sent."""
        msg_id = f"my-agent-{uuid.uuid4().hex}"
        answer: Future[Any] = Future()
        self._server.post(self._send, method, params, params_on_loop, msg_id, answer)
        waited = 0.0
        while True:
            if cancel is not None and cancel.is_set():
                self._server.post(self._cancel, msg_id)
                raise ClientCancelled(f"{method} was cancelled")
            try:
                return answer.result(timeout=POLL_SECONDS)
            except FutureTimeout:
                waited += POLL_SECONDS
                if timeout_s is not None and waited >= timeout_s:
                    self._server.post(self._cancel, msg_id)
                    raise ClientTimeout(
                        f"the editor did not answer {method} within {timeout_s:g} s"
                    ) from None

    def _send(
        self,
        method: str,
        params: Any,
        params_on_loop: Callable[[], Any] | None,
        msg_id: str,
        answer: Future[Any],
    ) -> None:
        try:
            if params_on_loop is not None:
                params = params_on_loop()
            protocol: _Protocol = self._server.protocol
            sent = protocol.send_request(method, params, msg_id=msg_id)
        except BaseException as exc:  # reaches the waiting worker, never the loop
            answer.set_exception(exc)
            return
        sent.add_done_callback(lambda done: _copy(done, answer))

    def _cancel(self, msg_id: str) -> None:
        try:
            protocol: _Protocol = self._server.protocol
            protocol.notify(CANCEL_REQUEST, types.CancelParams(id=msg_id))
        except Exception:
            logger.info("could not cancel the client request %s", msg_id, exc_info=True)


def _copy(source: Future[Any], target: Future[Any]) -> None:
    if target.done():
        return
    if source.cancelled():
        target.set_exception(ClientCancelled("the request was cancelled"))
        return
    error = source.exception()
    if error is not None:
        target.set_exception(error)
    else:
        target.set_result(source.result())
