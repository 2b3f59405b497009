"""Client JSON schemas against their metaschema: the schemas agents and structured outputs
send pass, invalid ones are named by where and why, nothing is fetched, verdicts are kept."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from core import json_schemas
from core.errors import InvalidFunctionParameters, InvalidJsonSchema
from core.json_schemas import check_function_parameters, check_response_schema, schema_problem


class _Step(BaseModel):
    explanation: str
    output: str


class _MathReasoning(BaseModel):
    """OpenAI's structured-outputs example, as the SDK's `parse` helpers send it."""

    steps: list[_Step]
    final_answer: str


class _Node(BaseModel):
    name: str
    children: list[_Node] = []


WEATHER = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["location"],
    "additionalProperties": False,
}
STRICT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 50},
        "since": {"type": ["string", "null"], "format": "date-time"},
    },
    "required": ["query", "limit", "since"],
    "additionalProperties": False,
}
UI = {
    "type": "object",
    "properties": {"ui": {"$ref": "#/$defs/ui"}},
    "required": ["ui"],
    "additionalProperties": False,
    "$defs": {
        "ui": {
            "type": "object",
            "properties": {
                "type": {"type": "string", "enum": ["div", "button", "header"]},
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/ui"}},
                "attributes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                        "required": ["name", "value"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["type", "label", "children", "attributes"],
            "additionalProperties": False,
        }
    },
}
UNION = {
    "type": "object",
    "properties": {
        "item": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
                    "required": ["name", "age"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"number": {"type": "string"}, "street": {"type": "string"}},
                    "required": ["number", "street"],
                    "additionalProperties": False,
                },
            ]
        },
        "kind": {"const": "entry"},
    },
    "required": ["item", "kind"],
    "additionalProperties": False,
}
MATRIX = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "array", "items": {"type": "number"}, "maxItems": 8},
        },
        "labels": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
    },
    "required": ["rows"],
}
DRAFT_07 = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
        "address": {"$ref": "#/definitions/address"},
    },
    "definitions": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
}

VALID: list[dict[str, Any]] = [
    {},
    {"type": "object", "properties": {}},
    WEATHER,
    STRICT,
    UI,
    UNION,
    MATRIX,
    DRAFT_07,
    _MathReasoning.model_json_schema(),
    _Node.model_json_schema(),
    {"$schema": "https://json-schema.org/draft/2020-12/schema", **WEATHER},
]


@pytest.mark.parametrize("schema", VALID)
def test_schemas_openai_accepts_pass(schema: dict[str, Any]) -> None:
    """Realistic schemas ($defs and $ref, recursion, anyOf, enum, const, nested arrays,
    additionalProperties false, strict mode's nullable types, pydantic's output, a draft-07
    schema that says so) are valid."""
    assert schema_problem(schema) is None
    if "$ref" not in schema:  # a root reference names no type: not a function's (see below)
        check_function_parameters(schema, "f", "tools[0].function.parameters")
    check_response_schema(schema, "out", "response_format.json_schema.schema")


@pytest.mark.parametrize(
    ("schema", "context"),
    [
        ({"type": "objekt"}, "('type',)"),
        ({"type": "object", "required": "name"}, "('required',)"),
        ({"type": "object", "properties": []}, "('properties',)"),
        ({"properties": {"city": {"type": "str"}}}, "('properties', 'city', 'type')"),
        (
            {"properties": {"tags": {"type": "array", "items": 5}}},
            "('properties', 'tags', 'items')",
        ),
        ({"$defs": {"a": {"enum": "x"}}}, "('$defs', 'a', 'enum')"),
        ({"anyOf": {}}, "('anyOf',)"),
        ({"type": "object", "additionalProperties": "no"}, "('additionalProperties',)"),
        ({"minLength": -1}, "('minLength',)"),
        ({"$schema": 5}, "('$schema',)"),
        ({"items": [{"type": "string"}]}, "('items',)"),  # draft-07's tuple form, in 2020-12
    ],
)
def test_invalid_schemas_say_where_and_why(schema: dict[str, Any], context: str) -> None:
    """The problem names the place in the schema, as OpenAI's `In context=(...)` does."""
    problem = schema_problem(schema)
    assert problem is not None and problem.startswith(f"In context={context}, ")


def test_the_errors_carry_openais_codes_and_the_param() -> None:
    """A tool's bad parameters and a structured output's bad schema are 400s with OpenAI's
    codes, naming the field the caller gives and the function or format by name."""
    with pytest.raises(InvalidFunctionParameters) as tool:
        check_function_parameters({"type": "objekt"}, "get_weather", "tools[2].function.parameters")
    assert tool.value.status == 400 and tool.value.code == "invalid_function_parameters"
    assert tool.value.param == "tools[2].function.parameters"
    assert tool.value.message.startswith("Invalid schema for function 'get_weather': In context=")
    with pytest.raises(InvalidJsonSchema) as output:
        check_response_schema({"required": "x"}, "answer", "text.format.schema")
    assert output.value.code == "invalid_json_schema" and output.value.param == "text.format.schema"
    assert output.value.message.startswith("Invalid schema for response_format 'answer': ")


