"""One user profile for every workspace (`myAgent.memory.userProfile: "global"`): USER.md in
`${XDG_CONFIG_HOME:-~/.config}/my-agent-core/` with its own lock and history; MEMORY.md stays with
each workspace. The CLI, the MCP server and the factory (`open_store`) agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import Implementation, TextContent, TextResourceContents

from my_agent_core.memory import (
    ENTRY_DELIMITER,
    MemoryEditError,
    MemoryStore,
    global_profile_dir,
    open_store,
    resolve_user_profile,
)
from my_agent_core.memory.location import user_profile_dir, workspace_of


@pytest.fixture
def config_home(tmp_path: Path) -> Path:
    return tmp_path / "config"


@pytest.fixture
def env(config_home: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(config_home)}


def workspace(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return folder


def run_cli(
    *args: str, cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONIOENCODING": "utf-8", **env}
    if "MY_AGENT_USER_PROFILE" not in env:
        full.pop("MY_AGENT_USER_PROFILE", None)
    return subprocess.run(
        [sys.executable, "-m", "my_agent_core", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=full,
        input=stdin,
        timeout=60,
    )


# ------------------------------------------------------------------------------ where it lives


def test_global_profile_dir_follows_xdg(tmp_path: Path) -> None:
    assert global_profile_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "my-agent-core"
    home = Path.home() / ".config" / "my-agent-core"
    assert global_profile_dir({}) == home
    assert global_profile_dir({"XDG_CONFIG_HOME": "relative/dir"}) == home, "relative is ignored"
    assert user_profile_dir("/w/.my_agent_core/memory", "workspace") == Path(
        "/w/.my_agent_core/memory"
    )


def test_resolve_user_profile_flag_env_default() -> None:
    assert resolve_user_profile(None, {}) == "workspace"
    assert resolve_user_profile(None, {"MY_AGENT_USER_PROFILE": "global"}) == "global"
    assert resolve_user_profile("workspace", {"MY_AGENT_USER_PROFILE": "global"}) == "workspace"
    assert resolve_user_profile(None, {"MY_AGENT_USER_PROFILE": " "}) == "workspace"
    with pytest.raises(ValueError, match="MY_AGENT_USER_PROFILE"):
        resolve_user_profile(None, {"MY_AGENT_USER_PROFILE": "globl"})


def test_open_store_takes_exactly_one_location(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        open_store()
    with pytest.raises(TypeError):
        open_store(tmp_path, mem_dir=tmp_path)
    store = open_store(tmp_path)
    assert store.mem_dir == tmp_path / ".my_agent_core" / "memory"
    assert store.folder("user") == store.mem_dir
    assert workspace_of(store.mem_dir) == tmp_path.absolute()
    assert workspace_of(tmp_path / "elsewhere") is None


# ------------------------------------------------------------------------------ the store


def test_two_workspaces_share_one_profile(
    tmp_path: Path, env: dict[str, str], config_home: Path
) -> None:
    a = open_store(workspace(tmp_path, "a"), user_profile="global", env=env)
    b = open_store(workspace(tmp_path, "b"), user_profile="global", env=env)
    a.add("user", "Prefers short answers")
    a.add("memory", "Project A uses uv")
    b.load_from_disk()
    assert b.entries("user") == ["Prefers short answers"]
    assert b.entries("memory") == []
    b.add("user", "Writes Rust at work")
    profile = config_home / "my-agent-core"
    assert (profile / "USER.md").read_text(encoding="utf-8").strip() == ENTRY_DELIMITER.join(
        ["Prefers short answers", "Writes Rust at work"]
    )
    assert (profile / ".lock").exists() and (profile / "history.jsonl").exists()
    assert not (a.mem_dir / "USER.md").exists() and not (b.mem_dir / "USER.md").exists()
    assert a.path("user") == (profile / "USER.md").absolute()
    assert (profile.stat().st_mode & 0o777) == 0o700, "the profile folder is owner-only"

    # Each history holds its own files' changes.
    def targets(history: Path) -> list[str]:
        lines = history.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)["target"] for line in lines]

    assert targets(a.mem_dir / "history.jsonl") == ["memory"]
    assert targets(profile / "history.jsonl") == ["user", "user"]
    # The snapshot of a new session shows both files.
    a.load_from_disk()
    prompt = a.format_all_for_system_prompt()
    assert "Prefers short answers" in prompt and "Writes Rust at work" in prompt
    assert "Project A uses uv" in prompt


def test_log_merges_both_histories_and_undo_takes_the_newest(
    tmp_path: Path, env: dict[str, str]
) -> None:
    store = open_store(workspace(tmp_path, "a"), user_profile="global", env=env, author="cli")
    store.add("memory", "first memory note")
    store.add("user", "a user preference")
    store.add("memory", "second memory note")
    assert [r.target for r in store.log()] == ["memory", "user", "memory"]
    undone = store.undo()
    assert store.log(10)[-1].undoes == undone.undoes
    assert store.state("memory").entries == ["first memory note"]
    store.undo()
    assert store.state("user").entries == [], "the next undo reaches the profile's change"
    store.undo()
    assert store.state("memory").entries == []
    with pytest.raises(MemoryEditError, match="Nothing to undo"):
        store.undo()


def test_undo_by_id_finds_a_record_in_the_profile_history(
    tmp_path: Path, env: dict[str, str]
) -> None:
    store = open_store(workspace(tmp_path, "a"), user_profile="global", env=env)
    store.add("user", "a user preference")
    record = store.last_record
    assert record is not None
    store.add("memory", "a memory note")
    store.undo(record.id)
    assert store.state("user").entries == []
    assert store.state("memory").entries == ["a memory note"]


def test_old_workspace_user_records_are_not_replayed_on_the_global_file(
    tmp_path: Path, env: dict[str, str]
) -> None:
    """Switching to the global profile leaves the workspace USER.md's history behind: an undo must
    never revert one of those changes in the shared USER.md."""
    folder = workspace(tmp_path, "a")
    local = open_store(folder)
    local.add("user", "Shared line")  # recorded in the workspace history, target user
    shared = open_store(folder, user_profile="global", env=env)
    shared.add("user", "Shared line")  # the same text, in the global file (no history yet there)
    (Path(env["XDG_CONFIG_HOME"]) / "my-agent-core" / "history.jsonl").unlink()
    with pytest.raises(MemoryEditError, match="Nothing to undo"):
        shared.undo()
    assert shared.state("user").entries == ["Shared line"]
    assert shared.log() == [], "the workspace's old USER.md records are not the profile's"
    assert [r.target for r in local.log()] == ["user"], "they are still there for that file"


def test_the_profile_gets_the_same_path_checks(
    tmp_path: Path, env: dict[str, str], config_home: Path
) -> None:
    profile = config_home / "my-agent-core"
    profile.mkdir(parents=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("not yours\n", encoding="utf-8")
    (profile / "USER.md").symlink_to(outside)
    store = open_store(workspace(tmp_path, "a"), user_profile="global", env=env)
    store.load_from_disk()
    assert store.error("user") is not None and "outside" in (store.error("user") or "")
    with pytest.raises(MemoryEditError):
        store.add("user", "anything")
    assert outside.read_text(encoding="utf-8") == "not yours\n"
    store.add("memory", "the workspace file still works")
    assert store.state("memory").entries == ["the workspace file still works"]


def test_a_profile_folder_that_is_the_memory_folder_is_one_home(tmp_path: Path) -> None:
    mem = tmp_path / "m"
    store = MemoryStore(mem, user_dir=mem)
    store.add("user", "x pref")
    store.add("memory", "y note")
    assert (mem / "USER.md").exists() and len(store.log()) == 2


def test_locks_are_per_folder(tmp_path: Path, env: dict[str, str]) -> None:
    """A writer holding the profile's lock does not block MEMORY.md edits, and vice versa."""
    import fcntl

    store = open_store(workspace(tmp_path, "a"), user_profile="global", env=env, lock_timeout=0.3)
    store.add("user", "pref")
    lock = store.folder("user") / ".lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        store.add("memory", "memory edits go on")
        with pytest.raises(MemoryEditError, match="locked"):
            store.add("user", "blocked by the profile's lock")
    finally:
        os.close(fd)
    assert store.state("memory").entries == ["memory edits go on"]


