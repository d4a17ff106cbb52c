"""The VS Code language-model tool in package.json is the built-in `memory` tool: same parameters, same
WHEN/SKIP guidance. Both sides are read from their sources, so a change to the tool that is not carried
into the manifest fails here."""

import json
from pathlib import Path

from my_agent_core.memory.memory_tool import MEMORY_TOOL_DESCRIPTION, make_memory_tool
from my_agent_core.memory.store import MemoryStore

ROOT = Path(__file__).resolve().parents[2]


def _manifest_tool() -> dict[str, object]:
    pkg = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    tools = pkg["contributes"]["languageModelTools"]
    assert len(tools) == 1
    tool: dict[str, object] = tools[0]
    return tool


def test_input_schema_is_the_memory_tool_parameters(tmp_path: Path) -> None:
    schema = make_memory_tool(MemoryStore(tmp_path / "memory")).schema
    assert _manifest_tool()["inputSchema"] == schema["function"]["parameters"]


def test_model_description_carries_every_line_of_the_when_skip_guidance() -> None:
    description = str(_manifest_tool()["modelDescription"])
    guidance = MEMORY_TOOL_DESCRIPTION[MEMORY_TOOL_DESCRIPTION.index("WHEN to save") :]
    missing = [line for line in guidance.splitlines() if line.strip() and line not in description]
    assert missing == []
    assert "SKIP (never save)" in description
