"""The never-throw tool layer: typed Python functions become model-callable tools.

A tool call from a model is untrusted input. `Tool.execute` turns every failure (bad JSON, a missing or
wrongly typed argument, an exception in the tool) into a `ToolResult` whose error tells the model how to
fix its call, so the agent loop never crashes on a model's mistake.
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

__all__ = ["Tool", "ToolResult", "clean_text", "tool"]

Handler = Callable[[dict[str, Any]], Any]

_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def clean_text(text: str) -> str:
    """`text` as valid Unicode: a surrogate pair split over two stream chunks is joined, a lone half
    becomes U+FFFD. Model text may carry lone surrogates (`"\\udfff"` in its JSON), and one of them
    in a request's history makes every later request of the session fail to encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced: `content` on success, `error` (a fix-it message) on failure."""

    ok: bool
    content: str = ""
    error: str = ""

    def as_message_text(self) -> str:
        """The text the model sees in the `role: tool` message."""
        return self.content if self.ok else f"Error: {self.error}"


class Tool:
    """A named, schema-described callable whose `execute` never raises."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        handler: Handler,
    ) -> None:
        self.name = name
        self.description = description
        self.parameters: dict[str, Any] = dict(parameters)
        self._handler = handler

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling description of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def execute(self, args: Mapping[str, Any] | str | bytes | None) -> ToolResult:
        """Run the tool on model-supplied arguments; every failure becomes `ok=False`."""
        try:
            parsed = _parse_arguments(args)
            problem = _check_arguments(self.parameters, parsed)
            if problem:
                return _failed(f"{problem} {self._usage_hint()}")
            output = self._handler(parsed)
        except _ArgumentError as exc:
            return _failed(f"{exc} {self._usage_hint()}")
        except Exception as exc:  # the never-throw guarantee: report, do not raise
            return _failed(str(exc) or type(exc).__name__)
        return ToolResult(ok=True, content=clean_text(_to_text(output)))

    def _usage_hint(self) -> str:
        props = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        parts = [
            f"{key}{'' if key in required else '?'}: {_describe_type(spec)}"
            for key, spec in props.items()
        ]
        return f"Call `{self.name}` with a JSON object {{{', '.join(parts)}}}."

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"


def _failed(error: str) -> ToolResult:
    """A failed call; its message may quote model input, so it is made valid text too."""
    return ToolResult(ok=False, error=clean_text(error))


class _ArgumentError(ValueError):
    """Raised inside `execute` for arguments that are not a JSON object."""


def _parse_arguments(args: Mapping[str, Any] | str | bytes | None) -> dict[str, Any]:
    if args is None:
        return {}
    if isinstance(args, bytes):
        args = args.decode("utf-8", errors="replace")
    if isinstance(args, str):
        if not args.strip():
            return {}
        try:
            args = json.loads(args)
        except json.JSONDecodeError as exc:
            raise _ArgumentError(
                f"The arguments are not valid JSON ({exc.msg} at char {exc.pos})."
            ) from None
    if not isinstance(args, Mapping):
        raise _ArgumentError(f"The arguments must be a JSON object, not {_json_type_name(args)}.")
    return {str(key): value for key, value in args.items()}


def _check_arguments(parameters: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """Check required keys and JSON types against the schema; unknown keys are ignored."""
    props: Mapping[str, Any] = parameters.get("properties", {})
    for key in parameters.get("required", []):
        if args.get(key) is None:
            return f"Missing required argument `{key}`."
    for key, value in args.items():
        spec = props.get(key)
        if spec is None or value is None:
            continue
        if not _matches(spec, value):
            return (
                f"Argument `{key}` must be {_describe_type(spec)}, "
                f"got {_json_type_name(value)} {_preview(value)}."
            )
    return None


def _matches(spec: Mapping[str, Any], value: Any) -> bool:
    if "enum" in spec:
        return value in spec["enum"]
    if "anyOf" in spec:
        return any(_matches(option, value) for option in spec["anyOf"])
    expected = spec.get("type")
    if expected is None:
        return True
    kinds = expected if isinstance(expected, list) else [expected]
    return any(_is_json_type(kind, value) for kind in kinds)


def _is_json_type(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, Mapping)
    if kind == "null":
        return value is None
    return True


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _describe_type(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        return " | ".join(json.dumps(option) for option in spec["enum"])
    if "anyOf" in spec:
        return " or ".join(_describe_type(option) for option in spec["anyOf"])
    kind = spec.get("type", "any value")
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def _preview(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"({text[:60]}…)" if len(text) > 60 else f"({text})"


def _to_text(output: Any) -> str:
    if output is None:
        return "OK"
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


# --- @tool: a Tool from a typed function -------------------------------------------------------------


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Any:
    """Decorator: build a `Tool` from a typed function (schema from its signature and docstring)."""

    def build(f: Callable[..., Any]) -> Tool:
        signature = inspect.signature(f)
        hints = typing.get_type_hints(f)
        properties: dict[str, Any] = {}
        required: list[str] = []
        arg_docs = _param_docs(inspect.getdoc(f) or "")
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            spec = _schema_for(hints.get(param.name, Any))
            if param.name in arg_docs:
                spec["description"] = arg_docs[param.name]
            properties[param.name] = spec
            if param.default is inspect.Parameter.empty:
                required.append(param.name)
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        accepted = set(properties)

        def handler(args: dict[str, Any]) -> Any:
            return f(**{key: value for key, value in args.items() if key in accepted})

        summary = description if description is not None else _summary(inspect.getdoc(f) or "")
        return Tool(name or f.__name__, summary, parameters, handler)

    return build(func) if func is not None else build


def _schema_for(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if origin is Literal:
        return {"enum": list(get_args(annotation))}
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(options) == 1:
            return _schema_for(options[0])
        return {"anyOf": [_schema_for(option) for option in options]}
    if origin in (list, tuple, set, frozenset):
        args = get_args(annotation)
        item = _schema_for(args[0]) if args else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if isinstance(annotation, type) and annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    return {}


def _summary(doc: str) -> str:
    """The docstring up to its `Args:` section: what the model reads as the description."""
    lines = []
    for line in doc.splitlines():
        if line.strip().lower() in ("args:", "arguments:", "parameters:"):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _param_docs(doc: str) -> dict[str, str]:
    """Google-style `Args:` entries (`name: text`) as per-parameter descriptions."""
    found: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if not stripped:
                continue
            if ":" in stripped and not line.startswith(" " * 8):
                key, _, text = stripped.partition(":")
                key = key.split("(")[0].strip()
                if key.isidentifier():
                    found[key] = text.strip()
                    continue
            if found and line.startswith(" "):
                last = next(reversed(found))
                found[last] = f"{found[last]} {stripped}"
            else:
                break
    return found
