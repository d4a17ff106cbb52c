"""Everything one editor chat session is made of, built in a worker thread (it imports the agent
and openai, opens the archive, may find ripgrep).

A TRUSTED folder's session gets: its own memory store (journal author `agent:<sessionId>`, every
write announced as `myAgent/memory/changed`; under `myAgent.memory.approval` "untrusted" (the
default) a write that may carry untrusted text, under "ask" every write, is first approved like an
edit, with the sources its text may come from), the folder's context files frozen into its system
prompt, the
workspace tools wired to the editor (approvals through `myAgent/chat/approve`, edits through
`workspace/applyEdit` or the disk, unsaved buffers first, Stop kills a running command's process
group), a memory provider (the memory provider), persistence in the folder's session store, the coding
instructions and the compaction settings. An UNTRUSTED folder's session gets none of it: no
memory, no tools, no provider, no context files, nothing persisted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .approvals import LspApprover
from .chat_events import EventRouter
from .chat_sessions import open_session_store
from .client_link import ClientLink
from .edits import LspEditApplier
from .folders import FolderState, observed_store
from .settings import Settings

if TYPE_CHECKING:
    from my_agent_core.agent import (
        Agent,
        AgentConfig,
        CompactionSettings,
        ModelClient,
        SessionRecord,
        SessionStore,
    )
    from my_agent_core.coding_tools import WorkspaceSettings
    from my_agent_core.memory.journal import JournalRecord
    from my_agent_core.memory.providers import MemoryManager
    from my_agent_core.memory.store import MemoryStore
    from my_agent_core.tools import Tool

    from .server import MyAgentServer

__all__ = ["BuiltSession", "ModelClients", "SessionBuilder", "workspace_settings"]


@dataclass
class BuiltSession:
    """An agent and the parts its owner must shut down with it."""

    agent: Agent
    store: MemoryStore | None
    manager: MemoryManager | None
    trusted: bool


class ModelClients:
    """One OpenAI client per endpoint, shared by the sessions of this server: building one costs
    ~20 ms (its TLS context), and its connection pool is thread-safe. The key is read from the
    server's environment, which the editor sets when it starts the server (and restarts it when the
    key changes), so the key is part of what a client is kept for."""

    def __init__(self) -> None:
        self._clients: dict[tuple[str | None, str | None], ModelClient] = {}
        self._lock = threading.Lock()

    def get(self, base_url: str | None) -> ModelClient:
        from my_agent_core.agent import build_client  # here: the agent and openai load on first use

        key = (base_url, os.environ.get("OPENAI_API_KEY"))
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = build_client(base_url=base_url)
            return client


def workspace_settings(settings: Settings) -> WorkspaceSettings:
    """`myAgent.tools.*` as the workspace tools take them."""
    from my_agent_core.coding_tools import WorkspaceSettings  # here: with the first session

    timeout = float(settings.tools.command_timeout)
    return WorkspaceSettings(
        approve_edits=settings.tools.approve_edits,
        allowed_commands=settings.tools.allowed_commands,
        ripgrep=settings.tools.ripgrep_path,
        command_timeout_s=timeout,
        command_max_timeout_s=max(WorkspaceSettings.command_max_timeout_s, timeout),
    )


def compaction_settings(settings: Settings) -> CompactionSettings:
    from my_agent_core.agent import CompactionSettings  # here: with the first session

    return CompactionSettings(
        context_window=settings.chat.context_window, compact_at=settings.chat.compact_at
    )


class SessionBuilder:
    """Builds (or resumes) the agent of one session; call `start` / `resume` in a worker thread."""

    def __init__(
        self,
        ls: MyAgentServer,
        folder: FolderState,
        settings: Settings,
        session_id: str,
        router: EventRouter,
        clients: ModelClients,
    ) -> None:
        self.ls = ls
        self.clients = clients
        self.folder = folder
        self.settings = settings
        self.session_id = session_id
        self.router = router
        self.trusted = settings.is_trusted(folder.path)
        self.token = threading.Event()  # the Stop button: the agent's cancel token, the tools' too
        self._store: MemoryStore | None = None

    # ----- the two ways a session begins ---------------------------------------------------------
    def start(self) -> BuiltSession:
        from my_agent_core.agent import build_agent, coding_instructions  # here: start-up time

        store, manager = self._memory()
        meta: dict[str, object] = {"memory": self.trusted, "folder": self.folder.uri}
        with _shut_down_on_failure(manager):
            context_block = None
            if self.trusted:  # an untrusted folder's context files are never read
                from my_agent_core.context.files import read_context_files  # here: start-up time

                context = read_context_files(
                    self.folder.path, max_chars=self.settings.context_max_chars
                )
                context_block = context.block or None
                meta["contextFiles"] = context.to_json()
            config = dataclasses.replace(
                self._config(store, manager),
                instructions=coding_instructions(self.folder.path) if self.trusted else None,
                context_block=context_block,
                sessions=self._sessions(),
                session_id=self.session_id,
                session_meta=meta,
            )
            agent = build_agent(config)
        return BuiltSession(agent, store, manager, self.trusted)

    def resume(self, record: SessionRecord, sessions: SessionStore) -> BuiltSession:
        """The persisted session with its ORIGINAL system prompt, tool schemas and history; the
        tools and the store given here only provide the handlers (bound by name)."""
        from my_agent_core.agent import build_agent  # here: start-up time (the agent package)

        store, manager = self._memory()
        with _shut_down_on_failure(manager):
            config = self._config(store, manager)
            agent = build_agent(dataclasses.replace(config, resume=record, sessions=sessions))
        return BuiltSession(agent, store, manager, self.trusted)

    def _config(self, store: MemoryStore | None, manager: MemoryManager | None) -> AgentConfig:
        """What a started and a resumed session share: model, client, memory, tools, events."""
        from my_agent_core.agent import AgentConfig  # here: start-up time (the agent package)

        return AgentConfig(
            model=self.settings.model,
            client=self._client(),
            memory_dir=False,
            memory_store=store,
            memory_approval=self.settings.layer.approval,
            memory_approver=self._approver() if store is not None else None,
            on_approval=self.router.on_decision,
            tools=self._tools(),
            on_event=self.router.emit,
            provider=manager,
            cancel_token=self.token,
            compaction=compaction_settings(self.settings),
        )

    # ----- the parts ----------------------------------------------------------------------------
    def _client(self) -> ModelClient:
        return self.clients.get(self.settings.base_url)

    def _sessions(self) -> SessionStore | None:
        return open_session_store(self.folder.path, self.settings) if self.trusted else None

    def _memory(self) -> tuple[MemoryStore | None, MemoryManager | None]:
        if not self.trusted:
            return None, None
        from my_agent_core.memory.providers import ProviderContext, build_manager  # start-up time

        store = observed_store(
            self.folder.memory_dir, self.settings, f"agent:{self.session_id}", self._on_write
        )
        self._store = store
        manager = build_manager(
            ProviderContext(
                self.folder.path, self.session_id, self.settings.layer.provider_settings()
            ),
            on_error=self.router.on_provider_error,
        )
        self.router.provider_broken = lambda: manager.broken is not None
        return store, manager

    def _approver(self) -> LspApprover:
        return LspApprover(
            ClientLink(self.ls), self.session_id, lambda: self.router.current_call, self.token
        )

    def _on_write(self, target: str, before: str | None, record: JournalRecord) -> None:
        """A write of this session's store (its worker thread): announce it as the agent's."""
        self.router.written.add(record.id)
        journal_error = self._store.journal_error if self._store is not None else None
        self.ls.memory.note_write(
            self.folder.path, target, before, record, "agent", self.session_id, journal_error
        )

    def _tools(self) -> list[Tool]:
        if not self.trusted:
            return []
        from my_agent_core.coding_tools import make_workspace_tools  # here: start-up time

        link = ClientLink(self.ls)
        caps = self.ls.client_capabilities.workspace
        edit_caps = caps.workspace_edit if caps is not None else None
        applier = LspEditApplier(
            link,
            self.ls.buffers,
            versioned=bool(edit_caps and edit_caps.document_changes),
            can_apply=bool(caps and caps.apply_edit),
        )
        app_roots = (self.settings.app_root,) if self.settings.app_root else ()
        return make_workspace_tools(
            Path(self.folder.path),
            approver=self._approver(),
            applier=applier,
            buffers=self.ls.buffers,
            settings=workspace_settings(self.settings),
            cancel=self.token,
            on_decision=self.router.on_decision,
            on_output=self.router.on_command_output,
            app_roots=app_roots,
        )


@contextlib.contextmanager
def _shut_down_on_failure(manager: MemoryManager | None) -> Iterator[None]:
    """A session that fails to build must not leave its provider (threads, an open archive)."""
    try:
        yield
    except BaseException:
        if manager is not None:
            manager.shutdown()
        raise
