"""The JSON schemas a client sends (a function tool's `parameters`, a structured output's
`schema`) checked against their metaschema where they come in: an invalid one would
otherwise reach the engine's grammar compiler as it is, and fail there, later, or be
misread.

A schema is checked as an instance of the metaschema of the draft its `$schema` names (the
five published ones), else of Draft 2020-12's, as OpenAI reads it. The metaschemas are
compiled offline: nothing a client writes (`$schema`, `$ref`) is ever fetched. Its
references must then resolve within it (`core.schema_refs`). The verdict is kept per schema
text, as agents send the same tools with every turn.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema_rs
import orjson

from core.errors import InvalidFunctionParameters, InvalidJsonSchema
from core.schema_refs import REFERENCES, reference_problem

_METASCHEMAS: dict[str, tuple[type[jsonschema_rs.Validator], str]] = {
    "2020-12": (jsonschema_rs.Draft202012Validator, "https://json-schema.org/draft/2020-12/schema"),
    "2019-09": (jsonschema_rs.Draft201909Validator, "https://json-schema.org/draft/2019-09/schema"),
    "7": (jsonschema_rs.Draft7Validator, "http://json-schema.org/draft-07/schema"),
    "6": (jsonschema_rs.Draft6Validator, "http://json-schema.org/draft-06/schema"),
    "4": (jsonschema_rs.Draft4Validator, "http://json-schema.org/draft-04/schema"),
}
# By the URI less its scheme and `#`: `$schema` is written in http or https, with or without.
_DRAFTS = {uri.split("://", 1)[1]: draft for draft, (_, uri) in _METASCHEMAS.items()}
_CACHED_TEXT = 16_384
"""The longest schema text whose verdict is kept: the cache holds at most 1024 x 16 KiB."""


def check_function_parameters(parameters: dict[str, Any], name: str, param: str) -> None:
    """A 400 `invalid_function_parameters` naming `param` unless `parameters` is a valid
    JSON Schema that says `type: "object"` (a call's arguments are one), or `{}`, which says
    nothing and is read as no arguments, as an omitted `parameters` is; its message says
    where in the schema and why, in OpenAI's words. As OpenAI, a schema naming no type
    (`properties` alone, a root `anyOf`) is refused (`got 'type: "None"'`)."""
    problem = schema_problem(parameters)
    kind = parameters.get("type") if parameters else "object"
    if problem is None and kind != "object":
        problem = f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{kind}\"'."
    if problem is not None:
        raise InvalidFunctionParameters(
            f"Invalid schema for function {name!r}: {problem}", param=param
        )


def check_response_schema(schema: dict[str, Any], name: str, param: str) -> None:
    """A 400 `invalid_json_schema` naming `param` unless a structured output's `schema` is
    a valid JSON Schema."""
    problem = schema_problem(schema)
    if problem is not None:
        raise InvalidJsonSchema(
            f"Invalid schema for response_format {name!r}: {problem}", param=param
        )


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON Schema (where, then what), or None when it is."""
    text = orjson.dumps(schema)
    if len(text) > _CACHED_TEXT:
        return _problem(schema, text)
    return _problem_of_text(text)


@functools.lru_cache(maxsize=1024)
def _problem_of_text(text: bytes) -> str | None:
    return _problem(orjson.loads(text), text)


def _problem(schema: dict[str, Any], text: bytes) -> str | None:
    validator = _metaschema(_draft(schema.get("$schema")))
    if not validator.is_valid(schema):
        error = next(iter(validator.iter_errors(schema)))
        return f"In context={tuple(error.instance_path)!r}, {error.message}."
    if any(key in text for key in REFERENCES):  # most schemas hold none: no walk
        return reference_problem(schema)
    return None


def _draft(uri: object) -> str:
    if not isinstance(uri, str):
        return "2020-12"  # not a string: the metaschema itself says so
    return _DRAFTS.get(uri.split("://", 1)[-1].rstrip("#"), "2020-12")


@functools.cache
def _metaschema(draft: str) -> jsonschema_rs.Validator:
    kind, uri = _METASCHEMAS[draft]
    return kind({"$ref": uri}, offline=True)
