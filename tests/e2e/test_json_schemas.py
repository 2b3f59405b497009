"""JSON schemas through a real gateway, with the official client: invalid tool parameters and
structured-output schemas are 400s naming the field the client sent, for either backend kind;
the schemas the SDK itself writes (strict, `$defs`) and a recursive one are answered."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionFunctionToolParam
from pydantic import BaseModel

from tests.e2e.stack import Stack


class Step(BaseModel):
    explanation: str
    output: str


class MathReasoning(BaseModel):
    steps: list[Step]
    final_answer: str


UI: dict[str, Any] = {  # OpenAI's recursive example: a UI tree through `$ref: "#"`
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["div", "button", "header"]},
        "label": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}},
    },
    "required": ["type", "label", "children"],
    "additionalProperties": False,
}


class Lookup(BaseModel):
    """Look a city up."""

    city: str
    units: str | None


def _client(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)


def _tool(name: str, parameters: dict[str, Any]) -> ChatCompletionFunctionToolParam:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _refusal(exc: openai.BadRequestError) -> tuple[str, str]:
    body = exc.body
    assert isinstance(body, dict)
    error: dict[str, Any] = body.get("error", body)
    assert error["type"] == "invalid_request_error"
    return error["param"], error["code"]


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_chat_refuses_schemas_that_are_no_json_schemas(stack: Stack, model: str) -> None:
    """A third tool's parameters with a misspelt type, and a response format whose
    `required` is a string: 400s naming each, before any backend sees them."""
    client = _client(stack)
    ask: Any = {"model": model, "messages": [{"role": "user", "content": "Hi"}]}
    tools = [
        _tool("a", {"type": "object"}),
        _tool("b", {"type": "object", "properties": {}}),
        _tool("c", {"type": "object", "properties": {"x": {"type": "objekt"}}}),
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(**ask, tools=tools)
    assert _refusal(refused.value) == (
        "tools[2].function.parameters",
        "invalid_function_parameters",
    )
    response_format: Any = {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": {"type": "object", "required": "name"}},
    }
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(**ask, response_format=response_format)
    assert _refusal(refused.value) == ("response_format.json_schema.schema", "invalid_json_schema")


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_responses_refuses_schemas_that_are_no_json_schemas(stack: Stack, model: str) -> None:
    """The Responses API names its own fields: `tools[1].parameters`, `text.format.schema`."""
    client = _client(stack)
    tools: Any = [
        {"type": "function", "name": "a", "parameters": {"type": "object"}, "strict": False},
        {"type": "function", "name": "b", "parameters": {"properties": []}, "strict": False},
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=model, input="Hi", tools=tools)
    assert _refusal(refused.value) == ("tools[1].parameters", "invalid_function_parameters")
    text: Any = {"format": {"type": "json_schema", "name": "o", "schema": {"type": "objekt"}}}
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=model, input="Hi", text=text)
    assert _refusal(refused.value) == ("text.format.schema", "invalid_json_schema")


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_schemas_no_engine_can_follow_are_refused(stack: Stack, model: str) -> None:
    """Parameters of a string, a `$ref` that points nowhere or to a URL, and a format name
    outside OpenAI's pattern: 400s naming the field in either API, before any backend
    sees them (a forced call to a string schema came back as content)."""
    client = _client(stack)
    ask: Any = {"model": model, "messages": [{"role": "user", "content": "Hi"}]}
    forced: Any = {"type": "function", "function": {"name": "f"}}
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(
            **ask, tools=[_tool("f", {"type": "string"})], tool_choice=forced
        )
    assert _refusal(refused.value) == (
        "tools[0].function.parameters",
        "invalid_function_parameters",
    )
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}
    for schema in (dangling, {"$ref": "http://127.0.0.1:9/x.json"}):
        response_format: Any = {
            "type": "json_schema",
            "json_schema": {"name": "s", "schema": schema},
        }
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(**ask, response_format=response_format)
        assert _refusal(refused.value) == (
            "response_format.json_schema.schema",
            "invalid_json_schema",
        )
    named: Any = {"type": "json_schema", "json_schema": {"name": "a b/c", "schema": {}}}
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(**ask, response_format=named)
    assert _refusal(refused.value) == ("response_format.json_schema.name", "invalid_value")
    tools: Any = [{"type": "function", "name": "f", "parameters": {"type": "array"}}]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=model, input="Hi", tools=tools, tool_choice="required")
    assert _refusal(refused.value) == ("tools[0].parameters", "invalid_function_parameters")
    text: Any = {"format": {"type": "json_schema", "name": "o", "schema": dangling}}
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model=model, input="Hi", text=text)
    assert _refusal(refused.value) == ("text.format.schema", "invalid_json_schema")


async def test_the_sdks_own_schemas_are_answered(stack: Stack) -> None:
    """`parse` with pydantic models (strict schemas with `$defs`), a recursive schema and a
    strict function tool: answered, the call's arguments valid for the schema sent."""
    client = _client(stack)
    ask: Any = {"model": "sim", "messages": [{"role": "user", "content": "Solve 8x + 7 = -23"}]}
    parsed = await client.chat.completions.parse(**ask, response_format=MathReasoning)
    assert isinstance(parsed.choices[0].message.parsed, MathReasoning)
    steps = await client.responses.parse(model="sim", input="Solve it", text_format=MathReasoning)
    assert isinstance(steps.output_parsed, MathReasoning)
    text: Any = {"format": {"type": "json_schema", "name": "ui", "schema": UI, "strict": True}}
    tree = await client.responses.create(model="sim", input="A form, please", text=text)
    assert tree.status == "completed" and isinstance(orjson.loads(tree.output_text), dict)
    tool = openai.pydantic_function_tool(Lookup)
    parameters = tool["function"].get("parameters")
    assert parameters is not None and parameters["additionalProperties"] is False
    called = await client.chat.completions.create(**ask, tools=[tool], tool_choice="required")
    calls = called.choices[0].message.tool_calls or []
    assert calls
    for call in calls:
        assert call.type == "function" and call.function.name == "Lookup"
        jsonschema_rs.validate(parameters, orjson.loads(call.function.arguments))
