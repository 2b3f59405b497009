"""Tools and tool_choice: malformed ones are 400s naming the field, well-formed ones pass."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from core.errors import InvalidRequest, UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request

TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}},
}


def _parse(**fields: Any) -> ChatCompletionRequest:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}
    return parse_request(orjson.dumps(body), ChatCompletionRequest)


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "function"}, "tools[0].function"),
        ({"function": {"name": "f"}}, "tools[0].type"),
        ({"type": "bogus", "function": {"name": "f"}}, "tools[0].type"),
        ({"type": "function", "function": {}}, "tools[0].function.name"),
        ({"type": "function", "function": {"name": "bad name!"}}, "tools[0].function.name"),
        ({"type": "function", "function": {"name": "f" * 65}}, "tools[0].function.name"),
        (
            {"type": "function", "function": {"name": "f", "parameters": "x"}},
            "tools[0].function.parameters",
        ),
        (
            {"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}},
            "tools[0].function.parameters",
        ),
        (
            {"type": "function", "function": {"name": "f", "parameters": {"$ref": "#/$defs/x"}}},
            "tools[0].function.parameters",
        ),
        (
            {"type": "function", "function": {"name": "f", "strict": "yes"}},
            "tools[0].function.strict",
        ),
        ({"type": "function", "function": {"name": "f", "extra": 1}}, "tools[0].function.extra"),
        ({"type": "function", "function": {"name": "f"}, "extra": 1}, "tools[0].extra"),
    ],
)
def test_malformed_tools_name_the_field(tool: dict[str, Any], param: str) -> None:
    """A tool the template would render as it is, wrongly, is refused instead."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(tools=[tool])
    assert caught.value.param == param


def test_an_unknown_tool_type_is_unsupported() -> None:
    """A tool type other than function is a parameter this gateway cannot honour."""
    with pytest.raises(UnsupportedParameter):
        _parse(tools=[{"type": "web_search"}])


@pytest.mark.parametrize(
    "choice",
    [
        "bogus",
        "NONE",
        {"type": "bogus"},
        {"type": "function"},
        {"type": "function", "function": {"name": "nope"}},
    ],
)
def test_a_malformed_tool_choice_is_refused(choice: object) -> None:
    """A misspelt choice is not read as "none"; a named function must be among the tools."""
    with pytest.raises(InvalidRequest) as caught:
        _parse(tools=[TOOL], tool_choice=choice)
    assert caught.value.param == "tool_choice"


@pytest.mark.parametrize(
    "choice",
    ["none", "auto", "required", {"type": "function", "function": {"name": "get_weather"}}],
)
def test_well_formed_tools_and_choices_pass(choice: object) -> None:
    """The OpenAI forms are accepted as they are."""
    assert _parse(tools=[TOOL], tool_choice=choice).tool_choice == choice


def test_parameters_that_are_no_json_schema_name_the_tool() -> None:
    """A tool whose parameters break the JSON Schema metaschema (the third of three here) is a
    400 `invalid_function_parameters` naming its parameters, never sent on to the engine."""
    bad = {"type": "function", "function": {"name": "f", "parameters": {"required": "name"}}}
    with pytest.raises(InvalidRequest) as caught:
        _parse(tools=[TOOL, {"type": "function", "function": {"name": "g"}}, bad])
    assert caught.value.param == "tools[2].function.parameters"
    assert caught.value.code == "invalid_function_parameters"


def test_function_names_are_unique() -> None:
    """A second tool of the same name is a 400 naming it: a call would not say which it is."""
    other = {"type": "function", "function": {"name": "get_time"}}
    with pytest.raises(InvalidRequest, match="Duplicate function name 'get_weather'") as caught:
        _parse(tools=[TOOL, other, TOOL])
    assert caught.value.param == "tools[2].function.name"
