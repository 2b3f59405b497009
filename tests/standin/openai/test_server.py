"""Tests for the OpenAI-compatible mock server, read by the official client and by raw HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from openai import AsyncOpenAI, BadRequestError
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)

from standin.openai.server import MockOpenAIServer

MESSAGES: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Tell me a story"}]
CHAT: dict[str, Any] = {"model": "mock", "messages": MESSAGES}


def content(answer: ChatCompletion, index: int = 0) -> str:
    text = answer.choices[index].message.content
    assert text is not None
    return text


@pytest.fixture
async def mock() -> AsyncIterator[MockOpenAIServer]:
    server = MockOpenAIServer(output_tokens=6)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def client(mock: MockOpenAIServer) -> AsyncIterator[AsyncOpenAI]:
    # Strict validation makes the client check every field of the wire format.
    async with AsyncOpenAI(
        base_url=mock.url, api_key="test", max_retries=0, _strict_response_validation=True
    ) as client:
        yield client


@pytest.fixture
async def lenient_client(mock: MockOpenAIServer) -> AsyncIterator[AsyncOpenAI]:
    # For what the client's strict types reject from OpenAI itself too: the null
    # finish_reason of completion chunks, and base64 embeddings before decoding.
    async with AsyncOpenAI(base_url=mock.url, api_key="test", max_retries=0) as client:
        yield client


@pytest.fixture
async def http(mock: MockOpenAIServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=mock.url.removesuffix("/v1")) as session:
        yield session


async def test_openai_client_reads_chat_completion(client: AsyncOpenAI) -> None:
    """The official client parses a non-streaming chat answer and its usage."""
    answer = await client.chat.completions.create(model="mock", messages=MESSAGES)
    assert answer.object == "chat.completion"
    assert len(content(answer).split()) == 6
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (4, 6)


async def test_openai_client_reads_chat_stream(client: AsyncOpenAI) -> None:
    """The client parses the stream: role first, content deltas, finish, usage, [DONE]."""
    whole = await client.chat.completions.create(model="mock", messages=MESSAGES)
    stream = await client.chat.completions.create(
        model="mock", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 6


async def test_openai_client_reads_text_completion_and_stream(lenient_client: AsyncOpenAI) -> None:
    """Legacy completions work both ways and agree with each other."""
    client = lenient_client
    whole = await client.completions.create(model="mock", prompt="Once upon", max_tokens=3)
    assert whole.choices[0].finish_reason == "length"
    stream = await client.completions.create(
        model="mock", prompt="Once upon", max_tokens=3, stream=True
    )
    text = "".join([c.choices[0].text async for c in stream if c.choices])
    assert text == whole.choices[0].text
    assert len(text.split()) == 3


async def test_a_batch_of_prompts_is_answered_as_each_alone(lenient_client: AsyncOpenAI) -> None:
    """A list of prompts is n choices for each, as vLLM answers it: choice `i * n + j` is what
    prompt i alone gets as its choice j, whole and streamed; usage sums every prompt."""
    client, prompts = lenient_client, ["Once upon", "Far away in time"]
    alone = [
        await client.completions.create(model="mock", prompt=p, n=2, max_tokens=3) for p in prompts
    ]
    batch = await client.completions.create(model="mock", prompt=prompts, n=2, max_tokens=3)
    expected = [choice.text for answer in alone for choice in answer.choices]
    assert [(c.index, c.text) for c in batch.choices] == list(enumerate(expected))
    assert batch.usage is not None and batch.usage.prompt_tokens == 6
    stream = await client.completions.create(
        model="mock", prompt=prompts, n=2, max_tokens=3, stream=True
    )
    texts = ["", "", "", ""]
    async for chunk in stream:
        for choice in chunk.choices:
            texts[choice.index] += choice.text
    assert texts == expected


async def test_openai_client_reads_logprobs_and_tool_calls(client: AsyncOpenAI) -> None:
    """Chat logprobs and a forced tool call parse in the client's models."""
    answer = await client.chat.completions.create(
        model="mock", messages=MESSAGES, logprobs=True, top_logprobs=1
    )
    logprobs = answer.choices[0].logprobs
    assert logprobs is not None and logprobs.content is not None
    assert "".join(t.token for t in logprobs.content) == answer.choices[0].message.content
    tool: ChatCompletionFunctionToolParam = {"type": "function", "function": {"name": "lookup"}}
    answer = await client.chat.completions.create(
        model="mock",
        messages=MESSAGES,
        tools=[tool],
        tool_choice="required",
    )
    calls = answer.choices[0].message.tool_calls
    assert calls is not None and calls[0].type == "function"
    assert calls[0].function.name == "lookup"
    assert answer.choices[0].finish_reason == "tool_calls"


