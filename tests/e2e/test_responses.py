"""The Responses API through a real gateway, over real gRPC to the stand-in and over HTTP to
the OpenAI mock, with the official client: whole and streamed responses, conversations by
`previous_response_id`, function calls and their outputs, stored responses read and deleted,
and what the gateway refuses."""

from __future__ import annotations

from typing import Any, cast

import openai
import orjson
import pytest
from openai.types.responses import FunctionToolParam, ResponseFailedEvent

from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack

WEATHER: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "strict": False,
}


def _client(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_a_whole_response_is_stored_and_read_back(stack: Stack, model: str) -> None:
    """A text answer: completed, with usage; GET returns the same response."""
    client = _client(stack)
    response = await client.responses.create(
        model=model, input="Tell me about queues", instructions="Be brief."
    )
    assert response.id.startswith("resp_") and response.status == "completed"
    assert response.output_text and response.output[0].type == "message"
    assert response.usage is not None and response.usage.output_tokens > 0
    assert response.instructions == "Be brief."
    again = await client.responses.retrieve(response.id)
    assert again.id == response.id and again.output_text == response.output_text


async def test_previous_response_id_continues_the_conversation(stack: Stack) -> None:
    """The second turn's prompt holds the first turn (its input tokens exceed the first's
    total); an unknown previous id is OpenAI's 400 `previous_response_not_found` naming the
    parameter."""
    client = _client(stack)
    first = await client.responses.create(model="sim", input="Hello there")
    second = await client.responses.create(
        model="sim", input="And then?", previous_response_id=first.id
    )
    assert first.usage is not None and second.usage is not None
    assert second.usage.input_tokens > first.usage.total_tokens
    assert second.previous_response_id == first.id
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model="sim", input="x", previous_response_id="resp_nope")
    error = _error(refused.value)
    assert (error["param"], error["code"]) == (
        "previous_response_id",
        "previous_response_not_found",
    )


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_input_items_list_the_conversation_before_the_output(
    stack: Stack, model: str
) -> None:
    """`responses.input_items.list` reads a stored response's input: the conversation it
    continued and its own input, newest first by default, each item with an id that it keeps
    in every response of the chain; the SDK's
    auto-pagination (`limit`, `after`) walks it oldest first with `order="asc"`."""
    client = _client(stack)
    first = await client.responses.create(model=model, input="Hello there", instructions="Hi.")
    listed = await client.responses.input_items.list(first.id)
    assert [(item.type, getattr(item, "role", None)) for item in listed.data] == [
        ("message", "user")
    ]
    assert listed.data[0].id and not listed.has_more
    second = await client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[{"role": "user", "content": [{"type": "input_text", "text": "And then?"}]}],
    )
    newest = await client.responses.input_items.list(second.id)
    roles = [getattr(item, "role", None) for item in newest.data]
    assert roles == ["user", "assistant", "user"]
    assert newest.data[1].id == first.output[0].id
    assert newest.data[2].id == listed.data[0].id  # an input item keeps its id down the chain
    walked = [
        item async for item in client.responses.input_items.list(second.id, order="asc", limit=1)
    ]
    assert [item.id for item in walked] == [item.id for item in reversed(newest.data)]
    with pytest.raises(openai.NotFoundError):
        await client.responses.input_items.list("resp_nope")


async def test_a_stream_is_the_typed_event_sequence(stack: Stack) -> None:
    """Events arrive in order with rising sequence numbers; the deltas add up to the final
    response's text, which the SDK's stream helper returns."""
    client = _client(stack)
    kinds: list[str] = []
    numbers: list[int] = []
    text = ""
    async with client.responses.stream(model="sim", input="Stream, please") as stream:
        async for event in stream:
            kinds.append(event.type)
            numbers.append(event.sequence_number)
            if event.type == "response.output_text.delta":
                text += event.delta
        final = await stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert "response.output_item.added" in kinds and "response.output_text.done" in kinds
    assert final.output_text == text and final.status == "completed"
    stored = await client.responses.retrieve(final.id)
    assert stored.output_text == text


