"""`@tool` and `Tool.execute`: schemas from typed functions, and the never-throw guarantee."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from my_agent_core.tools import Tool, ToolResult, tool


@tool
def greet(name: str, times: int = 1, loud: bool = False, ratio: float = 1.0) -> str:
    """Greet someone a number of times.

    Args:
        name: Who to greet.
        times: How many greetings.
    """
    text = " ".join([f"hello {name}"] * times)
    return text.upper() if loud else text


@tool(name="lookup", description="Look a key up.")
def lookup_impl(
    key: str, tags: list[str], options: dict, mode: Literal["fast", "slow"] = "fast"
) -> dict:
    """Ignored docstring."""
    return {"key": key, "tags": tags, "options": options, "mode": mode}


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@tool
def fails_silently() -> str:
    """Raises an exception without a message."""
    raise KeyError


@tool
def optional_note(note: str | None = None) -> str:
    """Takes an optional note."""
    return note or "none"


def test_name_and_description_come_from_the_function() -> None:
    assert isinstance(greet, Tool)
    assert greet.name == "greet"
    assert greet.description.startswith("Greet someone a number of times.")
    schema = greet.schema
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "greet"
    assert schema["function"]["description"] == greet.description
    json.dumps(schema)


def test_explicit_name_and_description() -> None:
    assert lookup_impl.name == "lookup"
    assert lookup_impl.description == "Look a key up."
    assert lookup_impl.schema["function"]["name"] == "lookup"


def test_required_are_the_parameters_without_defaults() -> None:
    params = greet.schema["function"]["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["name"]
    assert set(params["properties"]) == {"name", "times", "loud", "ratio"}
    assert lookup_impl.parameters["required"] == ["key", "tags", "options"]
    assert "required" not in optional_note.parameters or optional_note.parameters["required"] == []


def test_types_appear_in_the_schema() -> None:
    props = greet.parameters["properties"]
    assert props["name"]["type"] == "string"
    assert props["times"]["type"] == "integer"
    assert props["loud"]["type"] == "boolean"
    assert props["ratio"]["type"] == "number"
    props = lookup_impl.parameters["properties"]
    assert props["tags"]["type"] == "array"
    assert props["tags"].get("items", {}).get("type") == "string"
    assert props["options"]["type"] == "object"
    assert props["mode"]["enum"] == ["fast", "slow"]
    assert optional_note.parameters["properties"]["note"]["type"] == "string"


def test_argument_docs_become_descriptions() -> None:
    props = greet.parameters["properties"]
    assert props["name"].get("description") == "Who to greet."
    assert props["times"].get("description") == "How many greetings."


def test_execute_with_dict_and_json_string() -> None:
    assert greet.execute({"name": "Ada"}) == ToolResult(ok=True, content="hello Ada")
    result = greet.execute('{"name": "Ada", "times": 2, "loud": true}')
    assert result.ok and result.content == "HELLO ADA HELLO ADA"
    assert greet.execute(b'{"name": "B"}').content == "hello B"


def test_non_string_results_become_text() -> None:
    result = lookup_impl.execute({"key": "k", "tags": ["a"], "options": {"x": 1}})
    assert result.ok
    assert json.loads(result.content) == {
        "key": "k",
        "tags": ["a"],
        "options": {"x": 1},
        "mode": "fast",
    }


def test_unknown_keys_are_ignored() -> None:
    assert greet.execute({"name": "Ada", "mood": "happy"}).content == "hello Ada"


def test_exceptions_become_ok_false() -> None:
    result = explode.execute({"reason": "disk full"})
    assert result.ok is False
    assert "boom: disk full" in result.error
    assert result.as_message_text().startswith("Error:")
    result = fails_silently.execute({})
    assert result.ok is False and result.error.strip()


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"times": 2},
        {"name": None},
        {"name": 3},
        {"name": "a", "times": "2"},
        {"name": "a", "times": True},
        {"name": "a", "times": 1.5},
        {"name": "a", "loud": "yes"},
        '{"name": ',
        "[1, 2]",
        "null",
        "42",
        [1, 2],
        7,
    ],
)
def test_bad_arguments_become_ok_false_with_a_usage_hint(args: object) -> None:
    result = greet.execute(args)  # type: ignore[arg-type]
    assert result.ok is False
    assert result.error.strip()
    assert result.as_message_text().startswith("Error:")


def test_wrong_type_error_names_the_argument() -> None:
    result = greet.execute({"name": "a", "times": "2"})
    assert "times" in result.error and "integer" in result.error
    result = greet.execute({})
    assert "name" in result.error


def test_enum_is_enforced() -> None:
    result = lookup_impl.execute({"key": "k", "tags": [], "options": {}, "mode": "medium"})
    assert not result.ok and "mode" in result.error


def test_integers_are_accepted_for_number_parameters() -> None:
    assert greet.execute({"name": "a", "ratio": 2}).ok


def test_tool_class_schema() -> None:
    t = Tool(
        "echo",
        "Echo back.",
        {"type": "object", "properties": {"x": {"type": "string"}}},
        lambda a: a["x"],
    )
    assert t.schema == {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo back.",
            "parameters": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }
    assert t.execute({"x": "hi"}).content == "hi"
    assert not t.execute({}).ok  # KeyError in the handler is reported, not raised
