"""The my-agent language server: memory-file features, the memory panel protocol and chat sessions.

Startup stays cheap (no openai / agent import until the first chat), and every request is answered:
`MyAgentProtocol` hands `myAgent/*` params to their handlers raw and turns a request whose params
cannot be deserialised into a -32602 answer instead of pygls' silent drop. Document sync is ours
(`buffers.Buffers`: the protocol's built-in didOpen/didChange/didClose feed it), and stdin is read
by `framing.FrameReader`, which survives malformed headers.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeGuard, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.protocol.language_server import lsp_method

from my_agent_core import __version__

from . import (
    actions,
    chat_requests,
    diagnostics,
    folders,
    memory_requests,
    recall_requests,
    views,
    workspace_checks,
)
from .buffers import Buffers
from .convert import UTF8, UTF16, UTF32
from .folders import MemoryFile, MemoryFolders, memory_file_of
from .framing import FrameReader, serve_frames
from .params import RequestError
from .pygls_internals import (
    is_shut_down,
    request_futures,
    send_error,
    server_of,
    set_stop_event,
    user_feature,
)
from .settings import Settings
from .workspace_checks import EditorWorkspaceChecks

if TYPE_CHECKING:
    from .chat import ChatManager
    from .recall_service import RecallService

__all__ = ["MyAgentProtocol", "MyAgentServer", "build_server", "main"]

logger = logging.getLogger(__name__)

RAW_PREFIX = "myAgent/"
EXIT_GRACE_SECONDS = 5.0  # how long `exit` (or the end of input) waits for running requests


def _valid_id(value: object) -> TypeGuard[int | str]:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


class MyAgentProtocol(LanguageServerProtocol):
    """LSP protocol that answers every request, even when its params are malformed."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        # json.loads calls this for every nested object; structuring is deferred to handle_message so
        # params that merely contain a "jsonrpc" key stay data and myAgent/* params stay raw JSON.
        return data

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, dict):
            if hasattr(message, "jsonrpc"):
                super().handle_message(message)
            else:
                logger.warning("ignoring a message that is not a JSON object")
            return
        method = message.get("method")
        msg_id = message.get("id")
        is_request = "id" in message and "method" in message
        if message.get("jsonrpc") != self.VERSION or (is_request and not isinstance(method, str)):
            if is_request and _valid_id(msg_id):
                self._send_error(msg_id, -32600, "invalid request: not a JSON-RPC 2.0 request")
            return
        if is_shut_down(self) and is_request and method != types.EXIT:
            if _valid_id(msg_id):
                self._send_error(msg_id, -32600, "the server is shutting down")
            return
        if isinstance(method, str) and method.startswith(RAW_PREFIX):
            params = message.get("params")
            if is_request:
                if not _valid_id(msg_id):
                    return
                raw: Any = JsonRPCRequestMessage(
                    id=msg_id, method=method, jsonrpc=self.VERSION, params=params
                )
            else:
                raw = JsonRPCNotification(method=method, jsonrpc=self.VERSION, params=params)
            super().handle_message(raw)
            return
        try:
            structured = super().structure_message(message)
        except JsonRpcException as exc:
            self._deserialization_failed(message, exc)
            return
        except Exception as exc:  # pragma: no cover - structure_message wraps everything
            self._deserialization_failed(message, JsonRpcException(message=str(exc)))
            return
        if not hasattr(structured, "jsonrpc"):
            return
        super().handle_message(structured)

    def _deserialization_failed(self, message: dict[str, Any], exc: JsonRpcException) -> None:
        """Answer a request (or fail a pending response) instead of dropping it."""
        method = message.get("method")
        msg_id = message.get("id")
        if "method" in message and "id" in message:
            if _valid_id(msg_id):
                self._send_error(msg_id, -32602, f"invalid params for {str(method)[:100]}")
        elif "id" in message:
            futures = request_futures(self)
            future = futures.pop(msg_id, None) if _valid_id(msg_id) else None
            if future is not None and not future.done():
                future.set_exception(exc)
        else:
            logger.warning("dropping notification %r with malformed params", method)

    def _send_error(self, msg_id: int | str, code: int, message: str) -> None:
        send_error(self, msg_id, code, message)

    # ----- exit: answer what is still running first ---------------------------------------------
    def running_requests(self) -> list[asyncio.Task[Any]]:
        """Requests whose (async) handlers have not answered yet (e.g. a turn `shutdown` cancelled).
        A finished handler counts until pygls pops it: its answer is sent by a callback still queued
        on the loop, which exiting at once would drop."""
        futures: list[object] = list(request_futures(self).values())
        return [f for f in futures if isinstance(f, asyncio.Task)]

    async def settle(self, timeout: float = EXIT_GRACE_SECONDS) -> None:
        """Let the running requests send their answers (bounded), so none goes unanswered."""
        running = [task for task in self.running_requests() if not task.done()]
        if running:
            await asyncio.wait(running, timeout=timeout)
        await asyncio.sleep(0)  # the answers' callbacks run before this task's own

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Exit once the requests still running have answered (pygls exits at once, so a chat
        turn cancelled by `shutdown` lost its -32800 answer whenever `exit` came quickly)."""
        yield from self._user_handler(types.EXIT, args[0] if args else None)
        returncode = 0 if is_shut_down(self) else 1
        if not self.running_requests():
            self._exit_now(returncode)
            return
        waiting = asyncio.ensure_future(self.settle())
        waiting.add_done_callback(lambda _: self._exit_now(returncode))

    def _exit_now(self, returncode: int) -> None:
        if self.writer is None:
            sys.exit(returncode)
        closed = self.writer.close()
        if inspect.isawaitable(closed):
            asyncio.ensure_future(closed).add_done_callback(lambda _: sys.exit(returncode))
        else:
            sys.exit(returncode)

    # ----- lifecycle hooks: who the client is, folders removed, shutdown -------------------------
    def _server_hooks(self) -> MyAgentServer:  # a method: pygls `getattr`s every attribute
        return cast("MyAgentServer", server_of(self))

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        """Remember the client's name (`clientInfo.name`), then pygls' own initialize."""
        info = params.client_info
        self._server_hooks().client_name = info.name if info is not None else None
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def lsp_workspace__did_change_workspace_folders(
        self, params: types.DidChangeWorkspaceFoldersParams
    ) -> Generator[Any, Any, None]:
        """pygls' own (and the feature handler), then `on_folders_changed`."""
        yield from super().lsp_workspace__did_change_workspace_folders(params)
        self._server_hooks().run_hooks(self._server_hooks().on_folders_changed)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls' own (and the feature handler), then `on_shutdown`."""
        yield from super().lsp_shutdown(*args)
        self._server_hooks().closing()

    # ----- document sync: ours, not pygls' workspace copy (see buffers.py) -----------------------
    # Same names as pygls' built-ins, so they replace them (pygls collects built-ins by `dir()`).
    def _buffers(self) -> Buffers:  # a method: pygls `getattr`s every attribute while building
        return cast("MyAgentServer", server_of(self)).buffers

    def _user_handler(self, method: str, params: Any) -> Generator[Any, Any, None]:
        handler = user_feature(self, method)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """Track the document's exact text, then run the feature handler."""
        self._buffers().open(params.text_document)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """Apply the changes exactly (pygls' version clamps the params in place and re-splits
        every line); the feature handler then gets the params untouched."""
        self._buffers().change(params)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        self._buffers().close(params.text_document.uri)
        yield from self._user_handler(types.TEXT_DOCUMENT_DID_CLOSE, params)


