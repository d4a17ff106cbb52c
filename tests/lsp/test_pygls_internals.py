"""The pygls private internals the server relies on are all still there (lsp/pygls_internals.py).

A pygls release within the pin (`>=2.1,<3`) may rename any of them: this test then fails naming the
attribute and why the server needs it, instead of the server failing somewhere at run time.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest
from lsprotocol import types

from my_agent_core.lsp import pygls_internals as internals
from my_agent_core.lsp.server import MyAgentServer


@pytest.fixture
def ls() -> MyAgentServer:
    return MyAgentServer()


def test_every_internal_the_server_uses_is_there(ls: MyAgentServer) -> None:
    problems = internals.missing(ls.protocol, ls)
    assert not problems, "pygls moved internals the server relies on:\n" + "\n".join(problems)


@pytest.mark.parametrize("internal", internals.INTERNALS, ids=lambda i: f"{i.owner}.{i.name}")
def test_a_moved_internal_is_named(
    ls: MyAgentServer, internal: internals.Internal, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner: Any = ls.protocol if internal.owner == "protocol" else ls
    if internal.name in vars(owner):
        delattr(owner, internal.name)
    else:  # a method: take it off the pygls class that defines it (restored after the test)
        home = next(cls for cls in type(owner).__mro__ if internal.name in vars(cls))
        monkeypatch.delattr(home, internal.name)
    problems = internals.missing(ls.protocol, ls)
    assert any(p.startswith(f"{internal.owner}.{internal.name} is gone") for p in problems)
    assert internal.why in "\n".join(problems)


def test_a_changed_shape_or_an_unregistered_builtin_is_named(ls: MyAgentServer) -> None:
    protocol: Any = ls.protocol
    protocol._shutdown = "no"
    protocol.fm.builtin_features[types.TEXT_DOCUMENT_DID_OPEN] = lambda *_: None
    problems = "\n".join(internals.missing(protocol, ls))
    assert "protocol._shutdown is no longer a bool" in problems
    assert "`lsp_text_document__did_open` is not the built-in" in problems
    assert "lsp_text_document__did_change" not in problems  # a benign twin: still ours


def test_the_accessors_reach_pygls_own_state(ls: MyAgentServer) -> None:
    protocol: Any = ls.protocol
    assert internals.request_futures(protocol) is protocol._request_futures
    assert internals.is_shut_down(protocol) is False
    assert internals.server_of(protocol) is ls
    assert internals.user_feature(protocol, "myAgent/memory/state") is None

    @ls.feature("myAgent/test/ping")
    def ping(ls: MyAgentServer, params: Any) -> str:
        return "pong"

    assert internals.user_feature(protocol, "myAgent/test/ping") is not None
    stop = threading.Event()
    internals.set_stop_event(ls, stop)
    ls.shutdown()  # type: ignore[no-untyped-call]  # pygls' own sets the event
    assert stop.is_set()


def test_send_error_answers_through_pygls(ls: MyAgentServer) -> None:
    sent: list[tuple[Any, Any]] = []
    protocol: Any = ls.protocol
    protocol._send_response = lambda msg_id, error=None, **_: sent.append((msg_id, error))
    internals.send_error(protocol, 7, -32602, "bad")
    assert sent[0][0] == 7 and sent[0][1].code == -32602 and sent[0][1].message == "bad"
    future: Future[Any] = Future()
    internals.request_futures(protocol)["x"] = future
    assert ls.protocol.running_requests() == []  # type: ignore[attr-defined]  # not a Task