# ------------------------------------------------------------------------------ the CLI


def test_cli_flag_and_env_var(tmp_path: Path, env: dict[str, str], config_home: Path) -> None:
    a, b = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    added = run_cli(
        "memory",
        "add",
        "--target",
        "user",
        "Prefers tabs",
        "--user-profile",
        "global",
        cwd=a,
        env=env,
    )
    assert added.returncode == 0, added.stderr
    shown = run_cli(
        "memory", "show", "--target", "user", cwd=b, env={**env, "MY_AGENT_USER_PROFILE": "global"}
    )
    assert shown.returncode == 0 and "Prefers tabs" in shown.stdout
    assert str(config_home / "my-agent-core" / "USER.md") in shown.stdout
    local = run_cli("memory", "show", "--target", "user", cwd=b, env=env)
    assert local.returncode == 0 and "Prefers tabs" not in local.stdout
    bad = run_cli("memory", "show", cwd=b, env={**env, "MY_AGENT_USER_PROFILE": "nope"})
    assert bad.returncode == 2 and "MY_AGENT_USER_PROFILE" in bad.stderr
    undo = run_cli("memory", "undo", "--user-profile", "global", cwd=a, env=env)
    assert undo.returncode == 0, undo.stderr
    assert (config_home / "my-agent-core" / "USER.md").read_text(encoding="utf-8").strip() == ""


