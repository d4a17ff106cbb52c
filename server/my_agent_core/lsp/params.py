"""Raw-param validation for the custom `myAgent/*` requests.

Custom requests reach their handlers as raw JSON values (see `server.MyAgentProtocol`), so every request can
be answered: anything malformed becomes a JSON-RPC error -32602 whose message says what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled

__all__ = [
    "ENDPOINT_FAILED",
    "INVALID_PARAMS",
    "MEMORY_EDIT_REFUSED",
    "NO_MODEL",
    "REQUEST_CANCELLED",
    "RequestError",
    "cancelled",
    "invalid",
    "opt_int",
    "opt_str",
    "req_choice",
    "req_str",
    "to_params",
    "to_plain",
]

INVALID_PARAMS = -32602
NO_MODEL = -32001
ENDPOINT_FAILED = -32002
MEMORY_EDIT_REFUSED = -32003
REQUEST_CANCELLED = -32800


class RequestError(JsonRpcException):
    """A JSON-RPC error with an explicit code; pygls answers the request with it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message=message, code=code, data=data)


def invalid(message: str) -> RequestError:
    """An invalid-params error (-32602)."""
    return RequestError(INVALID_PARAMS, message)


def cancelled(message: str = "request cancelled") -> JsonRpcException:
    """The error a cancelled request is answered with (-32800)."""
    return JsonRpcRequestCancelled(message=message)


def to_plain(value: Any) -> Any:
    """Namedtuples (pygls' default shape for unknown params) back to dicts, recursively."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: to_plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def to_params(raw: Any) -> dict[str, Any]:
    """The params object of a request; `None` (omitted params) counts as `{}`."""
    raw = to_plain(raw)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise invalid(f"params must be a JSON object, got {_json_type(raw)}")
    return raw


def opt_str(params: dict[str, Any], key: str) -> str | None:
    """An optional string param (`null` counts as omitted)."""
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(f"`{key}` must be a string, got {_json_type(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(f"`{key}` is not valid Unicode (it holds a lone surrogate)") from None
    return value


def req_str(params: dict[str, Any], key: str, *, non_empty: bool = False) -> str:
    """A required string param; with `non_empty`, blank strings are refused too."""
    if params.get(key) is None:
        raise invalid(f"`{key}` is required")
    value = opt_str(params, key)
    assert value is not None
    if non_empty and not value.strip():
        raise invalid(f"`{key}` must not be empty")
    return value


def req_choice(params: dict[str, Any], key: str, choices: Iterable[str]) -> str:
    """A required string param that must be one of `choices`."""
    options = tuple(choices)
    value = req_str(params, key)
    if value not in options:
        raise invalid(f"`{key}` must be one of {', '.join(options)}; got {value[:80]!r}")
    return value


def opt_int(params: dict[str, Any], key: str, *, minimum: int, maximum: int) -> int | None:
    """An optional integer param within [minimum, maximum] (booleans and floats refused)."""
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"`{key}` must be an integer, got {_json_type(value)}")
    if not minimum <= value <= maximum:
        raise invalid(f"`{key}` must be between {minimum} and {maximum}, got {value}")
    return value


def _json_type(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