class MyAgentServer(LanguageServer):
    """The language server object the feature modules register on (hooks: see docs/lsp-core.md)."""

    def __init__(self) -> None:
        super().__init__(
            "my-agent",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=MyAgentProtocol,
        )
        self.init_options: dict[str, Any] = {}
        self.pulled_settings: dict[str, Any] = {}
        self.pushed_settings: dict[str, Any] = {}
        self.config: Settings = Settings.resolve([])
        self.on_config_changed: list[Callable[[], None]] = []
        self.on_memory_changed: list[Callable[[MemoryFile], None]] = []
        self.on_sessions_changed: list[Callable[[], None]] = []
        self.on_folders_changed: list[Callable[[], None]] = []  # after didChangeWorkspaceFolders
        self.on_shutdown: list[Callable[[], None]] = []  # `shutdown`, or the end of input: once
        self.client_name: str | None = None  # initialize's clientInfo.name, as the client sent it
        self._closed = False
        self.watcher_registered = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self.buffers = Buffers(self)
        self.memory = MemoryFolders(self)
        self.workspace_checks = EditorWorkspaceChecks(self)
        self._chat: ChatManager | None = None
        self._recall: RecallService | None = None
        self._recall_lock = threading.Lock()  # a store's thread may ask first (archive_write)

    @property
    def chat(self) -> ChatManager:
        """The chat sessions, built on the first chat request (lsp/chat_requests.py)."""
        if self._chat is None:
            from .chat import ChatManager  # here: the chat, the agent and openai load on first use

            self._chat = ChatManager(self)
        return self._chat

    @property
    def chat_started(self) -> bool:
        """Whether a chat request was served (there are sessions to shut down)."""
        return self._chat is not None

    @property
    def recall(self) -> RecallService:
        """The folders' recall archives, built on the first Recall request or archived write
        (lsp/recall_requests.py)."""
        with self._recall_lock:
            if self._recall is None:
                # Here: the archive's modules load on first use (start-up time).
                from .recall_service import RecallService

                self._recall = RecallService(self)
            return self._recall

    @property
    def recall_started(self) -> bool:
        """Whether the recall service runs (it has providers to follow and to shut down)."""
        return self._recall is not None

    # ----- hooks for the feature modules (typed by hooks.ServerHooks) ------------------------------
    @property
    def position_encoding(self) -> str:
        """The position encoding negotiated with the client (UTF-16 before `initialize`)."""
        try:
            encoding = self.workspace.position_encoding
        except RuntimeError:
            return UTF16
        value = getattr(encoding, "value", encoding)
        return value if value in (UTF8, UTF16, UTF32) else UTF16

    def memory_file(self, uri: str) -> MemoryFile | None:
        """`MemoryFile(folder, target, path)` when `uri` is a memory file, else None."""
        return memory_file_of(uri)

    def snapshot_sessions(self, folder: Path, target: str) -> list[tuple[str, frozenset[str]]]:
        """(session id, frozen snapshot entries) of the open chat sessions with memory on `folder`."""
        return self._chat.snapshots(folder, target) if self._chat is not None else []

    def memory_file_saved(self, uri: str) -> None:
        """The editor saved a memory file: announce it (source `user`)."""
        mf = self.memory_file(uri)
        if mf is not None:
            try:
                self.memory.file_changed(mf, saved_in_editor=True)
            except Exception:
                logger.exception("could not announce the save of %s", uri)

    # ----- settings --------------------------------------------------------------------------------
    def update_settings(self, *, notify: bool = True) -> None:
        """Recompute the settings; rebuild stores and tell listeners when something changed."""
        new = Settings.resolve(
            [self.init_options, self.pushed_settings, self.pulled_settings],
            untrusted=self.init_options.get("untrustedFolders"),
        )
        old, self.config = self.config, new
        if (old.memory_char_limit, old.user_char_limit, old.layer.user_profile) != (
            new.memory_char_limit,
            new.user_char_limit,
            new.layer.user_profile,
        ):
            self.memory.drop_stores()  # the limits or the user profile's place changed
        if notify and old != new:
            for callback in list(self.on_config_changed):
                try:
                    callback()
                except Exception:
                    logger.exception("config-changed callback failed")

    # ----- lifecycle -------------------------------------------------------------------------------
    def run_hooks(self, hooks: list[Callable[[], None]]) -> None:
        """Call each hook; one that fails is logged and the others still run."""
        for hook in list(hooks):
            try:
                hook()
            except Exception:
                logger.exception("hook %s failed", getattr(hook, "__qualname__", hook))

    def closing(self) -> None:
        """Run the `on_shutdown` hooks, once (at `shutdown`, else when the input ends)."""
        if not self._closed:
            self._closed = True
            self.run_hooks(self.on_shutdown)

    # ----- threads ---------------------------------------------------------------------------------
    def capture_loop(self) -> None:
        """Remember the event loop so worker threads can post work to it."""
        try:
            self.loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
        except RuntimeError:
            pass

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` on the event loop (in order), from any thread."""
        if self.loop is None or self.loop.is_closed():
            fn(*args)
            return
        self.loop.call_soon_threadsafe(_guarded, fn, args)

    # ----- stdio -----------------------------------------------------------------------------------
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio with a reader that resynchronises after malformed frames."""
        stop = threading.Event()
        set_stop_event(self, stop)  # pygls' `shutdown()` sets it
        reader = FrameReader(stdin if stdin is not None else sys.stdin.fileno())
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            protocol = cast(MyAgentProtocol, self.protocol)
            asyncio.run(serve_frames(stop, reader, protocol, protocol.settle))
        except BrokenPipeError:
            logger.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.closing()
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls' own, untyped


def _guarded(fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        fn(*args)
    except Exception:
        logger.exception("posted callback %s failed", getattr(fn, "__name__", fn))


class _QuietExpectedErrors(logging.Filter):
    """Keep expected request errors (bad params, cancellations) out of the server's stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Unable to deserialize message"):
            return False  # answered -32602 by MyAgentProtocol
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (RequestError, JsonRpcRequestCancelled))


def build_server() -> MyAgentServer:
    """A server with every feature module registered (each module: one concern, one `register`)."""
    ls = MyAgentServer()
    modules = (
        folders,
        memory_requests,
        chat_requests,
        diagnostics,
        actions,
        views,
        workspace_checks,
    )
    for feature in modules:
        feature.register(ls)
    recall_requests.register(ls)
    return ls


_server: MyAgentServer | None = None


def __getattr__(name: str) -> Any:
    """`server`: the process-wide server, built on first access."""
    global _server
    if name == "server":
        if _server is None:
            _server = build_server()
        return _server
    raise AttributeError(name)


def main() -> None:
    """Serve on stdio (what `my-agent serve` runs)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    from my_agent_core.process_guard import protect_process  # here: only `serve` needs it

    protect_process()  # the commands it runs cannot read the API key from /proc/<pid>/environ
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietExpectedErrors())
    global _server
    _server = _server or build_server()
    gc.freeze()  # the imports' objects are permanent: keep them out of every collection's scan
    _server.start_io()


if __name__ == "__main__":
    main()