async def test_openai_client_reads_embeddings_and_models(lenient_client: AsyncOpenAI) -> None:
    """Embeddings decode (the client asks for base64) and equal the float encoding."""
    client = lenient_client
    as_base64 = await client.embeddings.create(model="mock", input=["a", "b"])
    as_float = await client.embeddings.create(
        model="mock", input=["a", "b"], encoding_format="float"
    )
    assert len(as_base64.data) == 2
    for left, right in zip(as_base64.data, as_float.data, strict=True):
        assert left.embedding == pytest.approx(right.embedding, abs=1e-6)
    models = await client.models.list()
    assert [m.id for m in models.data] == ["mock"]


async def test_openai_client_sees_injected_error(
    mock: MockOpenAIServer, client: AsyncOpenAI
) -> None:
    """An injected status arrives with an OpenAI error body the client understands."""
    mock.error_status, mock.error_rate = 429, 1.0
    with pytest.raises(openai.RateLimitError) as info:
        await client.chat.completions.create(model="mock", messages=MESSAGES)
    assert "Injected HTTP 429" in str(info.value)


async def test_answers_are_deterministic(client: AsyncOpenAI) -> None:
    """Equal requests get equal text; another seed or choice index gets other text."""
    first = await client.chat.completions.create(model="mock", messages=MESSAGES, n=2)
    again = await client.chat.completions.create(model="mock", messages=MESSAGES, n=2)
    reseeded = await client.chat.completions.create(model="mock", messages=MESSAGES, seed=7)
    texts = [c.message.content for c in first.choices]
    assert texts == [c.message.content for c in again.choices]
    assert texts[0] != texts[1]
    assert reseeded.choices[0].message.content != texts[0]


async def test_max_tokens_and_ignore_eos_set_the_length(client: AsyncOpenAI) -> None:
    """max_tokens cuts with finish_reason length; ignore_eos makes the answer exactly that long."""
    short = await client.chat.completions.create(model="mock", messages=MESSAGES, max_tokens=2)
    assert short.choices[0].finish_reason == "length"
    assert len(content(short).split()) == 2
    long = await client.chat.completions.create(
        model="mock", messages=MESSAGES, max_tokens=40, extra_body={"ignore_eos": True}
    )
    assert len(content(long).split()) == 40
    assert long.choices[0].finish_reason == "length"


