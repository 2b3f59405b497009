"""Parameter values that arrive as text (Qwen3-Coder's XML calls), turned into the JSON type
the function's schema declares for the parameter; text whenever that does not fit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from backends.tool_calls import exact_json
from backends.tool_calls.functions import Schema

_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "null": type(None),
    "boolean": bool,
    "integer": int,
    "number": (int, float),
    "object": dict,
    "array": list,
}
_ORDER = ("null", "boolean", "integer", "number", "object", "array")


def declared_types(schema: Schema | None) -> set[str]:
    """The JSON types a schema allows: its `type` (one or a list), those of its `anyOf` /
    `oneOf` branches, or those of its `enum` values."""
    if not schema:
        return set()
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    types: set[str] = set()
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping):
                types |= declared_types(branch)
    for value in schema.get("enum") or ():
        types |= {name for name in _ORDER if _fits(value, name)} or {"string"}
    return types


def typed_value(text: str, schema: Schema | None) -> Any:
    """`text` as the first type the schema declares that it parses as; a string otherwise.
    Where the schema allows a string, the text stays one (only a declared null is read)."""
    types = declared_types(schema)
    stripped = text.strip()
    if "string" in types:
        return None if "null" in types and stripped == "null" else text
    for name in _ORDER:
        if name not in types:
            continue
        if name == "boolean" and stripped.lower() in ("true", "false"):
            return stripped.lower() == "true"
        try:
            value = exact_json.loads(stripped)
        except orjson.JSONDecodeError:
            continue
        if _fits(value, name):
            return value
    return text


def _fits(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    return isinstance(value, _JSON_TYPES[name])