def test_cli_lint_uses_the_global_profile_for_a_workspace(
    tmp_path: Path, env: dict[str, str], config_home: Path
) -> None:
    folder = workspace(tmp_path, "a")
    profile = config_home / "my-agent-core"
    profile.mkdir(parents=True)
    (profile / "USER.md").write_text("x" * 1400 + "\n", encoding="utf-8")  # over 1375
    (folder / ".my_agent_core" / "memory").mkdir(parents=True)
    (folder / ".my_agent_core" / "memory" / "USER.md").write_text("fine\n", encoding="utf-8")
    linted = run_cli("lint", "--format", "json", "--user-profile", "global", cwd=folder, env=env)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    findings = json.loads(linted.stdout)
    assert {f["path"] for f in findings} == {str(profile / "USER.md")}
    assert findings[0]["code"] == "over-budget"
    local = run_cli("lint", "--format", "json", cwd=folder, env=env)
    assert local.returncode == 0 and json.loads(local.stdout) == []


# ------------------------------------------------------------------------------ the MCP server


async def test_mcp_serves_the_global_profile(
    tmp_path: Path, env: dict[str, str], config_home: Path
) -> None:
    a = workspace(tmp_path, "a")
    open_store(workspace(tmp_path, "b"), user_profile="global", env=env).add("user", "Likes Go")
    mem_dir = a / ".my_agent_core" / "memory"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "my_agent_core", "mcp", "--dir", str(mem_dir)],
        cwd=str(a),
        env={**os.environ, **env, "MY_AGENT_USER_PROFILE": "global"},
    )
    async with Client(
        params, client_info=Implementation(name="pytest", version="1"), read_timeout_seconds=60
    ) as client:
        contents = (await client.read_resource("memory://USER.md")).contents
        assert isinstance(contents[0], TextResourceContents)
        assert contents[0].text == "Likes Go\n"
        result = await client.call_tool(
            "memory", {"target": "user", "action": "add", "content": "Prefers tabs"}
        )
        assert not result.is_error
        assert isinstance(result.content[0], TextContent)
    shared = (config_home / "my-agent-core" / "USER.md").read_text(encoding="utf-8")
    assert "Prefers tabs" in shared and "Likes Go" in shared
    assert not (mem_dir / "USER.md").exists()