@pytest.mark.parametrize(
    "uri",
    ["https://schemas.example.invalid/meta", "http://127.0.0.1:9/meta", "urn:custom"],
)
def test_an_unknown_metaschema_is_read_as_2020_12_never_fetched(uri: str) -> None:
    """A `$schema` that is none of the five drafts is checked as Draft 2020-12 (no address a
    client writes is fetched: the metaschemas are compiled offline); a `$ref` to an address
    is refused, not fetched."""
    assert schema_problem({"$schema": uri, **WEATHER}) is None
    assert schema_problem({"$schema": uri, "type": "objekt"}) is not None
    problem = schema_problem({"$schema": uri, "$ref": uri, "type": "object"})
    assert problem is not None and f"reference {uri!r} is not local" in problem


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}, "does not resolve"),
        ({"$ref": "http://127.0.0.1:9/x.json"}, "is not local"),
        ({"$ref": "https://json-schema.org/draft/2020-12/schema"}, "is not local"),
        ({**DRAFT_07, "properties": {"a": {"$ref": "#/definitions/city"}}}, "does not resolve"),
    ],
)
def test_a_reference_that_cannot_be_followed_is_a_problem(
    schema: dict[str, Any], words: str
) -> None:
    """A valid schema whose `$ref` points nowhere in it, or outside it, is refused with the
    place and the reason, in both checks (`core.schema_refs`)."""
    problem = schema_problem(schema)
    assert problem is not None and words in problem and problem.startswith("In context=")
    with pytest.raises(InvalidFunctionParameters):
        check_function_parameters(schema, "f", "tools[0].function.parameters")
    with pytest.raises(InvalidJsonSchema):
        check_response_schema(schema, "out", "response_format.json_schema.schema")


def test_the_draft_a_schema_names_is_the_one_checked() -> None:
    """A draft-04 schema's boolean `exclusiveMinimum` is valid under draft 4, with or without
    the `#` and in https, and not under 2020-12's metaschema."""
    schema = {"type": "number", "minimum": 0, "exclusiveMinimum": True}
    for uri in (
        "http://json-schema.org/draft-04/schema#",
        "https://json-schema.org/draft-04/schema",
    ):
        assert schema_problem({"$schema": uri, **schema}) is None
    assert schema_problem(schema) is not None


def test_a_verdict_is_kept_per_schema_text() -> None:
    """The same schema text again is a cache hit (agents resend their tools every turn); a
    schema text over the cached size is checked every time, never kept."""
    json_schemas._problem_of_text.cache_clear()
    for _ in range(3):
        assert schema_problem(WEATHER) is None
        assert schema_problem({"type": "objekt"}) is not None
    info = json_schemas._problem_of_text.cache_info()
    assert (info.hits, info.misses) == (4, 2)
    huge = {"type": "object", "description": "x" * json_schemas._CACHED_TEXT}
    assert schema_problem(huge) is None
    assert json_schemas._problem_of_text.cache_info().currsize == 2


@pytest.mark.parametrize(
    ("parameters", "kind"),
    [
        ({"type": "string"}, "string"),
        ({"type": "array", "items": {"type": "integer"}}, "array"),
        ({"type": ["object", "null"]}, "['object', 'null']"),
    ],
)
def test_function_parameters_are_an_objects_schema(parameters: dict[str, Any], kind: str) -> None:
    """A valid schema of anything but an object is refused as a function's parameters, in
    OpenAI's words (a call's arguments are an object), while a structured output may be
    one."""
    with pytest.raises(InvalidFunctionParameters) as refused:
        check_function_parameters(parameters, "f", "tools[1].parameters")
    assert refused.value.param == "tools[1].parameters"
    assert refused.value.message == (
        "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', "
        f"got 'type: \"{kind}\"'."
    )
    check_response_schema(parameters, "out", "text.format.schema")


def test_empty_function_parameters_are_no_arguments() -> None:
    """`{}` says nothing: it is read as no arguments, as an omitted `parameters` is."""
    check_function_parameters({}, "f", "tools[0].function.parameters")


@pytest.mark.parametrize(
    "parameters",
    [
        {"properties": {"a": {"type": "string"}}},
        {"properties": {}, "additionalProperties": False},
        {"anyOf": [{"type": "object"}, {"type": "object", "properties": {"a": {}}}]},
        {"$schema": "http://json-schema.org/draft-07/schema#"},
        _Node.model_json_schema(),  # `$ref` at the root: the SDK's helper inlines it
    ],
)
def test_function_parameters_naming_no_type_are_refused(parameters: dict[str, Any]) -> None:
    """A schema that says something but names no type (properties alone, a root `anyOf` or
    `$ref`) is OpenAI's 400: `got 'type: "None"'`, though a structured output may be one."""
    with pytest.raises(InvalidFunctionParameters) as refused:
        check_function_parameters(parameters, "f", "tools[0].function.parameters")
    assert refused.value.param == "tools[0].function.parameters"
    assert refused.value.message == (
        "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', "
        "got 'type: \"None\"'."
    )
    check_response_schema(parameters, "out", "text.format.schema")
