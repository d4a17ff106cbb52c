"""The editor side of the chat-assistant tests, played by the pytest-lsp client.

`Editor` keeps open documents (text, version, unsaved or not) and answers the server like VS Code
with our extension does:
- `myAgent/chat/approve`: by `editor.answer` ("approve", "deny", "hang": never, until the server
  cancels the request, a JSON value sent as is, or a callable(params) returning one of those);
- `workspace/applyEdit`: applies a versioned edit to the open document (refused when the version
  differs, as the language client does), sends `didChange`, and, for our approved-edit label, saves
  the document when it had no unsaved changes before (what client/src/common/server.ts does).

Plus helpers for the fake model: scripted tool calls, the requests a session sent, the prefix chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient
from tests.lsp.conftest import apply_lsp_edits, notifications, plain, request, start_server
from tests.support.fake_openai import FakeOpenAI
from tests.support.fixtures import assert_prefix_chain as assert_prefix_chain  # the oracle

EVENT = "myAgent/chat/event"
APPROVE = "myAgent/chat/approve"
AGENT_EDIT_LABEL = "my-agent: approved edit of"
SECRET = "sk-test-0123456789abcdef-SECRET"
PG_SECRET = "postgresql://me:pg-password-0123456789@localhost/db"


@dataclass
class Doc:
    text: str
    version: int
    dirty: bool = False


@dataclass
class Editor:
    client: LanguageClient
    docs: dict[str, Doc] = field(default_factory=dict)
    answer: Any = "approve"
    approvals: list[dict[str, Any]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    before_answer: Callable[[dict[str, Any]], None] | None = None

    def install(self) -> None:
        client = self.client

        @client.feature(APPROVE)
        async def approve(ls: Any, params: Any) -> Any:
            item = plain(params)
            self.approvals.append(item)
            if self.before_answer is not None:
                self.before_answer(item)
            answer = self.answer(item) if callable(self.answer) else self.answer
            if answer == "hang":
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    self.cancelled.append(item["callId"])
                    raise
            if answer in ("approve", "deny"):
                return {"approved": answer == "approve"}
            return answer

        del client.protocol.fm.features[types.WORKSPACE_APPLY_EDIT]

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(
            ls: Any, params: types.ApplyWorkspaceEditParams
        ) -> types.ApplyWorkspaceEditResult:
            self.edits.append(params)
            client.applied_edits.append(params)  # type: ignore[attr-defined]
            client.my_log.append(("workspace/applyEdit", params))  # type: ignore[attr-defined]
            return self._apply(params)

    def _apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        changes = params.edit.document_changes or []
        for change in changes:
            assert isinstance(change, types.TextDocumentEdit), change
            doc = self.docs.get(change.text_document.uri)
            if doc is None or doc.version != change.text_document.version:
                return types.ApplyWorkspaceEditResult(applied=False)
        for change in changes:
            assert isinstance(change, types.TextDocumentEdit)
            uri = change.text_document.uri
            doc = self.docs[uri]
            doc.text = apply_lsp_edits(doc.text, change.edits)
            doc.version += 1
            self._did_change(uri, doc)
            if (params.label or "").startswith(AGENT_EDIT_LABEL) and not doc.dirty:
                Path(types_path(uri)).write_text(doc.text, encoding="utf-8", newline="")
                self.saved.append(uri)
            else:
                doc.dirty = True
        return types.ApplyWorkspaceEditResult(applied=True)

    def _did_change(self, uri: str, doc: Doc) -> None:
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=doc.text)],
            )
        )

    def open(self, path: Path, text: str | None = None) -> str:
        """Open a file (its disk text, or `text` as unsaved changes)."""
        uri = path.as_uri()
        disk = path.read_text(encoding="utf-8") if path.exists() else ""
        body = disk if text is None else text
        self.docs[uri] = Doc(body, 1, dirty=body != disk)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=body
                )
            )
        )
        return uri

    def type(self, path: Path, text: str) -> None:
        """The user changes the buffer (unsaved)."""
        uri = path.as_uri()
        doc = self.docs[uri]
        doc.text, doc.version, doc.dirty = text, doc.version + 1, True
        self._did_change(uri, doc)

    def close(self, path: Path) -> None:
        uri = path.as_uri()
        self.docs.pop(uri, None)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )


def types_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


async def start_assistant(
    fake: FakeOpenAI,
    folders: list[Path],
    *,
    untrusted: list[Path] | None = None,
    settings: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[LanguageClient, Editor]:
    """A server with a model on the fake endpoint, secrets in its environment, and the editor."""
    options: dict[str, Any] = {
        "model": "fake-model",
        "baseUrl": fake.base_url,
        "untrustedFolders": [f.as_uri() for f in untrusted or []],
        "memory": {"provider": "none"},
        **(settings or {}),
    }
    client = await start_server(
        folders,
        init_options=options,
        env={"OPENAI_API_KEY": SECRET, "MY_AGENT_PG_DSN": PG_SECRET, **(env or {})},
    )
    editor = Editor(client)
    editor.install()
    return client, editor


def calls(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A scripted model step calling these tools (in order)."""
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in items]}


async def start_chat(client: LanguageClient, folder: Path) -> str:
    started = await request(client, "myAgent/chat/start", {"folder": folder.as_uri()})
    session: str = started["sessionId"]
    return session


async def send(client: LanguageClient, session: str, message: str, **extra: Any) -> dict[str, Any]:
    params = {"sessionId": session, "message": message}
    msg_id = extra.pop("msg_id", None)
    params.update(extra)
    result: dict[str, Any] = await request(client, "myAgent/chat/send", params, msg_id=msg_id)
    return result


def events(client: LanguageClient, session: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in notifications(client, EVENT)
        if e["sessionId"] == session and (kind is None or e["kind"] == kind)
    ]


def results(client: LanguageClient, session: str) -> list[dict[str, Any]]:
    return events(client, session, "tool_result")


def session_requests(fake: FakeOpenAI, session_marker: str) -> list[Any]:
    """The completion requests whose first user message contains `session_marker`."""
    out = []
    for record in fake.completion_requests:
        messages = json.loads(record.body)["messages"]
        first = next((m for m in messages if m["role"] == "user"), None)
        if first is not None and session_marker in (first.get("content") or ""):
            out.append(record)
    return out


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not count)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
