"""The `tool_calls` of an assistant message sent back as history, checked as OpenAI checks
them: each call is `{"id", "type": "function", "function": {"name", "arguments"}}`, every one
of them there and a string (`arguments` the JSON text OpenAI sends, not an object or null,
though vLLM takes those), and no two calls of one message share an id: a tool message names
the call it answers by its id, so a shared one would leave unsaid which call it answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import InvalidRequest, UnsupportedParameter


def call_ids(calls: Sequence[dict[str, Any]], where: str) -> list[str]:
    """The ids of an assistant message's `calls` (found at `where`, `messages[1].tool_calls`),
    in order, once each call is checked; else a 400 naming the field."""
    ids: dict[str, None] = {}  # ordered, and a lookup that does not grow with the calls
    for j, call in enumerate(calls):
        at = f"{where}[{j}]"
        call_id = _string(call, "id", at)
        kind = _string(call, "type", at)
        if kind == "custom":
            raise UnsupportedParameter(
                "Custom tool calls are not supported; only 'function' calls are.",
                param=f"{at}.type",
            )
        if kind != "function":
            raise InvalidRequest(
                f"Invalid value: {kind!r}. Supported values are: 'function'.",
                param=f"{at}.type",
            )
        function = _required(call, "function", at)
        if not isinstance(function, dict):
            raise _invalid_type(f"{at}.function", "an object", function)
        _string(function, "name", f"{at}.function")
        _string(function, "arguments", f"{at}.function")
        if call_id in ids:
            raise InvalidRequest(
                f"Invalid parameter: Duplicate value for '{at}.id' of {call_id!r}: an earlier "
                "call of the same message has that id; each call needs its own, as a tool "
                "message names the call it answers by it.",
                param=f"{at}.id",
            )
        ids[call_id] = None
    return list(ids)


def _required(container: dict[str, Any], key: str, where: str) -> Any:
    if key not in container:
        raise InvalidRequest(
            f"Missing required parameter: '{where}.{key}'.", param=f"{where}.{key}"
        )
    return container[key]


def _string(container: dict[str, Any], key: str, where: str) -> str:
    value = _required(container, key, where)
    if not isinstance(value, str):
        raise _invalid_type(f"{where}.{key}", "a string", value)
    return value


def _invalid_type(param: str, expected: str, value: Any) -> InvalidRequest:
    """OpenAI's words for a value of the wrong type (null too)."""
    return InvalidRequest(
        f"Invalid type for '{param}': expected {expected}, but got {_kind(value)} instead.",
        param=param,
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string"
