"""The Responses API request: a function tool's parameters and `text.format`'s schema must
be JSON Schemas, refused by the field the client sent otherwise."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from core.errors import InvalidRequest
from core.request_parsing import parse_request
from core.responses_protocol import ResponsesRequest

VALID = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _parse(**fields: Any) -> ResponsesRequest:
    return parse_request(orjson.dumps({"model": "m", "input": "hi", **fields}), ResponsesRequest)


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": parameters}


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        (
            {"tools": [_tool("a", VALID), _tool("b", {"type": "objekt"})]},
            "tools[1].parameters",
            "invalid_function_parameters",
        ),
        (
            {"text": {"format": {"type": "json_schema", "name": "o", "schema": {"enum": 1}}}},
            "text.format.schema",
            "invalid_json_schema",
        ),
    ],
)
def test_schemas_that_are_no_json_schemas_are_400s(
    fields: dict[str, Any], param: str, code: str
) -> None:
    """Flat function tools name `tools[i].parameters`, a format `text.format.schema`."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(**fields)
    assert (caught.value.param, caught.value.code) == (param, code)


def test_valid_schemas_pass() -> None:
    """A tool and a format whose schemas are valid are accepted as sent."""
    text = {"format": {"type": "json_schema", "name": "o", "schema": VALID, "strict": True}}
    request = _parse(tools=[_tool("a", VALID)], text=text)
    assert request.tools is not None and request.tools[0]["parameters"] == VALID
    assert request.text is not None and request.text.format.schema_ == VALID


def test_a_json_schema_format_needs_its_name() -> None:
    """`text.format.name` is required, as OpenAI requires it: a 400 naming it, no made-up name."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(text={"format": {"type": "json_schema", "schema": VALID}})
    assert caught.value.param == "text.format.name"
