"""Announce changes of the memory files to MCP clients, whoever wrote them (this server, the editor,
another agent's server, a person with a text editor).

The files are watched cheaply: one `stat` of each every `interval` seconds (no inotify library is in
the environment; a memory file changes a few times a session) and at once after this server's own
writes. A change is announced both ways the protocol has:
- handshake-era clients (`initialize`): `notifications/resources/updated` for the URIs they
  subscribed to (`resources/subscribe`), and `notifications/resources/list_changed` (the listing
  carries each file's size and modification time, so it changed too);
- 2026-era clients: the same events on their `subscriptions/listen` streams (the SDK's
  `ListenHandler` over an in-process bus filters them by what each stream asked for).
A stdio server serves one client, so the handshake-era side keeps that one client's session.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["DEFAULT_INTERVAL_S", "FileWatch", "Signature"]

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 1.0
Signature = tuple[int, int, int, int] | None
"""What says a file changed: (device, inode, size, mtime in ns), None when it does not exist."""


def _signature(path: Path) -> Signature:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class FileWatch:
    """Watches `paths` (resource URI -> file) and tells subscribed clients when one changes."""

    def __init__(self, paths: Mapping[str, Path], *, interval: float = DEFAULT_INTERVAL_S) -> None:
        self.paths = dict(paths)
        self.interval = interval
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self._seen = {uri: _signature(path) for uri, path in self.paths.items()}
        self._peer: ServerSession | None = None
        self._subscribed: set[str] = set()

    # ---------------------------------------------------------------- handshake-era clients

    def met(self, ctx: ServerRequestContext[Any]) -> None:
        """Remember the handshake-era client of this request (where list changes go)."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._peer = ctx.session

    def subscribe(self, ctx: ServerRequestContext[Any], uri: str) -> None:
        self.met(ctx)
        self._subscribed.add(uri)

    def unsubscribe(self, uri: str) -> None:
        self._subscribed.discard(uri)

    # ---------------------------------------------------------------- watching

    async def run(self) -> None:
        """Check the files every `interval` seconds until cancelled."""
        while True:
            await anyio.sleep(self.interval)
            await self.check()

    async def check(self) -> list[str]:
        """Announce the files that changed since the last check; returns their URIs."""
        changed = []
        for uri, path in self.paths.items():
            now = _signature(path)
            if now != self._seen[uri]:
                self._seen[uri] = now
                changed.append(uri)
        if not changed:
            return changed
        for uri in changed:
            await self.bus.publish(ResourceUpdated(uri=uri))
        await self.bus.publish(ResourcesListChanged())
        peer = self._peer
        if peer is not None:
            await self._tell(peer, [uri for uri in changed if uri in self._subscribed])
        return changed

    async def _tell(self, peer: ServerSession, updated: list[str]) -> None:
        """Notifications on the client's connection; a client that went away is forgotten."""
        try:
            for uri in updated:
                await peer.send_resource_updated(uri)
            await peer.send_resource_list_changed()
        except Exception as exc:  # a closed stream: nobody is listening any more
            logger.debug("could not announce a memory change: %s", exc)
            if self._peer is peer:
                self._peer = None
