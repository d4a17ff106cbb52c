"""`new_text` for the entry's text, as models send it (the name their edit tools use; Hermes Agent's
models do): accepted for add as for replace, at the top level and in `operations` items, and said
so in the schema. `content` stays the name that wins; a blank alias is no text."""

from __future__ import annotations

from pathlib import Path

import pytest

from my_agent_core.memory import MemoryStore, make_memory_tool
from my_agent_core.tools import Tool


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "memory")


@pytest.fixture
def tool(store: MemoryStore) -> Tool:
    return make_memory_tool(store)


def test_add_accepts_new_text(tool: Tool, store: MemoryStore) -> None:
    result = tool.execute({"target": "memory", "action": "add", "new_text": "tests use pytest -q"})
    assert result.ok, result.error
    assert store.entries("memory") == ["tests use pytest -q"]


def test_operations_items_accept_new_text_for_add_and_replace(
    tool: Tool, store: MemoryStore
) -> None:
    store.add("user", "prefers tabs")
    result = tool.execute(
        {
            "target": "user",
            "action": "add",
            "operations": [
                {"action": "add", "new_text": "works in UTC+1"},
                {"action": "replace", "old_text": "tabs", "new_text": "prefers spaces"},
            ],
        }
    )
    assert result.ok, result.error
    assert store.entries("user") == ["prefers spaces", "works in UTC+1"]


def test_content_wins_and_a_blank_alias_is_no_text(tool: Tool, store: MemoryStore) -> None:
    tool.execute({"target": "memory", "action": "add", "content": "a", "new_text": "b"})
    assert store.entries("memory") == ["a"]
    tool.execute({"target": "memory", "action": "add", "content": " ", "new_text": "c"})
    assert store.entries("memory") == ["a", "c"]
    blank = tool.execute({"target": "memory", "action": "add", "new_text": "   "})
    assert not blank.ok and "`new_text` is accepted" in blank.error
    wrong = tool.execute({"target": "memory", "action": "add", "new_text": ["x"]})
    assert not wrong.ok and "`new_text`" in wrong.error and "string" in wrong.error
    assert store.entries("memory") == ["a", "c"]


def test_the_schema_says_new_text_is_accepted(tool: Tool) -> None:
    properties = tool.schema["function"]["parameters"]["properties"]
    assert "new_text" in properties["content"]["description"]
    assert "new_text" in properties["new_content"]["description"]
    item = properties["operations"]["items"]["properties"]
    assert "new_text" in item["content"]["description"]
    assert "new_text" in item["new_content"]["description"]
