"""Calls the request forces (`tool_choice` "required" or a named function), enforced by the
engine: the answer is constrained to a JSON schema and then read as calls, as vLLM does.

"required": an array of `{"name": <one of the tools>, "parameters": {...}}` (at most one item
when `parallel_tool_calls` is false); a named function: that function's arguments object.
"""

from __future__ import annotations

from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.functions import json_text
from backends.tool_calls.parsed import Parsed, ParsedCall
from core.protocol import ChatCompletionRequest
from core.schema_refs import rebased


def forced_function(body: ChatCompletionRequest) -> str | None:
    """The function a named `tool_choice` forces, if it does (one of the tools: the request
    was checked so, `core.tool_specs`)."""
    choice = body.tool_choice
    if not isinstance(choice, dict):
        return None
    name: str = choice["function"]["name"]
    return name


def forced_schema(body: ChatCompletionRequest) -> dict[str, Any] | None:
    """The JSON schema that makes the engine produce the forced calls, or None."""
    functions = _functions(body)
    named = forced_function(body)
    if named is not None:
        return _parameters(functions[named])
    if body.tool_choice != "required":
        return None
    # A tool's schema is no longer the root here, so one whose references point into it (`#`,
    # `#/$defs/...`, `#/definitions/...`, `#/properties/...`) or that declares anchors moves
    # to the root's `$defs`, its pointers rebased there and its anchors renamed for it (`node`
    # -> `tool.<name>.node`, `#node` too): they name what they named in the tool, and no two
    # tools' names meet (anchors share one document: two tools' `node` would). `$defs/<name>`,
    # not the array's path: some engines' pointers cannot index a list.
    definitions: dict[str, Any] = {}
    options = []
    for name, function in functions.items():
        parameters = _parameters(function)
        moved = rebased(parameters, f"/$defs/{name}", f"tool.{name}.")
        if moved is not None:
            definitions[name] = moved
            parameters = {"$ref": f"#/$defs/{name}"}
        options.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [name]},
                    "parameters": parameters,
                },
                "required": ["name", "parameters"],
            }
        )
    schema: dict[str, Any] = {"type": "array", "minItems": 1, "items": {"anyOf": options}}
    if definitions:
        schema["$defs"] = definitions
    if body.parallel_tool_calls is False:
        schema["maxItems"] = 1
    return schema


class ForcedCallsParser:
    """Reads the constrained answer whole at the end: it is JSON, not text for the user. An
    answer that is not the expected JSON (cut by max_tokens, say) is returned as text."""

    def __init__(self, named: str | None, tools: set[str]) -> None:
        self._named = named
        self._tools = tools
        self._text: list[str] = []
        # OpenAI ends a forced named call with "stop", a "required" one with "tool_calls".
        self.finish_reason = "stop" if named is not None else "tool_calls"

    def feed(self, text: str) -> Parsed:
        self._text.append(text)
        return Parsed()

    def finish(self, cut: bool = False) -> Parsed:
        """The calls; JSON that is not their shape is text, cut short or not (the answer is
        the calls' JSON only: no markup around it to drop)."""
        text = "".join(self._text)
        calls = self._calls(text)
        return Parsed(calls=calls) if calls else Parsed(text, origin=((0, len(text)),))

    def _calls(self, text: str) -> tuple[ParsedCall, ...]:
        try:
            value = exact_json.loads(text)
        except orjson.JSONDecodeError:
            return ()
        if self._named is not None:
            return (ParsedCall(self._named, json_text(value)),) if isinstance(value, dict) else ()
        if not isinstance(value, list):
            return ()
        calls = []
        for item in value:
            if not isinstance(item, dict) or item.get("name") not in self._tools:
                return ()
            arguments = item.get("parameters", {})
            if not isinstance(arguments, dict):
                return ()
            calls.append(ParsedCall(item["name"], json_text(arguments)))
        return tuple(calls)


def _functions(body: ChatCompletionRequest) -> dict[str, dict[str, Any]]:
    return {
        tool["function"]["name"]: tool["function"]
        for tool in body.tools or ()
        if isinstance(tool.get("function"), dict) and isinstance(tool["function"].get("name"), str)
    }


def _parameters(function: dict[str, Any]) -> dict[str, Any]:
    """The function's arguments schema, always an object's: where the tool has none, or `{}`
    (no arguments, as the request's check reads it, `core.json_schemas`), an empty object's,
    so the engine writes no string or list, which no call can carry; any other schema says
    `type: "object"` (the check refused the rest)."""
    parameters = function.get("parameters")
    if isinstance(parameters, dict) and parameters:
        return parameters
    return {"type": "object", "properties": {}}
