"""The functions a request offers, as the parsers need them: each name with its parameters'
JSON schema, and the check that turns a name and arguments into a call or refuses them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.parsed import ParsedCall

Schema: TypeAlias = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Functions:
    """Function name -> its parameters schema (`{}` where the request gave none)."""

    schemas: Mapping[str, Schema]

    @classmethod
    def of(cls, tools: ToolsLike) -> Functions:
        """From functions, a name -> schema mapping, or bare names (no schemas known)."""
        if isinstance(tools, Functions):
            return tools
        if isinstance(tools, Mapping):
            return cls(
                {
                    name: schema if isinstance(schema, Mapping) else {}
                    for name, schema in tools.items()
                }
            )
        return cls({name: {} for name in tools})

    @classmethod
    def from_tools(cls, tools: Iterable[Mapping[str, Any]] | None) -> Functions:
        """From a request's `tools`: OpenAI's list of `{"type": "function", "function": {...}}`."""
        schemas: dict[str, Schema] = {}
        for tool in tools or ():
            function = tool.get("function")
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                parameters = function.get("parameters")
                schemas[function["name"]] = parameters if isinstance(parameters, Mapping) else {}
        return cls(schemas)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.schemas

    def parameter(self, function: str, parameter: str) -> Schema | None:
        """The schema `function` declares for `parameter`, if it declares one."""
        properties = self.schemas.get(function, {}).get("properties")
        schema = properties.get(parameter) if isinstance(properties, Mapping) else None
        return schema if isinstance(schema, Mapping) else None

    def call(self, name: object, arguments: object) -> ParsedCall | None:
        """A call to `name` with `arguments` (an object, or its JSON text); None unless `name`
        is one of these functions and the arguments are an object."""
        if not isinstance(name, str) or name not in self.schemas:
            return None
        if isinstance(arguments, str):  # some models send the arguments already as text
            try:
                arguments = exact_json.loads(arguments)
            except orjson.JSONDecodeError:
                return None
        if not isinstance(arguments, dict):
            return None
        return ParsedCall(name, json_text(arguments))


def json_text(value: dict[str, Any]) -> str:
    """Compact JSON text of an arguments object."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # integers beyond 64 bits, which orjson refuses
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


ToolsLike: TypeAlias = Functions | Mapping[str, Schema] | Iterable[str]
