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
        (
            {"tools": [_tool("a", VALID), _tool("b", {"type": "string"})]},
            "tools[1].parameters",
            "invalid_function_parameters",
        ),
        (
            {"tools": [_tool("a", {"$ref": "http://127.0.0.1:9/x.json"})]},
            "tools[0].parameters",
            "invalid_function_parameters",
        ),
        (
            {"text": {"format": {"type": "json_schema", "name": "o", "schema": {"$ref": "#/x"}}}},
            "text.format.schema",
            "invalid_json_schema",
        ),
        ({"tools": [_tool("a b", VALID)]}, "tools[0].name", "invalid_value"),
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


@pytest.mark.parametrize("name", ["a b!", "", "x" * 65, "naïve"])
def test_a_format_name_is_openais_pattern(name: str) -> None:
    """`text.format.name` matches ^[a-zA-Z0-9_-]{1,64}$, as at OpenAI: else a 400 naming it."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(text={"format": {"type": "json_schema", "name": name, "schema": VALID}})
    assert caught.value.param == "text.format.name"


def test_a_format_name_of_64_allowed_characters_passes() -> None:
    """Letters, digits, underscores and dashes, up to 64 of them."""
    name = "A-z_9" + "x" * 59
    request = _parse(text={"format": {"type": "json_schema", "name": name, "schema": VALID}})
    assert request.text is not None and request.text.format.name == name


def test_stream_options_are_accepted_with_a_stream() -> None:
    """`stream_options.include_obfuscation` is accepted with `stream: true` (the events
    carry no obfuscation field either way), a 400 naming it without a stream."""
    request = _parse(stream=True, stream_options={"include_obfuscation": False})
    assert request.stream_options is not None
    refused: list[dict[str, Any]] = [
        {"stream_options": {}},
        {"stream": True, "stream_options": {"x": 1}},
    ]
    for fields in refused:
        with pytest.raises(InvalidRequest) as caught:
            _parse(**fields)
        assert (caught.value.param or "").startswith("stream_options")


@pytest.mark.parametrize("value", [0, -1, "2"])
def test_max_tool_calls_is_a_positive_integer(value: Any) -> None:
    """max_tool_calls below 1 or not an integer is a 400 naming it."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(max_tool_calls=value)
    assert caught.value.param == "max_tool_calls"


@pytest.mark.parametrize("value", [-1, 21])
def test_top_logprobs_is_0_to_20(value: int) -> None:
    """`top_logprobs` out of OpenAI's range is a 400 naming it."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(top_logprobs=value)
    assert caught.value.param == "top_logprobs"


def test_output_text_logprobs_are_the_one_thing_to_include() -> None:
    """`message.output_text.logprobs` asks for logprobs; anything else in `include` is a 400
    naming its place."""
    request = _parse(include=["message.output_text.logprobs"], top_logprobs=20)
    assert request.logprobs and request.top_logprobs == 20
    assert not _parse(top_logprobs=2).logprobs
    with pytest.raises(InvalidRequest) as caught:
        _parse(include=["message.output_text.logprobs", "reasoning.encrypted_content"])
    assert caught.value.param == "include[1]"
