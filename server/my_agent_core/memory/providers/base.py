"""Memory providers: the provider interface, and the manager that runs one provider safely.

A provider (the built-in archive, PostgreSQL, a third-party plug-in) is code the agent does not control:
it may raise, hang on a lock or a network, or slow every turn down. The `MemoryManager` is the only way
the agent reaches it: each hook runs on the manager's own worker thread and the caller waits at most a
time limit, so a failing or slow provider is logged and skipped and never fails a turn. A provider that
raises, or times out `MAX_TIMEOUTS` times in a row, is broken: reported once (log + `on_error`) and not
called again in this session. A provider that raises `ProviderUnavailable` (its server is down) only
fails that call: the next one tries again, and what a memory write could not archive meanwhile is
caught up from the journal once it answers (`backlog.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Protocol, TypeVar

from my_agent_core.memory.journal import JournalRecord
from my_agent_core.memory.providers.backlog import Backlog
from my_agent_core.memory.providers.items import RecallItem, SearchHit
from my_agent_core.memory.providers.recall import frame, select
from my_agent_core.memory.store import WriteEvent, WriteListener

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_TIMEOUTS",
    "ErrorCallback",
    "MemoryManager",
    "MemoryProvider",
    "ProviderAlreadySet",
    "ProviderFailed",
    "ProviderUnavailable",
]

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 2.0
SHUTDOWN_TIMEOUT_S = 5.0
MAX_TIMEOUTS = 3
DEFAULT_RECALL_CHARS = 2000

T = TypeVar("T")
Message = Mapping[str, object]
ErrorCallback = Callable[[str, str], None]
"""`on_error(provider_name, message)`: called once when a provider breaks, and for notices."""
History = Callable[[], Sequence[JournalRecord]]
"""The memory journal's newest records (`MemoryStore.log`): where removed entries are caught up from."""


class ProviderAlreadySet(RuntimeError):
    """A MemoryManager holds at most one provider."""


class ProviderUnavailable(RuntimeError):
    """Raised by a provider whose backend cannot be reached right now (a database server that is
    down): the call fails, the provider stays on and the next call tries again."""


class ProviderFailed(RuntimeError):
    """A call that must not pass for an empty answer (`search_checked`, `check`) failed; the message
    says why (the provider broke, is unreachable, or did not answer in time)."""


class MemoryProvider:
    """An external memory: override any hook; the defaults do nothing.

    Hooks run on the manager's worker thread, one at a time, in the order the agent calls them.
    `prefetch` returns "" when nothing is relevant (most turns). A provider that can rank items
    overrides `prefetch_items` instead, so the manager can deduplicate, scan and bound each item; the
    default `prefetch_items` turns the text of `prefetch` into one item per paragraph.
    """

    name: str = "provider"

    def prefetch(self, query: str) -> str:
        """Text relevant to the user message `query`, or ""."""
        if type(self).prefetch_items is MemoryProvider.prefetch_items:
            return ""
        return "\n\n".join(item.text for item in self.prefetch_items(query))

    def prefetch_items(self, query: str) -> list[RecallItem]:
        """The items relevant to `query`, best first (default: paragraphs of `prefetch`)."""
        if type(self).prefetch is MemoryProvider.prefetch:
            return []
        text = self.prefetch(query)
        paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
        return [
            RecallItem(id=_digest(p), kind="note", text=p, source=self.name) for p in paragraphs
        ]

    def sync_turn(self, user: str, assistant: str) -> None:
        """A finished turn: the user's message and the final reply."""

    def on_memory_write(
        self, target: str, action: str, before: str | None, after: str | None
    ) -> None:
        """One entry changed in curated memory: `before` None = added, `after` None = removed."""

    def on_session_end(self, messages: Sequence[Message]) -> None:
        """The session is over (closed, reset or replaced); `messages` is its history."""

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """Up to `limit` items matching `query`, best first."""
        return []

    def check(self) -> None:
        """Raise when the provider cannot work (its server is unreachable, its DSN malformed). A
        long-lived front end (`my-agent mcp`) calls it once at start, so a bad configuration is an
        error there and then, not an empty search later. The default: nothing to check."""

    def shutdown(self) -> None:
        """Release connections and files; no hook is called afterwards."""


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class _Worker:
    """One daemon thread running hooks in order; callers wait for a result with a time limit."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], Future[object]] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(
            target=self._run, name=f"memory-provider-{name}", daemon=True
        )
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((fn, future))  # type: ignore[arg-type]
        return future

    def stop(self) -> None:
        self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)


class _Failed:
    """Why a guarded call produced no result (the provider broke, is down, or was too slow)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Runner(Protocol):
    def __call__(self, hook: str, fn: Callable[[MemoryProvider], None]) -> object: ...


