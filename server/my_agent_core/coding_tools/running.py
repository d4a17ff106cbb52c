"""run_command as the model sees it: approval first, then the command, then its exit code and output."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from my_agent_core.approval import ApprovalGate, ApprovalRequest
from my_agent_core.memory.refusal import refusal

from .commands import CommandOutcome, OutputListener, run_shell
from .folder import Folder, WorkspaceError
from .seams import CancelToken
from .settings import WorkspaceSettings

__all__ = ["CommandTools"]


@dataclass
class CommandTools:
    folder: Folder
    gate: ApprovalGate
    settings: WorkspaceSettings
    cancel: CancelToken | None = None
    #: Hears the command's output while it runs (the editor shows it live); None: nobody watches.
    on_output: OutputListener | None = None

    def run(self, command: str, timeout_s: float | None) -> str:
        if not command.strip():
            raise WorkspaceError(
                "The command is empty: pass a shell command line, e.g. `pytest -q`."
            )
        if "\x00" in command:
            raise WorkspaceError("The command contains a NUL character.")
        limit = self.settings.command_max_timeout_s
        timeout = self.settings.command_timeout_s if timeout_s is None else float(timeout_s)
        if timeout <= 0:
            raise WorkspaceError(
                f"timeout_s must be a positive number of seconds (at most {limit:g})."
            )
        note = ""
        if timeout > limit:
            note = f"[timeout_s={timeout:g} is above the limit; {limit:g} s was used]\n"
            timeout = limit
        root = self.folder.root
        request = ApprovalRequest(
            kind="command",
            title=f"Run `{_short(command)}`",
            detail=command,
            command=command,
            cwd=root,
        )
        decision = self.gate.decide(request)
        if not decision.approved:
            raise WorkspaceError(refusal(decision, f"the command `{_short(command)}`"))
        try:
            outcome = run_shell(
                command,
                root,
                timeout_s=timeout,
                output_bytes=self.settings.command_output_bytes,
                cancel=self.cancel,
                kill_grace_s=self.settings.kill_grace_s,
                on_output=self.on_output,
            )
        except OSError as exc:
            raise WorkspaceError(
                f"The command could not be started: {exc.strerror or exc}."
            ) from None
        text = note + describe(command, outcome)
        if outcome.ending == "cancelled":
            raise WorkspaceError(
                "The user cancelled the turn; the command and its process group were stopped. "
                f"Do not run it again unless the user asks.\n{text}"
            )
        if outcome.ending == "timeout":
            raise WorkspaceError(
                f"The command did not finish within {timeout:g} s; it and its process group were "
                "stopped (SIGTERM, then SIGKILL). If it needs longer, pass a larger timeout_s; "
                f"if it waits for input, it cannot get any (stdin is closed).\n{text}"
            )
        return text


def describe(command: str, outcome: CommandOutcome) -> str:
    """`$ command`, how it ended, then stdout and stderr (each capped head and tail)."""
    if outcome.ending == "exited":
        code = outcome.exit_code if outcome.exit_code is not None else -1
        status = f"exit code {code}" if code >= 0 else f"killed by signal {_signal_name(-code)}"
    else:
        status = "stopped (timeout)" if outcome.ending == "timeout" else "stopped (cancelled)"
    lines = [f"$ {command}", f"{status} · {outcome.seconds:.1f} s"]
    if outcome.stopped_leftovers:
        lines.append(
            "[processes the command left running in the background were stopped when it ended]"
        )
    for name, captured in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
        if captured.total == 0:
            lines.append(f"{name}: (empty)")
            continue
        lines.append(f"{name}:")
        lines.append(captured.text().rstrip("\n"))
    return "\n".join(lines)


def _short(command: str) -> str:
    one = " ".join(command.split())
    return one if len(one) <= 80 else one[:77] + "..."


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
