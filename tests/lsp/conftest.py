"""Shared pytest-lsp fixtures for the language-server tests (helpers A and B).

- `start_server(...)` / `stop_server(client)`: a real server process (`python -m my_agent_core serve`) with a
  VS Code-like client, for module-scoped fixtures (mark those tests
  `@pytest.mark.asyncio(loop_scope="module")`).
- `client` (pull diagnostics, VS Code capabilities + `textDocument.diagnostic`) and `client_push` (VS Code
  1.65 capabilities: push diagnostics), function-scoped, on a fresh workspace folder `workspace`.
- The client records custom notifications in `client.my_log` (`(method, params-as-dict)`, in arrival
  order, responses included as `("$response", id)`), answers `workspace/applyEdit` (recorded in
  `client.applied_edits`) and `client/registerCapability` (recorded in `client.registrations`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.fake_openai import FakeOpenAI  # noqa: E402  (needs the repo root on sys.path)

from my_agent_core.lsp.params import to_plain as plain  # noqa: E402

SERVER_COMMAND = [sys.executable, "-m", "my_agent_core", "serve"]
MEMORY_GLOB = "**/.my_agent_core/memory/*.md"
DELIM = "\n§\n"


def vscode_capabilities(
    *, pull: bool = True, dynamic_watch: bool = True
) -> types.ClientCapabilities:
    """VS Code 1.65 capabilities (pytest-lsp snapshot), plus pull diagnostics when `pull`."""
    caps = pytest_lsp.client_capabilities("visual-studio-code")
    if pull:
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(
            dynamic_registration=True, related_document_support=False
        )
    if caps.workspace is not None and caps.workspace.did_change_watched_files is not None:
        caps.workspace.did_change_watched_files.dynamic_registration = dynamic_watch
    return caps


def make_folder(base: Path, name: str, memory: str | None = None, user: str | None = None) -> Path:
    """A workspace folder with (optionally) memory files."""
    folder = base / name
    mem = folder / ".my_agent_core" / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    if memory is not None:
        (mem / "MEMORY.md").write_text(memory, encoding="utf-8")
    if user is not None:
        (mem / "USER.md").write_text(user, encoding="utf-8")
    return folder


def memory_path(folder: Path, target: str = "memory") -> Path:
    return folder / ".my_agent_core" / "memory" / ("MEMORY.md" if target == "memory" else "USER.md")


def _install_recorders(client: LanguageClient, apply_edit_ok: bool) -> None:
    client.my_log = []  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    for method in ("myAgent/chat/event", "myAgent/memory/changed"):

        def record(ls: Any, params: Any, method: str = method) -> None:
            client.my_log.append((method, plain(params)))  # type: ignore[attr-defined]

        client.feature(method)(record)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(
        ls: Any, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)  # type: ignore[attr-defined]
        client.my_log.append(("workspace/applyEdit", params))  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=apply_edit_ok)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register_capability(ls: Any, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    original = client.protocol._handle_response

    def handle_response(msg_id: Any, result: Any = None, error: Any = None) -> None:
        client.my_log.append(("$response", msg_id))  # type: ignore[attr-defined]
        original(msg_id, result, error)

    client.protocol._handle_response = handle_response  # type: ignore[method-assign]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    """A local chat-completions server (one per test module)."""
    with FakeOpenAI() as server:
        yield server


async def start_chat_server(
    fake: FakeOpenAI, folders: list[Path], untrusted: Sequence[Path] = ()
) -> LanguageClient:
    """A server with a model configured against the fake endpoint; `untrusted` folders have memory off."""
    return await start_server(
        folders,
        init_options={
            "model": "fake-model",
            "baseUrl": fake.base_url,
            "untrustedFolders": [f.as_uri() for f in untrusted],
        },
        env={"OPENAI_API_KEY": "test-key"},
    )


async def start_server(
    folders: list[Path],
    *,
    init_options: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    pull: bool = True,
    dynamic_watch: bool = True,
    apply_edit_ok: bool = True,
    capabilities: types.ClientCapabilities | None = None,
) -> LanguageClient:
    """Spawn the server, answer its requests like VS Code and run `initialize`/`initialized`."""
    server_env = {k: v for k, v in os.environ.items() if not k.startswith(("MY_AGENT_", "OPENAI_"))}
    server_env.update(env or {})
    config = ClientServerConfig(server_command=SERVER_COMMAND, server_env=server_env)
    client = await config.start()
    assert isinstance(client, LanguageClient)
    _install_recorders(client, apply_edit_ok)
    if configuration is not None:
        client.set_configuration(configuration)
    caps = capabilities or vscode_capabilities(pull=pull, dynamic_watch=dynamic_watch)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=folders[0].as_uri() if folders else None,
            workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options={"myAgent": init_options or {}},
        )
    )
    return client


async def stop_server(client: LanguageClient) -> None:
    try:
        await asyncio.wait_for(client.shutdown_session(), timeout=10)
    finally:
        await client.stop()


async def request(client: LanguageClient, method: str, params: Any = None, **kw: Any) -> Any:
    """A custom request; the result as plain dicts."""
    return plain(await client.protocol.send_request_async(method, params, **kw))


async def send_raw(client: LanguageClient, message: Any) -> Any:
    """Write one message as-is (bypassing the client's typing); await the answer when it has an id.

    The answer is the raw result, or raises the JSON-RPC error as a pygls JsonRpcException.
    """
    body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
    future: Future[Any] | None = None
    if isinstance(message, dict) and "id" in message and "method" in message:
        future = Future()
        client.protocol._request_futures[message["id"]] = future
    data = f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body
    result = client.protocol.writer.write(data)
    if inspect.isawaitable(result):
        await result
    if future is None:
        return None
    return plain(await asyncio.wait_for(asyncio.wrap_future(future), timeout=20))


def new_id() -> str:
    return f"raw-{uuid.uuid4().hex[:10]}"


def notifications(client: LanguageClient, method: str) -> list[dict[str, Any]]:
    return [p for m, p in client.my_log if m == method]  # type: ignore[attr-defined]


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    """Poll until `predicate()` is true (for notifications that follow a disk change)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace folder with two MEMORY.md entries and an empty USER.md."""
    return make_folder(
        tmp_path, "ws", memory="uses uv" + DELIM + "tests run with pytest\n", user=""
    )


@pytest_asyncio.fixture
async def client(workspace: Path) -> AsyncIterator[LanguageClient]:
    """VS Code-like client with pull diagnostics, on `workspace`."""
    c = await start_server([workspace], pull=True)
    yield c
    await stop_server(c)


@pytest_asyncio.fixture
async def client_push(workspace: Path) -> AsyncIterator[LanguageClient]:
    """VS Code 1.65 client (no pull diagnostics: the server pushes), on `workspace`."""
    c = await start_server([workspace], pull=False)
    yield c
    await stop_server(c)


# --- text oracles shared by the feature tests ---------------------------------------------------


def utf16_offset(text: str, pos: types.Position) -> int:
    """Oracle: code-point offset of an LSP (UTF-16) position; lines break at \\n, \\r\\n, \\r."""
    starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]
    if pos.line >= len(starts):
        return len(text)
    start = starts[pos.line]
    end = starts[pos.line + 1] if pos.line + 1 < len(starts) else len(text)
    line = text[start:end].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line)


def apply_lsp_edits(text: str, edits: Any) -> str:
    spans = sorted(
        (
            (utf16_offset(text, e.range.start), utf16_offset(text, e.range.end), e.new_text)
            for e in edits
        ),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
