"""The agent: a streaming ReAct loop over an OpenAI-compatible endpoint with a frozen-memory system prompt.

Design rule: within a session each request is a byte-for-byte extension of the previous successful one.
The system prompt and tool schemas are built once per session, messages are plain dicts appended once
and never rewritten, and tool-call arguments are stored exactly as the model streamed them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..tools import Tool, ToolResult, clean_text, tool
from .errors import AgentCancelled, AgentConfigError, AgentError, endpoint_error
from .prompt import build_system_prompt
from .stream import StepResult, StreamCancelled, StreamingRequest, StreamWorker, ToolCallSlot
from .usage import TurnUsage, Usage

__all__ = ["DEFAULT_MAX_STEPS", "MEMORY_FAILURE_LIMIT", "Agent", "build_client"]

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 20
MEMORY_FAILURE_LIMIT = 3
MEMORY_TOOL_NAME = "memory"
CWD_MEMORY_DIR = Path(".my_agent_core") / "memory"

EventCallback = Callable[[dict[str, Any]], None]

_MEMORY_STOP = (
    "memory is not available for the rest of this turn: {n} memory calls failed. Do not call "
    "`memory` again now; continue your reply to the user without saving."
)
_STEP_LIMIT_NOTE = (
    "\n\n[Note from the agent framework: this was the last tool step of this turn. Reply to the user "
    "now without calling any more tools.]"
)
_CANCELLED_TOOL = "Error: the user cancelled the turn before this tool call ran."


def build_client(api_key: str | None = None, base_url: str | None = None) -> Any:
    """An `openai.OpenAI` client from the arguments or OPENAI_API_KEY / OPENAI_BASE_URL (imported lazily).

    A key is required unless a base URL is given (local endpoints usually need none).
    """
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if not key:
        if not url:
            raise AgentConfigError(
                "No model endpoint configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for an "
                "OpenAI-compatible endpoint), or pass client=."
            )
        key = "no-key"
    import openai

    try:
        return openai.OpenAI(api_key=key, base_url=url)
    except openai.OpenAIError as exc:
        raise AgentConfigError(f"Cannot build the OpenAI client: {exc}") from exc


def _resolve_memory_dir(memory_dir: Any) -> Path | None:
    if memory_dir is False:
        return None
    if memory_dir is None:
        candidate = Path.cwd() / CWD_MEMORY_DIR
        return candidate if candidate.is_dir() else None
    if memory_dir is True:
        raise TypeError("memory_dir must be None, False or a path")
    path = Path(memory_dir).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


class Agent:
    """A chat session with tools and curated memory; see CONTRACT.md "Python API: tools and the agent"."""

    def __init__(
        self,
        model: str | None = None,
        client: Any = None,
        memory_dir: str | os.PathLike[str] | bool | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        max_steps: int = DEFAULT_MAX_STEPS,
        on_event: EventCallback | None = None,
        instructions: str | None = None,
        memory_store: Any = None,
        request_options: dict[str, Any] | None = None,
    ) -> None:
        self.model = model or os.environ.get("MY_AGENT_MODEL") or None
        if not self.model:
            raise AgentConfigError("No model configured: pass model= or set MY_AGENT_MODEL.")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.client = client if client is not None else build_client()
        self.max_steps = max_steps
        self.on_event = on_event
        self.instructions = instructions
        self.request_options = dict(request_options or {})
        self._extra_tools = [t if isinstance(t, Tool) else tool(t) for t in tools]

        if memory_store is not None:
            self.memory_store = memory_store
        else:
            path = _resolve_memory_dir(memory_dir)
            self.memory_store = None
            if path is not None:
                from ..memory import MemoryStore

                self.memory_store = MemoryStore(path)
        self.memory_tool: Tool | None = None
        if self.memory_store is not None:
            from ..memory import make_memory_tool

            self.memory_tool = make_memory_tool(self.memory_store)
        self.tools: list[Tool] = (
            [self.memory_tool] if self.memory_tool else []
        ) + self._extra_tools
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate tool names: {', '.join(duplicates)}")
        self._tools_by_name = {t.name: t for t in self.tools}

        self._run_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._run_thread: int | None = None
        self._cancel_requested = threading.Event()
        self._active_request: StreamingRequest | None = None
        self._worker = StreamWorker()
        self._memory_failures = 0
        self._start_session()

    # --- session -------------------------------------------------------------------------------------

    @property
    def memory_enabled(self) -> bool:
        return self.memory_store is not None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """A copy of the session history as sent (system message first)."""
        return list(self._messages)

    def _start_session(self) -> None:
        snapshot = None
        if self.memory_store is not None:
            self.memory_store.load_from_disk()
            snapshot = self.memory_store.format_all_for_system_prompt()
        self.system_prompt: str = build_system_prompt(self.instructions, snapshot)
        self._tool_schemas: list[dict[str, Any]] = [t.schema for t in self.tools]
        self._messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}]
        self.usage = Usage()

    def reset(self) -> None:
        """New session: history cleared, memory reloaded from disk, new snapshot and system prompt."""
        if self._run_thread == threading.get_ident():
            raise AgentError("reset() cannot be called from inside a running turn.", kind="busy")
        self.cancel()
        with self._run_lock:
            self._start_session()

    def spawn_subagent(
        self,
        instructions: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
        max_steps: int | None = None,
        on_event: EventCallback | None = None,
    ) -> Agent:
        """A sub-agent on the same client and model, always without memory and without the memory tool."""
        chosen = list(self._extra_tools if tools is None else tools)
        chosen = [t for t in chosen if getattr(t, "name", None) != MEMORY_TOOL_NAME]
        return Agent(
            model=self.model,
            client=self.client,
            memory_dir=False,
            tools=chosen,
            max_steps=max_steps or self.max_steps,
            on_event=on_event,
            instructions=instructions,
            memory_store=None,
            request_options=self.request_options,
        )

    # --- cancellation --------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the running turn from any thread; `run()` raises AgentCancelled. No-op when idle."""
        with self._state_lock:
            if self._run_thread is None:
                return
            self._cancel_requested.set()
            request = self._active_request
        if request is not None:
            request.cancel()

    @property
    def running(self) -> bool:
        return self._run_thread is not None

    async def arun(self, message: str) -> str:
        """`run()` in a worker thread; cancelling the awaiting task cancels the turn and waits for it."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, self.run, message)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.wait([future])
            raise

    # --- the turn ------------------------------------------------------------------------------------

    def run(self, message: str) -> str:
        """Send a user message and loop (model -> tools -> model) until an answer without tool calls."""
        if not isinstance(message, str) or not message.strip():
            raise AgentError("The message is empty.", kind="invalid")
        if not self._run_lock.acquire(blocking=False):
            raise AgentError("The agent is already running a turn.", kind="busy")
        with self._state_lock:
            self._run_thread = threading.get_ident()
            self._cancel_requested.clear()
        self._memory_failures = 0
        turn = TurnUsage()
        self.usage.turns.append(turn)
        checkpoint = len(self._messages)
        self._keep = checkpoint
        try:
            self._messages.append({"role": "user", "content": clean_text(message)})
            reply = self._loop(turn)
        except BaseException as exc:
            del self._messages[self._keep :]
            error = exc
            if isinstance(exc, StreamCancelled):
                error = AgentCancelled()
            elif not isinstance(exc, AgentError) and isinstance(exc, Exception):
                error = endpoint_error(exc)
            if isinstance(error, AgentError):
                self._emit({"kind": "error", "message": error.message, "errorKind": error.kind})
            if error is exc:
                raise
            raise error from exc
        finally:
            with self._state_lock:
                self._run_thread = None
                self._active_request = None
            self._run_lock.release()
        self._emit({"kind": "done", "reply": reply, "usage": self._usage_summary()})
        return reply

    def _usage_summary(self) -> dict[str, Any]:
        summary = self.usage.as_dict()
        summary.pop("turns")
        return summary

    def _loop(self, turn: TurnUsage) -> str:
        empty_retries = 0
        step = 0
        while True:
            self._check_cancel()
            step += 1
            result = self._request(turn)
            self._check_cancel()
            if not result.tool_calls:
                if not result.text.strip():
                    if empty_retries < 1:  # same request again: a provider hiccup, still cached
                        empty_retries += 1
                        step -= 1
                        continue
                    raise AgentError(
                        "The model returned an empty reply (no text and no tool calls) twice.",
                        kind="empty_reply",
                    )
                self._messages.append({"role": "assistant", "content": result.text})
                return result.text
            if step > self.max_steps:
                raise AgentError(
                    f"Step limit reached: the model still called tools after {self.max_steps} "
                    "steps. Ask it to continue in a new message.",
                    kind="step_limit",
                )
            self._messages.append(_assistant_message(result))
            last_step = step == self.max_steps
            for index, call in enumerate(result.tool_calls):
                if self._cancel_requested.is_set():
                    for rest in result.tool_calls[index:]:
                        self._messages.append(_tool_message(rest.id, _CANCELLED_TOOL))
                    self._keep = len(self._messages)
                    raise AgentCancelled()
                text = self._call_tool(call).as_message_text()
                if last_step:
                    text += _STEP_LIMIT_NOTE
                self._messages.append(_tool_message(call.id, text))
            self._keep = len(self._messages)

    def _check_cancel(self) -> None:
        if self._cancel_requested.is_set():
            raise AgentCancelled()

    def _request(self, turn: TurnUsage) -> StepResult:
        kwargs: dict[str, Any] = {"stream_options": {"include_usage": True}}
        kwargs.update(self.request_options)  # e.g. temperature; stream_options=None drops it
        kwargs.update(model=self.model, messages=list(self._messages), stream=True)
        if kwargs["stream_options"] is None:  # for endpoints that reject it
            del kwargs["stream_options"]
        if self._tool_schemas:
            kwargs["tools"] = self._tool_schemas
        request = StreamingRequest(
            lambda: self.client.chat.completions.create(**kwargs),
            lambda text: self._emit({"kind": "delta", "text": text}),
        )
        with self._state_lock:
            self._active_request = request
            cancelled = self._cancel_requested.is_set()
        if cancelled:
            raise AgentCancelled()
        self._worker.submit(request)
        try:
            result = request.wait()
        finally:
            with self._state_lock:
                self._active_request = None
            if request.cancelled:  # its worker may still be blocked in I/O: use a fresh one
                self._worker = StreamWorker()
        # What a successful request carried stays in the history, whatever happens next in this turn:
        # the next request must extend it byte for byte.
        self._keep = max(self._keep, len(kwargs["messages"]))
        for number, call in enumerate(result.tool_calls):
            if not call.id:  # providers that send none: unique within the session, deterministic
                call.id = f"call_{len(self._messages)}_{number}"
        self.usage.count_request(turn)
        if result.usage is not None:
            prompt, completion, cached = result.usage
            self.usage.record(turn, prompt, completion, cached)
            self._emit(
                {
                    "kind": "usage",
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "cached_tokens": cached,
                }
            )
        return result

    def _call_tool(self, call: ToolCallSlot) -> ToolResult:
        self._emit(
            {
                "kind": "tool_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
        found = self._tools_by_name.get(call.name)
        record_before = None
        if found is None:
            available = ", ".join(self._tools_by_name) or "none"
            result = ToolResult(
                ok=False,
                error=f"Unknown tool `{call.name}`. Available tools: {available}.",
            )
        elif call.name == MEMORY_TOOL_NAME and self._memory_failures >= MEMORY_FAILURE_LIMIT:
            result = ToolResult(ok=False, error=_MEMORY_STOP.format(n=self._memory_failures))
        else:
            record_before = getattr(self.memory_store, "last_record", None)
            result = found.execute(call.arguments)
            if call.name == MEMORY_TOOL_NAME and not result.ok:
                self._memory_failures += 1
        self._emit(
            {
                "kind": "tool_result",
                "call_id": call.id,
                "name": call.name,
                "ok": result.ok,
                "content": result.as_message_text(),
            }
        )
        if result.ok and found is not None and found is self.memory_tool:
            record = getattr(self.memory_store, "last_record", None)
            if hasattr(self.memory_store, "last_record") and record is record_before:
                return result  # a successful call that wrote nothing (the entry already existed)
            self._emit(
                {
                    "kind": "memory_changed",
                    "call_id": call.id,
                    **_memory_target(call),
                    "journal_id": getattr(record, "id", None),
                }
            )
        return result

    def _emit(self, event: dict[str, Any]) -> None:
        callback = self.on_event
        if callback is None:
            return
        try:
            callback(event)
        except Exception:  # a broken listener must not break the turn
            log.exception("on_event callback failed for %s", event.get("kind"))


def _assistant_message(result: StepResult) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": result.text or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in result.tool_calls
        ],
    }


def _tool_message(call_id: str, text: str) -> dict[str, Any]:
    """A tool result for the history: valid text whatever the tool returned (model text is clean
    when the stream assembles it, user text when `run` appends it)."""
    return {"role": "tool", "tool_call_id": call_id, "content": clean_text(text)}


def _memory_target(call: ToolCallSlot) -> dict[str, Any]:
    import json

    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        args = {}
    if not isinstance(args, dict):
        args = {}
    return {"target": args.get("target"), "action": args.get("action")}
