"""The `tools` and `tool_choice` of a chat request, checked as OpenAI checks them: a malformed
tool would otherwise be rendered into the prompt as it is, and a misspelt choice read as "none";
a tool's `parameters` must be a valid JSON Schema (`core.json_schemas`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import InvalidRequest, UnsupportedParameter
from core.json_schemas import check_function_parameters
from core.names import check_name

_TOOL_KEYS = frozenset({"type", "function"})
_FUNCTION_KEYS = frozenset({"name", "description", "parameters", "strict"})
CHOICES = ("none", "auto", "required")


def check_tools(tools: Sequence[dict[str, Any]]) -> None:
    """Each tool is `{"type": "function", "function": {"name", "description"?, "parameters"?,
    "strict"?}}` with a name of 1-64 letters, digits, `_` or `-` that no other tool has (a
    call names its tool); else a 400 naming the field."""
    names: dict[str, int] = {}
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if "type" not in tool:
            raise InvalidRequest(
                f"Missing required parameter: {where}.type.", param=f"{where}.type"
            )
        if tool["type"] != "function":
            raise UnsupportedParameter(
                f"Tools of type {tool['type']!r} are not supported; only 'function' is.",
                param=f"{where}.type",
            )
        _no_other_keys(tool, _TOOL_KEYS, where)
        function = tool.get("function")
        if not isinstance(function, dict):
            raise InvalidRequest(
                f"Missing required parameter: {where}.function.", param=f"{where}.function"
            )
        where += ".function"
        _no_other_keys(function, _FUNCTION_KEYS, where)
        name = function.get("name")
        if not isinstance(name, str):
            raise InvalidRequest(
                f"Missing required parameter: {where}.name.", param=f"{where}.name"
            )
        check_name(name, f"{where}.name")
        if name in names:
            raise InvalidRequest(
                f"Duplicate function name {name!r}: tools[{names[name]}] has it already; "
                "function names must be unique.",
                param=f"{where}.name",
            )
        names[name] = i
        for key, kind in (("parameters", dict), ("description", str), ("strict", bool)):
            value = function.get(key)
            if value is not None and not isinstance(value, kind):
                raise InvalidRequest(
                    f"{key} must be {'an object' if kind is dict else f'a {kind.__name__}'}.",
                    param=f"{where}.{key}",
                )
        if function.get("parameters") is not None:
            check_function_parameters(function["parameters"], name, f"{where}.parameters")


def check_tool_choice(choice: str | dict[str, Any], tools: Sequence[dict[str, Any]]) -> None:
    """`none`, `auto`, `required`, or `{"type": "function", "function": {"name": ...}}` naming
    one of the tools; any but `none` needs tools."""
    if choice != "none" and not tools:
        raise InvalidRequest("tool_choice needs tools.", param="tool_choice")
    if isinstance(choice, str):
        if choice not in CHOICES:
            raise InvalidRequest(
                f"tool_choice {choice!r} is not one of none, auto, required, or a function.",
                param="tool_choice",
            )
        return
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if choice.get("type") != "function" or not isinstance(name, str):
        raise InvalidRequest(
            "tool_choice must be none, auto, required or "
            "{'type': 'function', 'function': {'name': ...}}.",
            param="tool_choice",
        )
    if name not in {tool["function"]["name"] for tool in tools}:
        raise InvalidRequest(
            f"tool_choice names the function {name!r}, which is not among the tools.",
            param="tool_choice",
        )


def _no_other_keys(value: dict[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in value:
        if key not in allowed:
            raise UnsupportedParameter(
                f"Unrecognized request argument: {where}.{key}.", param=f"{where}.{key}"
            )