class MemoryManager:
    """Holds at most ONE provider and calls its hooks under a guard and a time limit.

    With no provider (no provider, a sub-agent, a provider that broke) every hook is a cheap no-op
    returning its empty value, so callers never test for a provider first. `backlog` (set by
    `build_manager`) keeps the journal ids of memory writes the provider could not archive.
    """

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        on_error: ErrorCallback | None = None,
        backlog: Backlog | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.on_error = on_error
        self.backlog = backlog
        self._provider: MemoryProvider | None = None
        self._worker: _Worker | None = None
        self._broken: str | None = None
        self._timeouts = 0
        self._recalled: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._outage = False
        self.unarchived = 0
        """Entries taken out of memory in this process that the provider could not archive (yet)."""
        self.last_failure: str | None = None
        """Why the latest failed call failed (a broken, unreachable or slow provider)."""

    # ---------------------------------------------------------------- the one provider

    def add_provider(self, provider: MemoryProvider) -> None:
        """Install `provider`; a second one raises `ProviderAlreadySet` (exactly one at a time)."""
        if not isinstance(provider, MemoryProvider):
            raise TypeError(
                f"{type(provider).__name__} is not a MemoryProvider: subclass "
                "my_agent_core.memory.providers.MemoryProvider and override the hooks you need."
            )
        with self._lock:
            if self._provider is not None:
                raise ProviderAlreadySet(
                    f"A memory provider is already active ({self._provider.name}); only one can be "
                    f"used at a time, so {provider.name!r} was not added."
                )
            self._provider = provider
            self._worker = _Worker(provider.name)
            self._closed = False

    @property
    def provider(self) -> MemoryProvider | None:
        """The provider, or None (none set, broken, or shut down)."""
        return None if self._broken is not None or self._closed else self._provider

    @property
    def active(self) -> bool:
        return self.provider is not None

    @property
    def name(self) -> str | None:
        return self._provider.name if self._provider is not None else None

    @property
    def broken(self) -> str | None:
        """Why the provider was dropped for this session, or None."""
        return self._broken

    def for_subagent(self) -> MemoryManager:
        """The manager a sub-agent gets: no provider (sub-agents neither recall nor archive)."""
        return MemoryManager(timeout_s=self.timeout_s)

    def new_session(self) -> None:
        """Forget what was recalled (a new session's history does not hold it any more)."""
        self._recalled.clear()

    # ---------------------------------------------------------------- hooks

    def prefetch(self, query: str) -> str:
        """The provider's text for `query` ("" when nothing is relevant or it fails)."""
        return self._call("prefetch", lambda p: p.prefetch(query), "")

    def recall(
        self,
        query: str,
        *,
        snapshot_entries: Sequence[str] = (),
        max_chars: int = DEFAULT_RECALL_CHARS,
    ) -> str:
        """What to append to the user message `query`: the relevant items not already in the frozen
        snapshot (`snapshot_entries`) nor recalled earlier in this session, scanned (unsafe items are
        dropped), rendered by the one prompt renderer inside `<recalled_memory>` ... `</recalled_memory>`, at most `max_chars`
        characters. "" when nothing is relevant, which is most turns."""
        nothing: list[RecallItem] = []
        items = self._call("prefetch", lambda p: p.prefetch_items(query), nothing)
        if not items:
            return ""
        chosen = select(items, snapshot_entries=snapshot_entries, seen=self._recalled)
        framed = frame(chosen, max_chars=max_chars)
        self._recalled.update(framed.shown)
        return framed.text

    def sync_turn(self, user: str, assistant: str) -> None:
        """Archive a finished turn (the user message as typed, the final reply)."""
        self._call("sync_turn", lambda p: p.sync_turn(user, assistant), None)

    def on_memory_write(
        self, target: str, action: str, before: str | None, after: str | None
    ) -> None:
        self._call(
            "on_memory_write", lambda p: p.on_memory_write(target, action, before, after), None
        )

    def memory_write_listener(self, history: History | None = None) -> WriteListener:
        """A `MemoryStore(on_write=...)` listener: one `on_memory_write` per changed entry.

        A write that adds only is handed over without waiting (nothing leaves memory, so nothing can
        be lost). A write that takes entries out waits for the provider: when it cannot archive them
        (broken, unreachable, too slow) the record's id goes to the `backlog`, `unarchived` counts
        the entries, and they are caught up from `history` (the store's journal) once the provider
        answers again."""

        def listener(event: WriteEvent) -> None:
            record = event.record
            if self._provider is None:
                return
            removed = _removed(record)
            if not removed:
                self._call("on_memory_write", _writes(event.target, record), None, wait=False)
                return
            outcome = self._attempt("on_memory_write", _writes(event.target, record))
            if isinstance(outcome, _Failed):
                self._missed(record, len(removed))
            elif history is not None:
                self.catch_up(history)

        return listener

    def catch_up(self, history: History, *, wait: bool = True) -> int:
        """Archive the entries of the backlog's records (writes the provider missed, in this process
        or another) from the journal; returns how many records were archived. Records that fell
        out of the journal are reported once through `on_error` and dropped from the backlog.
        `wait=False`: queue it behind the hooks already waiting and return 0 at once."""
        backlog = self.backlog
        if backlog is None or self.provider is None or not backlog.pending():
            return 0
        if wait:
            return self._replay(backlog, history, self._attempt)
        worker = self._worker
        if worker is not None:
            worker.submit(lambda: self._replay(backlog, history, self._direct))
        return 0

    def _replay(self, backlog: Backlog, history: History, run: _Runner) -> int:
        waiting = backlog.pending()
        if not waiting:
            return 0
        try:
            records = {record.id: record for record in history()}
        except Exception:
            logger.exception("reading the memory journal to catch the archive up failed")
            return 0
        done: list[str] = []
        lost: list[str] = []
        for record_id in waiting:
            record = records.get(record_id)
            if record is None:
                lost.append(record_id)
                continue
            outcome = run("on_memory_write", _writes(record.target, record, removed_only=True))
            if isinstance(outcome, _Failed):
                break
            done.append(record_id)
        backlog.remove([*done, *lost])
        if lost:
            self._notice(
                f"{len(lost)} change(s) that took entries out of memory while the archive was "
                "unavailable are no longer in the memory history (history.jsonl keeps the newest "
                "changes only), so what they removed was not archived."
            )
        return len(done)

    def on_session_end(self, messages: Sequence[Message]) -> None:
        history = [dict(m) for m in messages]
        self._call("on_session_end", lambda p: p.on_session_end(history), None)

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        return self._call("search", lambda p: p.search(query, limit), [])

    def search_checked(self, query: str, limit: int = 10) -> list[SearchHit]:
        """`search`, but a provider that fails, is unreachable or too slow raises `ProviderFailed`
        (a tool must never pass a failure off as "nothing matched")."""
        if self.provider is None:
            raise ProviderFailed(self._unavailable())
        outcome = self._attempt("search", lambda p: p.search(query, limit))
        if isinstance(outcome, _Failed):
            raise ProviderFailed(outcome.reason)
        return outcome

    def check(self) -> None:
        """Run the provider's own `check` (connect, read its schema) under the time limit;
        `ProviderFailed` says why it cannot work. Nothing to check without a provider."""
        if self._provider is None:
            return
        if self.provider is None:
            raise ProviderFailed(self._unavailable())
        outcome = self._attempt("check", lambda p: p.check(), quiet=True)
        if isinstance(outcome, _Failed):
            raise ProviderFailed(outcome.reason)

    def shutdown(self) -> None:
        """Shut the provider down (waiting at most SHUTDOWN_TIMEOUT_S) and stop the worker."""
        if self._provider is None or self._closed:
            return
        if self._broken is None:
            self._call("shutdown", lambda p: p.shutdown(), None, timeout_s=SHUTDOWN_TIMEOUT_S)
        else:  # still release its files, but never wait on a provider that hung
            worker = self._worker
            provider = self._provider
            if worker is not None:
                worker.submit(provider.shutdown)
        self._closed = True
        if self._worker is not None:
            self._worker.stop()

    # ---------------------------------------------------------------- the guard

    def _call(
        self,
        hook: str,
        fn: Callable[[MemoryProvider], T],
        default: T,
        *,
        timeout_s: float | None = None,
        wait: bool = True,
    ) -> T:
        """`fn(provider)` on the worker, its result or `default` when it fails. `wait=False`: hand
        it over and return `default` at once (a failure is still reported, from the worker)."""
        if not wait:
            provider = self.provider
            worker = self._worker
            if provider is not None and worker is not None:
                worker.submit(lambda: self._settle(hook, provider, lambda: fn(provider)))
            return default
        outcome = self._attempt(hook, fn, timeout_s=timeout_s)
        return default if isinstance(outcome, _Failed) else outcome

    def _attempt(
        self,
        hook: str,
        fn: Callable[[MemoryProvider], T],
        *,
        timeout_s: float | None = None,
        quiet: bool = False,
    ) -> T | _Failed:
        """`fn(provider)` on the worker within the time limit, or why it failed. `quiet`: the
        caller reports an unreachable provider itself (no log line, no notice)."""
        provider = self.provider
        worker = self._worker
        if provider is None or worker is None:
            return _Failed(self._unavailable())
        limit = self.timeout_s if timeout_s is None else timeout_s
        future = worker.submit(lambda: fn(provider))
        try:
            result = future.result(timeout=limit)
        except FutureTimeout:
            future.cancel()  # still queued: drop it; running: it finishes on its own
            self._timeouts += 1
            logger.warning(
                "memory provider %s: %s took longer than %.1f s; skipped",
                provider.name,
                hook,
                limit,
            )
            reason = f"the memory provider {provider.name!r} did not answer within {limit:.1f} s"
            if self._timeouts >= MAX_TIMEOUTS:
                self._break(
                    provider,
                    f"it did not answer within {limit:.1f} s, {self._timeouts} times in a row",
                )
            return self._failed(reason)
        except Exception as exc:
            return self._failed(self._failure(provider, hook, exc, quiet=quiet))
        self._timeouts = 0
        self._outage = False
        return result

    def _direct(self, hook: str, fn: Callable[[MemoryProvider], T]) -> T | _Failed:
        """`_attempt` for code already running on the worker (waiting on itself would deadlock)."""
        provider = self.provider
        if provider is None:
            return _Failed(self._unavailable())
        try:
            return fn(provider)
        except Exception as exc:
            return self._failed(self._failure(provider, hook, exc))

    def _settle(self, hook: str, provider: MemoryProvider, run: Callable[[], object]) -> None:
        """A call handed over without waiting, on the worker: its failure is handled as usual."""
        try:
            run()
        except Exception as exc:
            self._failure(provider, hook, exc)
        else:
            self._timeouts = 0
            self._outage = False

    def _failure(
        self, provider: MemoryProvider, hook: str, exc: Exception, *, quiet: bool = False
    ) -> str:
        """Log a hook's exception; break the provider unless it is only unreachable. The reason.
        `quiet`: only the reason (the caller reports it and stops)."""
        if quiet:
            return f"the memory provider {provider.name!r} cannot be used: {exc}"
        if isinstance(exc, ProviderUnavailable):
            logger.warning("memory provider %s: %s failed: %s", provider.name, hook, exc)
            if not self._outage:  # once per outage: the next success ends it
                self._outage = True
                self._notice(
                    f"The memory provider {provider.name!r} is unavailable: {exc} Nothing is "
                    "recalled or archived until it answers again (it is tried on every turn)."
                )
            return f"the memory provider {provider.name!r} is unavailable: {exc}"
        logger.exception("memory provider %s: %s failed", provider.name, hook)
        reason = f"{hook} failed: {type(exc).__name__}: {exc}"
        self._break(provider, reason)
        return f"the memory provider {provider.name!r} failed: {type(exc).__name__}: {exc}"

    def _failed(self, reason: str) -> _Failed:
        self.last_failure = reason
        return _Failed(reason)

    def _unavailable(self) -> str:
        if self._closed and self._provider is not None:
            return f"the memory provider {self.name!r} was shut down"
        if self._broken is not None:
            return (
                f"the memory provider {self.name!r} was turned off for this session: {self._broken}"
            )
        return "no memory provider is active"

    def _missed(self, record: JournalRecord, entries: int) -> None:
        self.unarchived += entries
        backlog = self.backlog
        if backlog is None:
            return
        try:
            backlog.add([record.id])
        except Exception:
            logger.exception("could not note the unarchived memory change %s", record.id)

    def _notice(self, message: str) -> None:
        logger.warning("%s", message)
        if self.on_error is not None:
            with contextlib.suppress(Exception):
                self.on_error(self.name or "provider", message)

    def _break(self, provider: MemoryProvider, reason: str) -> None:
        with self._lock:
            if self._broken is not None:
                return
            self._broken = reason
        message = (
            f"The memory provider {provider.name!r} was turned off for this session: {reason}. "
            "Chat goes on without recalled memory."
        )
        logger.error("%s", message)
        if self.on_error is not None:
            with contextlib.suppress(Exception):
                self.on_error(provider.name, message)


def _removed(record: JournalRecord) -> list[str]:
    """The entries a journal record took out of memory (what an archive keeps)."""
    return [c.before for c in record.changes if c.before is not None and c.before.strip()]


def _writes(
    target: str, record: JournalRecord, *, removed_only: bool = False
) -> Callable[[MemoryProvider], None]:
    """One job calling `on_memory_write` for each entry `record` changed (one worker hop)."""

    def run(provider: MemoryProvider) -> None:
        for change in record.changes:
            if removed_only and (change.before is None or not change.before.strip()):
                continue
            provider.on_memory_write(target, record.action, change.before, change.after)

    return run
