"""Reasoning through a real gateway over real gRPC, with the official client: the stand-in
thinks as Qwen3 does (its chat template shows it, so the gateway recognises the format with no
configuration); the thinking comes apart from the answer, whole and streamed, in chat and in
the Responses API, with calls after the thinking and `enable_thinking: false` honoured."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import orjson
import pytest
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

from tests.e2e.stack import Stack, running_stack

ASK: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Why is the sky blue?"}]
WEATHER: ChatCompletionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture(scope="module")
def thinking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(
        tmp_path_factory.mktemp("reasoning"), sims=1, sim_args=["--reasoning", "true"], mock=False
    ) as running:
        yield running


def _client(stack: Stack) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.api_url, api_key="k", max_retries=0)


def _reasoning(message: object) -> str | None:
    extra = getattr(message, "model_extra", None) or {}
    assert extra.get("reasoning_content") == extra.get("reasoning")
    value = extra.get("reasoning_content")
    return value if isinstance(value, str) else None


async def test_thinking_is_apart_from_the_answer(thinking: Stack) -> None:
    """reasoning_content holds the thinking, content the answer, no markers in either; the
    reasoning tokens are counted within the completion tokens."""
    answer = await _client(thinking).chat.completions.create(model="sim", messages=ASK, seed=1)
    message = answer.choices[0].message
    reasoning = _reasoning(message)
    assert reasoning and message.content
    for text in (reasoning, message.content):
        assert "<think>" not in text and "</think>" not in text
    usage = answer.usage
    assert usage is not None and usage.completion_tokens_details is not None
    reasoning_tokens = usage.completion_tokens_details.reasoning_tokens or 0
    assert 0 < reasoning_tokens < usage.completion_tokens


async def test_a_stream_carries_the_same_thinking_and_answer(thinking: Stack) -> None:
    """Streamed deltas of reasoning_content and content add up to the whole answer's."""
    client = _client(thinking)
    whole = (await client.chat.completions.create(model="sim", messages=ASK, seed=2)).choices[0]
    stream = await client.chat.completions.create(model="sim", messages=ASK, seed=2, stream=True)
    reasoning, content = "", ""
    async for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
        content += delta.content or ""
    assert reasoning == _reasoning(whole.message) and content == whole.message.content


