"""Serves the built extension in a local code-server on a demo workspace (what scripts/demo.sh runs).

`--check` starts it, verifies in chromium that the workbench loads, the extension activates and the
over-budget demo file gets its diagnostics, saves test-output/e2e/demo-check.png and exits 0 (else 1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import sys
import time
from pathlib import Path

import vscode_e2e as v
from e2e_session import container_title, view_name

DEMO_SRC = v.REPO / "demo"
STATE = v.REPO / ".cache" / "demo"


def prepare_workspace(folder: str | None) -> Path:
    """The folder to open: the given one as is, else a fresh copy of demo/ (so fixes never touch git)."""
    if folder:
        path = Path(folder).resolve()
        if not path.is_dir():
            raise SystemExit(f"demo: {path} is not a folder")
        return path
    workspace = STATE / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    shutil.copytree(DEMO_SRC, workspace)
    return workspace


def settings() -> dict:
    """Profile settings: the repo's venv as interpreter, so the first start needs no venv bootstrap."""
    out: dict = {}
    python = v.REPO / ".venv" / "bin" / "python"
    if python.exists():
        out["myAgent.python.interpreter"] = str(python)
    return out


def check(server: v.CodeServer, workspace: Path) -> int:
    """Drives chromium against the running server; 0 when the product works."""
    ext_id = v.extension_id()
    driver = v.Driver()
    memory = workspace / ".my_agent_core" / "memory" / "MEMORY.md"
    try:
        driver.call("launch", url=server.url)
        print(
            f"demo --check: workbench shown {time.monotonic() - server.started_at:.1f} s after start"
        )
        deadline = time.monotonic() + 90
        while (activated := server.activation_wall_time(ext_id)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{ext_id} was not activated within 90 s")
            time.sleep(0.25)
        print(
            f"demo --check: {ext_id} activated {activated - server.started_wall:.1f} s after start"
        )
        if "Activating extension" in server.exthost_log() and "failed" in server.exthost_log():
            for line in server.exthost_log().splitlines():
                if "Activating extension" in line and "failed" in line:
                    raise RuntimeError(line)
        if memory.exists():
            usage = driver.js(
                """return await h.waitFor(async () => (await page.locator('.statusbar-item')
                     .evaluateAll((els) => els.map((e) => e.textContent || '')))
                     .find((t) => t.includes('Memory') && t.includes('%')),
                   { timeout: 90000, what: 'the memory usage in the status bar' });"""
            )
            waited = time.monotonic() - server.started_at
            print(
                f"demo --check: language server ready {waited:.1f} s after start ({usage.strip()})"
            )
            rel = memory.relative_to(workspace).as_posix()
            driver.js("await h.openFile(args.rel)", rel=rel)
            counts = driver.js(
                """return await h.waitFor(async () => { const c = await h.problemCounts();
                     return c.errors + c.warnings > 0 ? c : null; },
                   { timeout: 90000, what: 'diagnostics on MEMORY.md' });"""
            )
            waited = time.monotonic() - server.started_at
            print(
                f"demo --check: diagnostics shown {waited:.1f} s after start ({json.dumps(counts)})"
            )
            driver.js("await h.palette('View: Focus Problems')")
            # The Memory view lists the folder's stores without any model configured.
            title = f"{container_title('myAgent')}: Focus on {view_name('myAgent.memory')} View"
            rows = driver.js(
                r"""await h.palette(args.title);
                   return await h.waitFor(async () => {
                     const pane = page.locator('.pane').filter({ has: page.locator('.pane-header',
                       { hasText: new RegExp('^\\W*' + args.view, 'i') }) }).first();
                     const rows = await pane.locator('.monaco-list-row').evaluateAll(
                       (rs) => rs.map((r) => r.textContent || ''));
                     return rows.some((r) => /MEMORY\.md.*\d+\/\d+/.test(r)) ? rows : null;
                   }, { timeout: 30000, what: 'MEMORY.md in the Memory view' });""",
                title=title,
                view=view_name("myAgent.memory"),
            )
            print(f"demo --check: Memory view shows {len(rows)} rows ({rows[0].strip()})")
            time.sleep(1.0)
        shot = driver.screenshot("demo-check")
        print(f"demo --check: OK; screenshot {shot}")
        return 0
    except Exception as e:
        print(f"demo --check: FAILED: {e}", file=sys.stderr)
        with contextlib.suppress(Exception):
            print(
                f"demo --check: screenshot {driver.screenshot('FAILED-demo-check')}",
                file=sys.stderr,
            )
        print(server.exthost_log()[-3000:], file=sys.stderr)
        return 1
    finally:
        driver.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", nargs="?", help="folder to open (default: a fresh copy of demo/)")
    parser.add_argument("--check", action="store_true", help="verify non-interactively, then exit")
    parser.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default 8080, else free)"
    )
    args = parser.parse_args(argv)

    why = v.missing_tools()
    if why:
        raise SystemExit(f"demo: {why}")
    vsix = v.newest_vsix()
    if vsix is None:
        raise SystemExit("demo: no dist/*.vsix; run `npm run package`")
    workspace = prepare_workspace(args.folder)
    user_data, extensions = STATE / "user-data", STATE / "extensions"
    shutil.rmtree(extensions, ignore_errors=True)
    extensions.mkdir(parents=True)
    secs = v.install_extension(vsix, extensions, user_data)
    print(f"demo: installed {vsix.name} into {extensions} ({secs:.1f} s)")
    v.write_user_settings(user_data, settings())

    port = args.port or (8080 if v.port_is_free(8080) else v.free_port())
    server = v.CodeServer(
        folder=workspace, user_data_dir=user_data, extensions_dir=extensions, port=port
    )
    server.start()
    try:
        if args.check:
            return check(server, workspace)
        print()
        print(f"  my-agent-core is running in VS Code: {server.url}")
        print(f"  workspace: {workspace}")
        print(
            "  Open MEMORY.md to see its diagnostics and quick fixes; the My Agent view lists the memory."
        )
        print(
            "  To chat, point it at any OpenAI-compatible endpoint: set myAgent.baseUrl and myAgent.model"
        )
        print(
            "  (Settings), then run 'My Agent: Set API Key' -- or export OPENAI_BASE_URL, MY_AGENT_MODEL and"
        )
        print("  OPENAI_API_KEY before starting this script.")
        print("  Ctrl-C stops it.")
        print(flush=True)
        stop = []
        # Explicit handlers: a shell's background job starts with SIGINT ignored.
        signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
        signal.signal(signal.SIGINT, lambda *_: stop.append(1))
        while not stop and server.proc and server.proc.poll() is None:
            time.sleep(0.5)
        if server.proc and server.proc.poll() is not None:
            print(f"demo: code-server exited:\n{server.log_text()[-3000:]}", file=sys.stderr)
            return 1
        return 0
    finally:
        server.stop()
        print("demo: stopped")


if __name__ == "__main__":
    sys.exit(main())