async def test_a_function_call_and_its_output_close_the_loop(stack: Stack) -> None:
    """The model calls the tool (a function_call item with JSON arguments); the tool's output,
    sent with previous_response_id, is answered in words."""
    client = _client(stack)
    called = await client.responses.create(model="sim", input="Weather in Paris?", tools=[WEATHER])
    calls = [item for item in called.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert isinstance(orjson.loads(calls[0].arguments)["city"], str)
    answered = await client.responses.create(
        model="sim",
        previous_response_id=called.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"}],
        tools=[WEATHER],
    )
    assert [item.type for item in answered.output] == ["message"]
    assert answered.output_text


async def test_a_call_left_unanswered_is_refused(stack: Stack) -> None:
    """Chaining on a response whose call the new input does not answer is OpenAI's 400
    naming the input and the call; answering it afterwards still works."""
    client = _client(stack)
    called = await client.responses.create(model="sim", input="Weather in Oslo?", tools=[WEATHER])
    call = next(item for item in called.output if item.type == "function_call")
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(
            model="sim", previous_response_id=called.id, input="Never mind.", tools=[WEATHER]
        )
    error = _error(refused.value)
    assert error["param"] == "input"
    assert error["message"] == f"No tool output found for function call {call.call_id}."


async def test_a_streamed_function_call(stack: Stack) -> None:
    """A streamed call: its item is added, its arguments arrive as deltas and are done, and
    the final response carries the call whole."""
    client = _client(stack)
    arguments = ""
    kinds: list[str] = []
    async with client.responses.stream(
        model="sim", input="Weather in Rome?", tools=[WEATHER]
    ) as stream:
        async for event in stream:
            kinds.append(event.type)
            if event.type == "response.function_call_arguments.delta":
                arguments += event.delta
        final = await stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].arguments == arguments
    assert "response.function_call_arguments.done" in kinds


@pytest.mark.parametrize("limit", [5, 20])
async def test_a_call_cut_by_max_output_tokens_is_not_text(stack: Stack, limit: int) -> None:
    """An answer cut inside its call's markup is incomplete, with neither the markup as text
    nor a call; streamed, the same."""
    client = _client(stack)
    asked: Any = {"model": "sim", "input": "weather [[single]]", "tools": [WEATHER]}
    whole = await client.responses.create(**asked, max_output_tokens=limit)
    events = await client.responses.create(**asked, max_output_tokens=limit, stream=True)
    last = [event async for event in events][-1]
    assert last.type == "response.incomplete"
    for response in (whole, last.response):
        assert response.status == "incomplete" and response.output_text == "", response
        assert not [item for item in response.output if item.type == "function_call"]


async def test_a_cached_answer_gets_fresh_call_ids(stack: Stack) -> None:
    """The same call asked again (an exact cache hit, whole or streamed): each response's
    call_id and item id are its own."""
    client = _client(stack)
    asked: Any = {"model": "sim", "input": "weather [[single]]", "tools": [WEATHER]}
    asked["temperature"] = 0
    ids: list[tuple[str, str | None]] = []
    caches: list[str] = []
    for _ in range(3):
        raw = await client.responses.with_raw_response.create(**asked)
        caches.append(raw.headers["x-cache"])
        ids += [(i.call_id, i.id) for i in raw.parse().output if i.type == "function_call"]
    async with client.responses.stream(**asked) as stream:
        final = await stream.get_final_response()
    ids += [(i.call_id, i.id) for i in final.output if i.type == "function_call"]
    assert caches[-1] == "hit-exact" and len(ids) == 4
    assert len({call_id for call_id, _ in ids}) == 4 and len({item for _, item in ids}) == 4


async def test_deleted_and_unstored_responses_are_not_found(stack: Stack) -> None:
    """DELETE removes a stored response; one created with store=false was never kept."""
    client = _client(stack)
    kept = await client.responses.create(model="sim", input="Keep me")
    await client.responses.delete(kept.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(kept.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.delete(kept.id)
    fleeting = await client.responses.create(model="sim", input="Forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(fleeting.id)


async def test_a_stream_that_fails_is_a_failed_response_kept(
    stack: Stack, sims: list[ControlClient]
) -> None:
    """A stream that dies after its first tokens ends in response.failed with an error code
    the SDK's types accept and the output streamed so far (the message it had begun, its
    text what the deltas said, cut short: incomplete), and the response it announced is
    kept, as failed, with that output."""
    for sim in sims:
        await sim.configure(die_after_tokens=3)
    client = _client(stack)
    async with client.responses.stream(model="sim", input="Tell me a story") as stream:
        events = [event async for event in stream]
    created, failed = events[0], events[-1]
    assert created.type == "response.created" and failed.type == "response.failed"
    strict = ResponseFailedEvent.model_validate(failed.model_dump(), strict=True)
    assert strict.response.error is not None and strict.response.error.code == "server_error"
    added = [e.item.id for e in events if e.type == "response.output_item.added"]
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text and [item.id for item in failed.response.output] == added
    assert failed.response.output_text == text
    assert [item.model_dump()["status"] for item in failed.response.output] == ["incomplete"]
    kept = await client.responses.retrieve(created.response.id)
    assert kept.status == "failed" and kept.error is not None
    assert kept.error.code == "server_error"
    assert kept.output == failed.response.output


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"background": True}, "background"),
        ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "input[0].role"),
        ({"max_output_tokens": 0}, "max_output_tokens"),
        ({"max_output_tokens": 100_000}, "max_output_tokens"),
        ({"input": "word " * 40_000}, "input"),
        (
            {
                "input": [
                    {"role": "user", "content": "Hi"},
                    {"type": "function_call_output", "call_id": "call_x", "output": "42"},
                ]
            },
            "input[1].call_id",
        ),
        (
            {
                "tools": [WEATHER],
                "tool_choice": "required",
                "text": {"format": {"type": "json_schema", "name": "o", "schema": {}}},
            },
            "text.format",
        ),
    ],
)
async def test_what_the_gateway_cannot_do_is_a_400_naming_it(
    stack: Stack, extra: dict[str, Any], param: str
) -> None:
    """Hosted tools, background mode, malformed input and input or output over the context
    are refused up front, naming the Responses field (not the chat field it became)."""
    client = _client(stack)
    request: dict[str, Any] = {"model": "sim", "input": "Hi", **extra}
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(**request)
    error = _error(refused.value)
    assert error["param"] == param
    for chat_field in ("messages", "max_completion_tokens", "response_format"):
        assert chat_field not in error["message"]


