"""Harness for the real-VS-Code tests: code-server 4.100.3 driven by playwright-core through driver.js.

Kept apart from the tests so the demo (scripts/demo.sh) and the tests start code-server the same way.
"""

from __future__ import annotations

import contextlib
import datetime
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUTPUT = REPO / "test-output" / "e2e"
CS_VERSION = "4.100.3"


def tools_dir() -> Path:
    """Where scripts/setup-vscode.sh installs code-server and playwright-core."""
    env = os.environ.get("MY_AGENT_VSCODE_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "my-agent-core" / "vscode-e2e"


def code_server_bin() -> Path:
    """The code-server launcher inside the tools dir."""
    return tools_dir() / "node_modules" / ".bin" / "code-server"


def chromium_path() -> str | None:
    """Debian's chromium (or $CHROMIUM)."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


def missing_tools() -> str | None:
    """Why the e2e tests cannot run here, or None when everything is installed."""
    why = []
    if not code_server_bin().exists():
        why.append(f"code-server not installed in {tools_dir()}")
    if not (tools_dir() / "node_modules" / "playwright-core" / "package.json").exists():
        why.append("playwright-core not installed")
    if not chromium_path():
        why.append("chromium not installed")
    if not shutil.which("node"):
        why.append("node not on PATH")
    if why:
        return "; ".join(why) + " (run scripts/setup-vscode.sh)"
    return None


def free_port() -> int:
    """An unused TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:port."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def newest_vsix() -> Path | None:
    """The most recent dist/*.vsix (or $MY_AGENT_E2E_VSIX)."""
    env = os.environ.get("MY_AGENT_E2E_VSIX")
    if env:
        return Path(env)
    found = sorted(glob.glob(str(REPO / "dist" / "*.vsix")), key=os.path.getmtime)
    return Path(found[-1]) if found else None


def package_dir() -> Path:
    """Where the extension's package.json lives (the repo root; $MY_AGENT_E2E_PACKAGE_DIR for harness work)."""
    return Path(os.environ.get("MY_AGENT_E2E_PACKAGE_DIR") or REPO)


def extension_id() -> str:
    """publisher.name of the extension, read from the root package.json."""
    pkg = json.loads((package_dir() / "package.json").read_text(encoding="utf-8"))
    return f"{pkg['publisher']}.{pkg['name']}".lower()


def install_extension(vsix: Path, extensions_dir: Path, user_data_dir: Path) -> float:
    """Installs a .vsix into an extensions dir the way a user would; returns the seconds it took."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            str(code_server_bin()),
            "--extensions-dir",
            str(extensions_dir),
            "--user-data-dir",
            str(user_data_dir),
            "--install-extension",
            str(vsix),
            "--force",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if proc.returncode != 0 or "successfully installed" not in (proc.stdout + proc.stderr).lower():
        raise RuntimeError(f"installing {vsix} failed:\n{proc.stdout}\n{proc.stderr}")
    return time.monotonic() - t0


def write_user_settings(user_data_dir: Path, settings: dict) -> None:
    """Presets the profile settings (no Welcome page, no update toasts, plus the test's own)."""
    base = {
        "workbench.startupEditor": "none",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "update.mode": "none",
        "telemetry.telemetryLevel": "off",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "security.workspace.trust.enabled": False,
        "chat.commandCenter.enabled": False,
        "git.enabled": False,
        "files.autoSave": "off",
        "window.restoreWindows": "none",
    }
    base.update(settings)
    user = user_data_dir / "User"
    user.mkdir(parents=True, exist_ok=True)
    (user / "settings.json").write_text(json.dumps(base, indent=2), encoding="utf-8")


@dataclass
class CodeServer:
    """One code-server process (in its own process group) serving a folder on 127.0.0.1."""

    folder: Path
    user_data_dir: Path
    extensions_dir: Path
    env: dict = field(default_factory=dict)
    #: Workspace Trust on (an untrusted folder opens in Restricted Mode); off by default.
    workspace_trust: bool = False
    port: int = 0
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    started_wall: float = 0.0
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?folder={self.folder}"

    def start(self, timeout: float = 60.0) -> float:
        """Starts code-server and waits until it answers HTTP; returns the seconds that took."""
        self.port = self.port or free_port()
        self.log_path = self.user_data_dir.parent / "code-server.log"
        env = dict(os.environ)
        for key, value in self.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        # code-server reads (and would write) ~/.config/code-server/config.yaml: keep it private.
        config = self.user_data_dir.parent / "code-server-config.yaml"
        config.write_text("auth: none\ncert: false\n", encoding="utf-8")
        cmd = [
            str(code_server_bin()),
            "--config",
            str(config),
            "--auth",
            "none",
            "--bind-addr",
            f"127.0.0.1:{self.port}",
            "--user-data-dir",
            str(self.user_data_dir),
            "--extensions-dir",
            str(self.extensions_dir),
            "--disable-telemetry",
            "--disable-update-check",
            "--disable-getting-started-override",
            "--ignore-last-opened",
            str(self.folder),
        ]
        if not self.workspace_trust:
            cmd.insert(-3, "--disable-workspace-trust")
        self.started_at = time.monotonic()
        self.started_wall = time.time()
        log = open(self.log_path, "wb")  # noqa: SIM115 - kept open for the process's lifetime
        self.proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"code-server exited early:\n{self.log_text()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2):
                    return time.monotonic() - self.started_at
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"code-server did not answer within {timeout}s:\n{self.log_text()}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def stop(self) -> None:
        """Kills code-server's whole process group (extension host and language server included)."""
        if not self.proc:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        # Children that outlived the leader still carry the group id.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc = None

    def logs(self, pattern: str) -> list[Path]:
        """Log files of this run (not of an earlier run on the same profile) below user-data-dir/logs."""
        found = (self.user_data_dir / "logs").glob(pattern)
        return sorted(p for p in found if p.stat().st_mtime >= self.started_wall - 1)

    def exthost_log(self) -> str:
        """Everything the remote extension host logged so far."""
        return "\n".join(p.read_text(errors="replace") for p in self.logs("**/remoteexthost.log"))

    def extension_log(self) -> str:
        """The extension's "My Agent" output channel (a log file of the remote extension host)."""
        return "\n".join(p.read_text(errors="replace") for p in self.logs("**/*My Agent*.log"))

    def activation_wall_time(self, ext_id: str) -> float | None:
        """Wall-clock time (epoch s) at which the extension host began activating `ext_id`, if it did."""
        line = self.activation_line(ext_id)
        if not line:
            return None
        stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f")
        return stamp.timestamp()  # the log is in local time, as is a naive datetime's timestamp()

    def activation_line(self, ext_id: str) -> str | None:
        """The extension host's log line recording the activation of `ext_id`, if any."""
        lines = self.activation_lines(ext_id)
        return lines[0] if lines else None

    def activation_lines(self, ext_id: str) -> list[str]:
        """Every activation of `ext_id` in this run, one per extension host (a window reload starts a
        new one, logging to a new exthostN folder)."""
        pat = re.compile(r"ExtensionService#_doActivateExtension\s+" + re.escape(ext_id), re.I)
        return [line for line in self.exthost_log().splitlines() if pat.search(line)]


class DriverError(RuntimeError):
    """A driver.js operation failed (the message carries the JS stack)."""


class Driver:
    """The Node process that owns the browser; one per test module."""

    def __init__(self) -> None:
        env = dict(os.environ, MY_AGENT_VSCODE_DIR=str(tools_dir()))
        chromium = chromium_path()
        if chromium:
            env["CHROMIUM"] = chromium
        self.proc = subprocess.Popen(
            ["node", str(HERE / "driver.js")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
            bufsize=1,
            env=env,
        )
        self._next = 0

    def call(self, op: str, **kw) -> object:
        """Sends one request and waits for its answer."""
        self._next += 1
        msg = {"id": self._next, "op": op, **kw}
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise DriverError(f"driver.js died during {op}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise DriverError(f"{op} failed: {reply.get('error')}")
        return reply.get("result")

    def js(self, code: str, **args) -> object:
        """Runs an async JS function body with (page, h, args) in scope; returns its JSON result."""
        return self.call("eval", code=code, args=args)

    def screenshot(self, name: str) -> Path:
        """Saves test-output/e2e/<name>.png."""
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{name}.png"
        self.call("screenshot", path=str(path))
        return path

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("close")
        with contextlib.suppress(Exception):
            assert self.proc.stdin
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
