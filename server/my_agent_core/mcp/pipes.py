"""stdio for the MCP server on the event loop itself: no thread hop per line.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`, so each line read, each
response written and each flush is a hop to a worker thread and back: three per tool call, most of
what a call cost over the store's own work. When stdin and stdout are pipes or sockets (what every
MCP client gives a server), they are served here by the event loop's own pipe transports instead.
Anything else (a terminal, a file, /dev/null) gets the SDK's transport: a terminal must not be put in
non-blocking mode, which the shell that owns it would see too.

While serving, the descriptors are claimed as the SDK claims them: fd 0 reads /dev/null and fd 1
writes to stderr, so a stray `print` (a library, a child process) never lands in the protocol; the
wire is served from private duplicates, and everything is put back on exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["MAX_LINE_BYTES", "stdio_streams"]

#: A message longer than this is answered as unreadable (the SDK's transport has no bound at all).
MAX_LINE_BYTES = 64 * 1024 * 1024

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[Streams]:
    """The server's (read, write) streams over this process's stdin and stdout."""
    if not (_pipe_or_socket(0) and _pipe_or_socket(1)):
        async with stdio_server() as streams:
            yield streams
        return
    claimed = _Claim()
    try:
        async with _serve_pipes(claimed.stdin, claimed.stdout) as streams:
            yield streams
    finally:
        claimed.release()


class _Claim:
    """fd 0 and 1 pointed away from the wire; the wire kept on private descriptors."""

    def __init__(self) -> None:
        self.stdin = os.dup(0)
        self.stdout = os.dup(1)
        for fd in (self.stdin, self.stdout):
            os.set_inheritable(fd, False)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        try:
            os.dup2(2, 1)  # a stray print goes where a person reads
        except OSError:  # no stderr: nowhere
            sink = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(sink, 1)
            finally:
                os.close(sink)

    def release(self) -> None:
        for private, fd in ((self.stdin, 0), (self.stdout, 1)):
            with contextlib.suppress(OSError):
                os.set_blocking(private, True)  # the pipe may be shared with the parent
                os.dup2(private, fd)
            with contextlib.suppress(OSError):
                os.close(private)


@contextlib.asynccontextmanager
async def _serve_pipes(stdin_fd: int, stdout_fd: int) -> AsyncIterator[Streams]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    read_pipe = os.fdopen(stdin_fd, "rb", buffering=0, closefd=False)
    write_pipe = os.fdopen(stdout_fd, "wb", buffering=0, closefd=False)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), read_pipe
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, write_pipe
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)

    reading = anyio.CancelScope()

    async def read_lines() -> None:
        with reading:
            async with incoming_send:
                while True:
                    try:
                        line = await reader.readline()
                    except ValueError as exc:  # longer than MAX_LINE_BYTES: skipped, said so
                        await incoming_send.send(exc)
                        continue
                    if not line:
                        return
                    await incoming_send.send(_parsed(line))

    async def write_lines() -> None:
        async with outgoing_receive:
            async for item in outgoing_receive:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    writer.write(text.encode("utf-8") + b"\n")
                    await writer.drain()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client is gone: nobody to answer

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read_lines)
            group.start_soon(write_lines)
            try:
                yield incoming, outgoing
            finally:
                reading.cancel()  # stop reading; what was answered is still written out
                await outgoing.aclose()
    finally:
        read_transport.close()
        write_transport.close()


def _parsed(line: bytes) -> SessionMessage | Exception:
    """One line as a JSON-RPC message, or the error the dispatcher logs and drops it with."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(
            line.decode("utf-8", "replace"), by_name=False
        )
    except Exception as exc:
        return exc
    return SessionMessage(message)