async def test_repeated_prompt_reports_cached_tokens(client: AsyncOpenAI) -> None:
    """A prompt seen before reports its tokens as cached, like a prefix cache would."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "cache me please"}]
    first = await client.chat.completions.create(model="mock", messages=messages)
    second = await client.chat.completions.create(model="mock", messages=messages)
    assert first.usage and first.usage.prompt_tokens_details
    assert second.usage and second.usage.prompt_tokens_details
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert second.usage.prompt_tokens_details.cached_tokens == 3


async def test_error_rate_spreads_errors_evenly(
    mock: MockOpenAIServer, http: aiohttp.ClientSession
) -> None:
    """Rate 0.5 fails every second request, with the configured status."""
    mock.error_status, mock.error_rate = 500, 0.5
    statuses = []
    for _ in range(4):
        async with http.post("/v1/chat/completions", json=CHAT) as response:
            statuses.append(response.status)
    assert statuses == [200, 500, 200, 500]


async def test_invalid_request_names_the_parameter(
    mock: MockOpenAIServer, http: aiohttp.ClientSession
) -> None:
    """Bad input is a 400 whose OpenAI error names the parameter; unknown routes are 404."""
    async with http.post("/v1/chat/completions", json={"model": "mock"}) as response:
        assert response.status == 400
        assert (await response.json())["error"]["param"] == "messages"
    async with http.post("/v1/chat/completions", data=b"{nope") as response:
        assert response.status == 400
    async with http.get("/v1/nothing") as response:
        assert response.status == 404
    async with http.get("/v1/chat/completions") as response:
        assert response.status == 405


async def test_strict_models_rejects_other_models(
    mock: MockOpenAIServer, http: aiohttp.ClientSession
) -> None:
    """With strict_models, an unlisted model is a 404 model_not_found naming `model`."""
    mock.strict_models = True
    async with http.post("/v1/chat/completions", json={**CHAT, "model": "other"}) as response:
        assert response.status == 404
        error = (await response.json())["error"]
    assert (error["code"], error["param"]) == ("model_not_found", "model")


async def test_records_last_request(mock: MockOpenAIServer, http: aiohttp.ClientSession) -> None:
    """The last POST's headers and body are kept; probes do not overwrite them."""
    headers = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    async with http.post("/v1/chat/completions", json=CHAT, headers=headers) as response:
        await response.read()
    async with http.get("/health") as response:
        assert response.status == 200
    assert mock.last_headers["traceparent"] == headers["traceparent"]
    assert b'"Tell me a story"' in mock.last_body
    assert mock.requests == 1


async def test_keep_alive_reuses_one_connection(
    mock: MockOpenAIServer, http: aiohttp.ClientSession
) -> None:
    """Sequential requests, streamed or not, share one kept-alive connection."""
    for stream in (False, True, False, True):
        async with http.post("/v1/chat/completions", json={**CHAT, "stream": stream}) as r:
            assert r.status == 200
            await r.read()
    assert mock.connections == 1


async def test_pipelined_requests_are_answered_in_order(mock: MockOpenAIServer) -> None:
    """Requests sent back to back on one connection get their answers in order."""
    body = b'{"model": "mock", "prompt": "p", "stream": true}'
    request = (
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    closing = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reader, writer = await asyncio.open_connection(mock.host, mock.port)
    writer.write(request + request + closing)
    raw = await reader.read()  # until the server closes after the last answer
    writer.close()
    assert raw.count(b"HTTP/1.1 200 OK") == 3
    assert raw.count(b"data: [DONE]") == 2
    assert raw.endswith(b"\r\n\r\n")  # the health answer, with its empty body, comes last
    assert raw.rindex(b"Content-Type: text/plain") > raw.rindex(b"data: [DONE]")


async def test_client_leaving_mid_stream_is_counted(
    mock: MockOpenAIServer, http: aiohttp.ClientSession
) -> None:
    """A client that closes the connection mid-stream shows up in `disconnects`."""
    mock.itl = 3600.0  # the second token never comes while the test runs
    response = await http.post("/v1/chat/completions", json={**CHAT, "stream": True})
    assert b"data: " in await response.content.readline()
    response.close()
    async with asyncio.timeout(30):
        await mock.wait_for_disconnects(1)
    assert mock.disconnects == 1


async def test_embeddings_honour_dimensions(lenient_client: AsyncOpenAI) -> None:
    """`dimensions` shortens each vector to its leading values, normalized again; more than
    the model has is a 400 naming it, as at vLLM."""
    full = await lenient_client.embeddings.create(model="mock", input="a", encoding_format="float")
    short = await lenient_client.embeddings.create(
        model="mock", input="a", encoding_format="float", dimensions=3
    )
    head = full.data[0].embedding[:3]
    norm = sum(v * v for v in head) ** 0.5
    assert short.data[0].embedding == pytest.approx([v / norm for v in head])
    with pytest.raises(BadRequestError) as info:
        await lenient_client.embeddings.create(model="mock", input="a", dimensions=99)
    assert info.value.param == "dimensions"