def _error(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.body
    assert isinstance(body, dict)
    error: dict[str, Any] = body.get("error", body)
    return error


def _output_text(output: Any) -> Any:
    """The `output_text` part of a response's message."""
    (message,) = [item for item in output if item.type == "message"]
    part = message.content[0]
    assert part.type == "output_text"
    return part


def _joined(logprobs: Any) -> str:
    """The text the tokens of some logprobs add up to."""
    return bytes(b for entry in logprobs for b in getattr(entry, "bytes", None) or ()).decode()


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_logprobs_are_shown_when_included_and_cached_apart(stack: Stack, model: str) -> None:
    """`include` output text logprobs with `top_logprobs`: the output text holds its tokens'
    logprobs, whole and streamed, over gRPC and over HTTP; the same request answered from the
    exact cache shows them too, and one without them is its own entry, without logprobs."""
    client = _client(stack)
    asked: Any = {"model": model, "input": "logprobs please", "temperature": 0}
    included = {**asked, "include": ["message.output_text.logprobs"], "top_logprobs": 1}
    caches: list[str] = []
    for _ in range(2):
        raw = await client.responses.with_raw_response.create(**included)
        caches.append(raw.headers["x-cache"])
        part = _output_text(raw.parse().output)
        assert part.logprobs
        assert all(len(lp.top_logprobs) == 1 for lp in part.logprobs)
        if model == "sim":  # over gRPC a token's bytes are its own: they join into the text
            assert _joined(part.logprobs) == part.text
    assert caches[-1] == "hit-exact"
    async with client.responses.stream(**included) as stream:
        deltas = [event async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert all(event.logprobs for event in deltas)
    part = _output_text(final.output)
    assert [lp.token for lp in part.logprobs or ()] == [
        lp.token for event in deltas for lp in event.logprobs
    ]
    raw = await client.responses.with_raw_response.create(**asked)
    assert raw.headers["x-cache"] != "hit-exact"
    assert _output_text(raw.parse().output).logprobs == []


async def test_a_retrieval_asking_what_is_not_served_is_a_400(stack: Stack) -> None:
    """Retrieving with stream=true (OpenAI replays only background responses, which the
    gateway never has) or an unknown include is a 400 naming it, not a 200 the SDK reads as
    an empty stream; included logprobs are served where the response kept them."""
    client = _client(stack)
    plain = await client.responses.create(model="sim", input="Keep me")
    with pytest.raises(openai.BadRequestError) as streamed:
        await client.responses.retrieve(plain.id, stream=True)
    assert _error(streamed.value)["param"] == "stream"
    with pytest.raises(openai.BadRequestError) as bogus:
        await client.responses.retrieve(plain.id, include=cast(Any, ["bogus"]))
    assert _error(bogus.value)["param"] == "include"
    with pytest.raises(openai.BadRequestError) as unkept:
        await client.responses.retrieve(plain.id, include=["message.output_text.logprobs"])
    assert _error(unkept.value)["param"] == "include"
    with_logprobs = await client.responses.create(
        model="sim", input="Keep me", include=["message.output_text.logprobs"]
    )
    again = await client.responses.retrieve(
        with_logprobs.id, include=["message.output_text.logprobs"]
    )
    assert _output_text(again.output).logprobs == _output_text(with_logprobs.output).logprobs


async def test_top_logprobs_out_of_range_is_a_400(stack: Stack) -> None:
    """`top_logprobs` above 20 is refused naming it, as OpenAI refuses it."""
    with pytest.raises(openai.BadRequestError) as refused:
        await _client(stack).responses.create(model="sim", input="x", top_logprobs=21)
    assert refused.value.body["param"] == "top_logprobs"  # type: ignore[index]