async def test_enable_thinking_false_answers_at_once(thinking: Stack) -> None:
    """With the template's switch off, there is no thinking: all answer, no reasoning."""
    answer = await _client(thinking).chat.completions.create(
        model="sim",
        messages=ASK,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    message = answer.choices[0].message
    assert _reasoning(message) is None and message.content


@pytest.mark.parametrize("exclude_none", [False, True])
async def test_an_answer_with_thinking_goes_back_as_history(
    thinking: Stack, exclude_none: bool
) -> None:
    """The second turn of a conversation that appends `message.model_dump()` of a thinking
    answer (which carries `reasoning` beside `reasoning_content`) is answered."""
    client = _client(thinking)
    first = await client.chat.completions.create(model="sim", messages=ASK, seed=3)
    answer = first.choices[0].message.model_dump(exclude_none=exclude_none)
    assert answer["reasoning"]
    messages: list[Any] = [*ASK, answer, {"role": "user", "content": "And at sunset?"}]
    second = await client.chat.completions.create(model="sim", messages=messages, max_tokens=20)
    assert second.choices[0].message.content or _reasoning(second.choices[0].message)


async def test_a_call_after_thinking(thinking: Stack) -> None:
    """The model thinks, then calls: the call is parsed, the thinking kept apart."""
    answer = await _client(thinking).chat.completions.create(
        model="sim", messages=ASK, tools=[WEATHER]
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls
    assert _reasoning(choice.message)
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather"
    assert isinstance(orjson.loads(call.function.arguments), dict)


async def test_the_responses_api_has_a_reasoning_item(thinking: Stack) -> None:
    """A response from a thinking model: a reasoning item, then the message. Streamed, the
    reasoning item's `reasoning_text` part is added, filled by deltas and done (all at
    content_index 0), and what they add up to is the whole response's reasoning item."""
    client = _client(thinking)
    response = await client.responses.create(model="sim", input="Why not?")
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.usage is not None and response.usage.output_tokens_details.reasoning_tokens > 0
    part: dict[str, Any] = {}
    seen: list[tuple[str, int, int]] = []
    async with client.responses.stream(model="sim", input="Why not?") as stream:
        async for event in stream:
            if event.type == "response.content_part.added" and event.part.type != "output_text":
                part = event.part.model_dump()
            elif event.type == "response.reasoning_text.delta":
                part["text"] += event.delta
            elif event.type == "response.content_part.done" and event.part.type != "output_text":
                assert event.part.model_dump() == part
            else:
                continue
            seen.append((event.type, event.output_index, event.content_index))
        final = await stream.get_final_response()
    assert seen[0] == ("response.content_part.added", 0, 0)
    assert seen[-1] == ("response.content_part.done", 0, 0)
    assert {(output_index, content_index) for _, output_index, content_index in seen} == {(0, 0)}
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.content
    assert [part] == [content.model_dump() for content in reasoning.content]
    assert final.output[0].model_dump(exclude={"id"}) == reasoning.model_dump(exclude={"id"})


@pytest.mark.parametrize("stream", [False, True])
async def test_include_reasoning_false_leaves_the_thinking_out(
    thinking: Stack, stream: bool
) -> None:
    """`include_reasoning: false` (vLLM's): the answer without reasoning_content or reasoning,
    streamed or not; the content is the same, and the thinking still counts in the usage."""
    client = _client(thinking)
    ask: Any = {"model": "sim", "messages": ASK, "seed": 3}
    full = await client.chat.completions.create(**ask)
    shown = await client.chat.completions.create(**ask, extra_body={"include_reasoning": True})
    assert _reasoning(shown.choices[0].message) == _reasoning(full.choices[0].message)
    if not stream:
        answer = await client.chat.completions.create(
            **ask, extra_body={"include_reasoning": False}
        )
        message = answer.choices[0].message
        assert "reasoning_content" not in (message.model_extra or {})
        assert "reasoning" not in (message.model_extra or {})
        assert message.content == full.choices[0].message.content
        assert answer.usage == full.usage
        return
    chunks = await client.chat.completions.create(
        **ask,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"include_reasoning": False},
    )
    content, usage = "", None
    async for chunk in chunks:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            extra = choice.delta.model_extra or {}
            assert "reasoning_content" not in extra and "reasoning" not in extra
            content += choice.delta.content or ""
    assert content == full.choices[0].message.content and usage == full.usage


async def test_an_answer_cut_while_thinking_has_null_content(thinking: Stack) -> None:
    """max_tokens spent inside the thinking: content null (no content was produced), as the
    stream, which sends no content delta, accumulates; finish reason length."""
    client = _client(thinking)
    answer = await client.chat.completions.create(model="sim", messages=ASK, seed=1, max_tokens=8)
    message = answer.choices[0].message
    assert answer.choices[0].finish_reason == "length" and _reasoning(message)
    assert message.content is None
    chunks = await client.chat.completions.create(
        model="sim", messages=ASK, seed=1, max_tokens=8, stream=True
    )
    contents = [c.choices[0].delta.content async for c in chunks if c.choices]
    assert not any(contents)


def _joined(logprobs: Any) -> str:
    """The text the tokens of some logprobs add up to."""
    return bytes(
        b for entry in logprobs or () for b in getattr(entry, "bytes", None) or ()
    ).decode()


@pytest.mark.parametrize("tools", [False, True])
async def test_chat_logprobs_are_the_contents_tokens(thinking: Stack, tools: bool) -> None:
    """Neither the thinking's tokens nor a call's markup have logprobs: the tokens add up to
    the content, whole and streamed, each chunk's to its own text."""
    client = _client(thinking)
    ask: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather in Paris?"}]
    extra: dict[str, Any] = {"tools": [WEATHER]} if tools else {}
    whole = await client.chat.completions.create(
        model="sim", messages=ask, seed=4, logprobs=True, top_logprobs=2, **extra
    )
    choice = whole.choices[0]
    assert _reasoning(choice.message) and bool(choice.message.tool_calls) == tools
    assert choice.logprobs is not None
    assert _joined(choice.logprobs.content) == (choice.message.content or "")
    stream = await client.chat.completions.create(
        model="sim", messages=ask, seed=4, logprobs=True, top_logprobs=2, stream=True, **extra
    )
    content = ""
    async for chunk in stream:
        if not chunk.choices:
            continue
        delta, logprobs = chunk.choices[0].delta, chunk.choices[0].logprobs
        assert _joined(logprobs.content if logprobs else None) == (delta.content or "")
        content += delta.content or ""
    assert content == (choice.message.content or "")


async def test_the_responses_api_shows_the_output_texts_logprobs(thinking: Stack) -> None:
    """With `include` and `top_logprobs`, the official client reads each text delta's logprobs
    and the output text's, those of the message's tokens alone (not the thinking's), with
    `top_logprobs` alternatives each; without `include` there are none."""
    client = _client(thinking)
    asked: dict[str, Any] = {"include": ["message.output_text.logprobs"], "top_logprobs": 2}
    whole = await client.responses.create(model="sim", input="Why?", **asked)
    (message,) = [item for item in whole.output if item.type == "message"]
    part = message.content[0]
    assert part.type == "output_text" and part.text and part.logprobs
    assert _joined(part.logprobs) == part.text
    assert all(len(lp.top_logprobs) == 2 for lp in part.logprobs)
    stream = await client.responses.create(model="sim", input="Why?", stream=True, **asked)
    streamed: list[Any] = []
    text = ""
    async for event in stream:
        if event.type == "response.output_text.delta":
            assert [lp.token for lp in event.logprobs] and event.delta
            streamed.extend(event.logprobs)
            text += event.delta
        elif event.type == "response.output_text.done":
            assert [lp.token for lp in event.logprobs] == [lp.token for lp in streamed]
    assert _joined(streamed) == text  # the events carry chat's `bytes` too
    plain = await client.responses.create(model="sim", input="Why?")
    (message,) = [item for item in plain.output if item.type == "message"]
    assert message.content[0].type == "output_text" and message.content[0].logprobs == []
