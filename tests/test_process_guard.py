"""The processes holding the API key cannot be read by the commands they run (process_guard.py).

The real check needs two processes of one ordinary user: a "server" holding a key in its environment
and a "command" of the same user reading `/proc/<server>/environ`. It runs as `nobody` (through
`setpriv`, so only when the tests run as root) with Debian's python3 and a copy of the module, since
root's own interpreter is not readable by other users. Without the guard the same read succeeds, so
the test can fail.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import my_agent_core.process_guard as guard

MODULE = Path(guard.__file__)
SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
import process_guard
if sys.argv[2] == "guarded":
    assert process_guard.protect_process() and process_guard.is_protected()
print("ready", flush=True)
time.sleep(30)
"""
COMMAND = """
import sys
try:
    data = open(f"/proc/{sys.argv[1]}/environ", "rb").read()
except PermissionError:
    print("refused")
else:
    print("read" if b"SECRET_KEY=sk-test-123" in data else "no key")
"""
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_the_process_itself_is_unchanged_after_protecting() -> None:
    code = (
        "import subprocess, my_agent_core.process_guard as g; "
        "assert not g.is_protected(); assert g.protect_process(); assert g.is_protected(); "
        "assert b'SECRET_KEY' in open('/proc/self/environ', 'rb').read(); "
        "print(subprocess.run(['cat', '/proc/self/status'], capture_output=True).returncode)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "SECRET_KEY": "x"},
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"  # its own /proc and the children it starts work as before


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not Path("/usr/bin/python3").exists(),
    reason="needs root (to run two processes as nobody), setpriv and /usr/bin/python3",
)
@pytest.mark.parametrize(("mode", "expected"), [("guarded", "refused"), ("open", "read")])
def test_a_command_of_the_same_user_cannot_read_the_key(mode: str, expected: str) -> None:
    place = Path(tempfile.mkdtemp(prefix="guard-"))  # outside root's private folders
    place.chmod(0o755)
    try:
        copied = _copy_module(place)
        env = {"PATH": "/usr/bin:/bin", "SECRET_KEY": "sk-test-123"}
        server = subprocess.Popen(
            [*NOBODY, "/usr/bin/python3", "-c", SERVER, str(copied.parent), mode],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=place,
        )
        try:
            assert server.stdout is not None
            assert server.stdout.readline().strip() == "ready"
            command = subprocess.run(
                [*NOBODY, "/usr/bin/python3", "-c", COMMAND, str(server.pid)],
                capture_output=True,
                text=True,
                env={"PATH": "/usr/bin:/bin"},
                cwd=place,
                timeout=30,
            )
            assert command.stdout.strip() == expected, command.stderr
        finally:
            server.kill()
            server.wait(10)
    finally:
        shutil.rmtree(place, ignore_errors=True)


def _copy_module(where: Path) -> Path:
    folder = Path(where) / f"guard-module-{os.getpid()}-{time.monotonic_ns()}"
    folder.mkdir(mode=0o755)
    target = folder / "process_guard.py"
    shutil.copyfile(MODULE, target)
    target.chmod(0o644)
    return target


def test_the_server_and_the_terminal_chat_protect_themselves(monkeypatch) -> None:
    """The two entry points that hold the key call the guard before anything else runs."""
    import my_agent_core.chat_cli as chat_cli
    import my_agent_core.cli as cli
    import my_agent_core.lsp.server as server

    calls: list[str] = []
    monkeypatch.setattr(guard, "protect_process", lambda: calls.append("guard") or True)

    class Stub:
        def start_io(self) -> None:
            calls.append("serve")

    monkeypatch.setattr(server, "_server", Stub())
    server.main()
    assert calls == ["guard", "serve"]

    calls.clear()
    monkeypatch.setattr(chat_cli, "run", lambda args: calls.append("chat") or 0)
    assert cli._cmd_chat(argparse.Namespace()) == 0
    assert calls == ["guard", "chat"]
