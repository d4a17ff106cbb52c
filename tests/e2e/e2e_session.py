"""Shared pieces of the real-VS-Code tests: figures, the fake model handle, a code-server session, polling.

A module of its own (not conftest.py) so test modules can import it by a name no other tests dir uses.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import vscode_e2e as v

FIXTURE_WORKSPACE = v.HERE / "fixtures" / "workspace"
MEMORY_REL = ".my_agent_core/memory/MEMORY.md"
T = TypeVar("T")
FIGURES: dict[str, float] = {}


def record_figure(name: str, seconds: float) -> None:
    """Keeps a measured figure for the run summary and test-output/e2e/figures.json."""
    FIGURES[name] = round(seconds, 2)
    print(f"[e2e figure] {name}: {seconds:.2f} s")


def repo_python() -> str:
    """The repo's venv interpreter (my_agent_core installed editable), else the one running pytest."""
    venv = v.REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


# --- the fake model server -----------------------------------------------------------------------------


@dataclass
class FakeModel:
    """tests/support/fake_openai.py running as a process; scripted over its control endpoints."""

    proc: subprocess.Popen
    base_url: str

    @property
    def root(self) -> str:
        return self.base_url.rsplit("/v1", 1)[0]

    def add(self, *responses: dict) -> None:
        req = urllib.request.Request(
            f"{self.root}/_fake/script",
            data=json.dumps(list(responses)).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            r.read()

    def requests(self) -> list[dict]:
        """Every chat-completions request received so far, bodies parsed."""
        with urllib.request.urlopen(f"{self.root}/_fake/requests", timeout=5) as r:
            items = json.loads(r.read())
        return [
            {**i, "json": json.loads(i["body"])}
            for i in items
            if i["path"].rstrip("/").endswith("/chat/completions")
        ]


@dataclass
class Session:
    """A running code-server with the extension installed, the demo workspace open and a browser on it."""

    server: v.CodeServer
    driver: v.Driver
    workspace: Path
    ext_id: str
    name: str
    figures: dict = field(default_factory=dict)
    shots: int = 0

    def js(self, code: str, **args) -> object:
        return self.driver.js(code, **args)

    def shot(self, label: str) -> Path:
        """A numbered screenshot of the current page: test-output/e2e/<module>-NN-<label>.png."""
        self.shots += 1
        return self.driver.screenshot(f"{self.name}-{self.shots:02d}-{label}")

    def palette(self, title: str) -> str:
        return self.js("return await h.palette(args.t)", t=title)  # type: ignore[return-value]

    def memory_dir(self) -> Path:
        return self.workspace / ".my_agent_core" / "memory"


def nls() -> dict[str, str]:
    """The extension's English UI strings (package.nls.json)."""
    path = v.package_dir() / "package.nls.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def localize(value: str) -> str:
    """Resolves a `%key%` package.json string."""
    if value.startswith("%") and value.endswith("%"):
        return nls().get(value[1:-1], value)
    return value


def command_title(command_id: str) -> str:
    """`Category: Title` of a contributed command, as the palette shows it."""
    pkg = json.loads((v.package_dir() / "package.json").read_text(encoding="utf-8"))
    for c in pkg["contributes"]["commands"]:
        if c["command"] == command_id:
            title = localize(c["title"])
            cat = localize(c.get("category", ""))
            return f"{cat}: {title}" if cat else title
    raise KeyError(command_id)


def container_title(container_id: str) -> str:
    """The title of a contributed activity-bar view container."""
    pkg = json.loads((v.package_dir() / "package.json").read_text(encoding="utf-8"))
    for c in pkg["contributes"]["viewsContainers"]["activitybar"]:
        if c["id"] == container_id:
            return localize(c["title"])
    raise KeyError(container_id)


def view_name(view_id: str) -> str:
    """The display name of a contributed view."""
    pkg = json.loads((v.package_dir() / "package.json").read_text(encoding="utf-8"))
    for views in pkg["contributes"]["views"].values():
        for view in views:
            if view["id"] == view_id:
                return localize(view["name"])
    raise KeyError(view_id)


def view_container(view_id: str) -> str:
    """The id of the view container a contributed view is in."""
    pkg = json.loads((v.package_dir() / "package.json").read_text(encoding="utf-8"))
    for container, views in pkg["contributes"]["views"].items():
        if any(view["id"] == view_id for view in views):
            return str(container)
    raise KeyError(view_id)


def wait_for_activation(s: Session, after: int = 0, timeout: float = 120) -> None:
    """Waits for the real condition of the extension's commands and views being there: the extension
    host activated it (more than `after` times: a reloaded window activates it again)."""
    wait_until(
        lambda: len(s.server.activation_lines(s.ext_id)) > after,
        timeout,
        f"the extension host to activate {s.ext_id}" + (" again" if after else ""),
    )


def open_view(s: Session, view_id: str) -> None:
    """Opens a contributed view by its generated `<Container>: Focus on <name> View` command (exact title,
    so VS Code's own Chat view is never picked instead), once the extension is active (the workspaces of
    these tests hold memory files, so it activates at startup); a palette opened while the window still
    registers the contributions is opened again until the command is listed."""
    wait_for_activation(s)
    title = f"{container_title(view_container(view_id))}: Focus on {view_name(view_id)} View"
    picked = s.js("return await h.palette(args.t, { wait: 30000 })", t=title)
    assert isinstance(picked, str)
    assert picked.lower().startswith(title.lower()), f"palette ran {picked!r} instead of {title!r}"


def start_session(
    name: str,
    tmp: Path,
    vsix: Path,
    settings: dict,
    env: dict | None = None,
    workspace_src: Path = FIXTURE_WORKSPACE,
    url_for: Callable[[Session], str] | None = None,
    workspace_trust: bool = False,
) -> Session:
    """Copies the workspace, installs the .vsix, starts code-server and opens the browser on it
    (at `url_for(session)` when given, e.g. a URL with an extension-test payload)."""
    workspace = tmp / "workspace"
    shutil.copytree(workspace_src, workspace)
    user_data = tmp / "user-data"
    extensions = tmp / "extensions"
    extensions.mkdir()
    install_s = v.install_extension(vsix, extensions, user_data)
    record_figure(f"{name}: install .vsix", install_s)
    v.write_user_settings(user_data, settings)
    server = v.CodeServer(
        folder=workspace,
        user_data_dir=user_data,
        extensions_dir=extensions,
        env={"OPENAI_API_KEY": "test", **(env or {})},
        workspace_trust=workspace_trust,
    )
    server.start()
    driver = v.Driver()
    session = Session(server, driver, workspace, v.extension_id(), name)
    try:
        res = driver.call("launch", url=url_for(session) if url_for else server.url)
        session.figures["workbench"] = time.monotonic() - server.started_at
        assert isinstance(res, dict)
    except Exception:
        save_failure_artifacts(session, "launch")
        stop_session(session)
        raise
    return session


def save_failure_artifacts(session: Session, label: str) -> None:
    """Screenshot plus code-server, extension-host and language-client logs, for a failing step."""
    with contextlib.suppress(Exception):
        session.driver.screenshot(f"FAILED-{session.name}-{label}")
    dest = v.OUTPUT / f"logs-{session.name}"
    with contextlib.suppress(Exception):
        shutil.rmtree(dest, ignore_errors=True)
        if (session.server.user_data_dir / "logs").exists():
            shutil.copytree(session.server.user_data_dir / "logs", dest)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "code-server.log").write_text(session.server.log_text())
        errors = session.driver.js("return h.consoleErrors()")
        (dest / "browser-console-errors.json").write_text(json.dumps(errors, indent=2))


def stop_session(session: Session) -> None:
    session.driver.close()
    session.server.stop()


def wait_until(fn: Callable[[], T], timeout: float, what: str, interval: float = 0.25) -> T:
    """Polls fn until it returns something truthy; fails with `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except v.DriverError as e:
            last = e
        else:
            if last:
                return last  # type: ignore[return-value]
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout:.0f} s waiting for {what}; last value: {last!r}"
    )


def problems_rows(s: Session) -> list[str]:
    return s.js("return await h.problems()")  # type: ignore[return-value]


def my_agent_rows(s: Session) -> list[str]:
    return [r for r in problems_rows(s) if "my-agent" in r]
