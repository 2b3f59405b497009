"""Tests for the OpenAI-compatible HTTP backend against real servers on loopback."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from backends.base import EmbeddingCall, GenerationProbe, GenerationRequest
from backends.factory import build_replicas
from backends.fleet import Fleet
from backends.openai_http import OpenAIHTTPBackend
from backends.replica import Replica
from backends.settings import BackendSettings
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.answers import Endpoint, StreamChunk
from core.backend_errors import (
    BackendCutOff,
    BackendError,
    BackendOverloaded,
    BackendRejected,
    BackendUnavailable,
)
from core.errors import DeadlineExceeded
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.request_parsing import parse_request
from standin.openai.server import MockOpenAIServer

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def chat(raw: bytes | None = None, **fields: Any) -> GenerationRequest:
    body = {"model": "mock", "messages": [{"role": "user", "content": "Hi there"}], **fields}
    valid = orjson.dumps(body)
    parsed = parse_request(valid, ChatCompletionRequest)
    return GenerationRequest("chat", parsed, raw or valid, "req-1", {"traceparent": TRACEPARENT})


def completion(**fields: Any) -> GenerationRequest:
    raw = orjson.dumps({"model": "mock", "prompt": "Once upon a time", **fields})
    return GenerationRequest("completion", parse_request(raw, CompletionRequest), raw, "req-2")


def embedding(**fields: Any) -> EmbeddingCall:
    raw = orjson.dumps({"model": "mock", "input": ["one", "two", "three"], **fields})
    return EmbeddingCall(parse_request(raw, EmbeddingRequest), raw, "req-3")


def soon() -> Deadline:
    return Deadline.after(60, "total")


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [chunk async for chunk in stream]


def texts(chunks: list[StreamChunk]) -> dict[int, str]:
    out: dict[int, str] = {}
    for chunk in chunks:
        for delta in chunk.deltas:
            out[delta.index] = out.get(delta.index, "") + delta.text
    return out


@pytest.fixture
async def mock() -> AsyncIterator[MockOpenAIServer]:
    server = MockOpenAIServer(output_tokens=5)
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def backend(mock: MockOpenAIServer) -> AsyncIterator[OpenAIHTTPBackend]:
    backend = OpenAIHTTPBackend(mock.url, model="mock", max_connections=8)
    await backend.start()
    yield backend
    await backend.aclose()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def odd_server() -> AsyncIterator[Callable[[dict[str, Handler]], Awaitable[str]]]:
    """Starts an aiohttp server with the given routes; returns its /v1 base URL."""
    runners: list[web.AppRunner] = []

    async def start(routes: dict[str, Handler]) -> str:
        app = web.Application()
        for path, handler in routes.items():
            app.router.add_route("*", path, handler)
        runner = web.AppRunner(app)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}/v1"

    yield start
    for runner in runners:
        await runner.cleanup()


async def test_complete_chat(backend: OpenAIHTTPBackend) -> None:
    """A chat answer decodes into one choice with its text, finish reason and usage."""
    answer = await backend.complete(chat(), soon())
    assert len(answer.choices) == 1
    assert len(answer.choices[0].text.split()) == 5
    assert answer.choices[0].finish_reason == "stop"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (2, 5)
    assert answer.system_fingerprint == "fp_mock"


async def test_complete_text_with_two_choices_and_cached_tokens(
    backend: OpenAIHTTPBackend,
) -> None:
    """n=2 gives two different choices; a repeated prompt reports cached tokens."""
    first = await backend.complete(completion(n=2, max_tokens=3), soon())
    second = await backend.complete(completion(n=2, max_tokens=3), soon())
    assert [c.index for c in first.choices] == [0, 1]
    assert first.choices[0].text != first.choices[1].text
    assert {c.finish_reason for c in first.choices} == {"length"}
    assert (first.usage.completion_tokens, first.usage.cached_tokens) == (6, 0)
    assert second.usage.cached_tokens == second.usage.prompt_tokens == 4


async def test_stream_chat_matches_complete(backend: OpenAIHTTPBackend) -> None:
    """Streamed deltas join into the non-streaming text; the role-only event is skipped."""
    whole = await backend.complete(chat(), soon())
    chunks = await collect(backend.stream(chat(stream=True), soon()))
    assert texts(chunks) == {0: whole.choices[0].text}
    assert all(chunk.deltas for chunk in chunks)
    finishes = [d.finish_reason for c in chunks for d in c.deltas if d.finish_reason]
    assert finishes == ["stop"]
    assert sum(d.token_count for c in chunks for d in c.deltas) == 5


async def test_a_stream_keeps_the_upstreams_fingerprint(backend: OpenAIHTTPBackend) -> None:
    """Streamed chunks carry the upstream's `system_fingerprint`, as a whole answer does."""
    chunks = await collect(backend.stream(chat(stream=True), soon()))
    assert {chunk.system_fingerprint for chunk in chunks} == {"fp_mock"}


async def test_stream_completions_n2_with_usage(backend: OpenAIHTTPBackend) -> None:
    """Interleaved choices stay apart; include_usage puts usage on the last chunk."""
    request = completion(n=2, stream=True, stream_options={"include_usage": True})
    whole = await backend.complete(completion(n=2), soon())
    chunks = await collect(backend.stream(request, soon()))
    assert texts(chunks) == {c.index: c.text for c in whole.choices}
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens == 10
    assert all(chunk.usage is None for chunk in chunks[:-1])


async def test_logprobs_and_tool_calls_pass_through(backend: OpenAIHTTPBackend) -> None:
    """Raw logprobs and tool calls reach the caller unchanged, streamed or not."""
    chunks = await collect(backend.stream(chat(stream=True, logprobs=True), soon()))
    tokens = [d.logprobs["content"][0]["token"] for c in chunks for d in c.deltas if d.logprobs]
    assert "".join(tokens) == texts(chunks)[0]
    tool = {"type": "function", "function": {"name": "lookup"}}
    answer = await backend.complete(chat(tools=[tool], tool_choice="required"), soon())
    assert answer.choices[0].tool_calls is not None
    assert answer.choices[0].tool_calls[0]["function"]["name"] == "lookup"
    streamed = await collect(
        backend.stream(chat(stream=True, tools=[tool], tool_choice="required"), soon())
    )
    arguments = "".join(
        call["function"].get("arguments", "")
        for c in streamed
        for d in c.deltas
        for call in d.tool_calls or ()
    )
    assert arguments == answer.choices[0].tool_calls[0]["function"]["arguments"]
    assert streamed[-1].deltas[-1].finish_reason == "tool_calls"


async def test_embed_floats_and_base64_agree(backend: OpenAIHTTPBackend) -> None:
    """Embeddings come back in input order; base64 vectors are decoded to the same floats."""
    floats = await backend.embed(embedding(), soon())
    decoded = await backend.embed(embedding(encoding_format="base64"), soon())
    assert len(floats.vectors) == 3 and floats.prompt_tokens == 3
    for left, right in zip(floats.vectors, decoded.vectors, strict=True):
        assert left == pytest.approx(right, abs=1e-6)


async def test_forwards_raw_body_and_trace_headers(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """The client's bytes go upstream unchanged, with the trace context and a JSON type."""
    raw = b'{"model":"mock",  "messages":[{"role":"user","content":"Hi there"}]}'
    await backend.complete(chat(raw=raw), soon())
    assert mock.last_body == raw
    assert mock.last_headers["traceparent"] == TRACEPARENT
    assert mock.last_headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    ("raw", "model"),
    [
        (b'{"model":"mock", "stream":true, "messages":[{"role":"user","content":"Hi"}]}', "mock"),
        (b'{"model":"mock","stream":true,"stream_options":{"include_usage":false},'
         b'"messages":[{"role":"user","content":"stream_options"}]}', "mock"),
        (b'{"model":"mock","stream":true,"messages":[{"role":"user","content":"Hi"}]}', "other"),
    ],
)  # fmt: skip
async def test_a_stream_asks_the_upstream_for_its_usage(
    mock: MockOpenAIServer, raw: bytes, model: str
) -> None:
    """A stream whose client did not ask for its usage asks the upstream for it, the body
    otherwise as the client sent it: the usage comes, on the last chunk."""
    backend = OpenAIHTTPBackend(mock.url, model=model)
    await backend.start()
    try:
        chunks = await collect(backend.stream(chat(raw=raw), soon()))
    finally:
        await backend.aclose()
    sent, asked = orjson.loads(mock.last_body), orjson.loads(raw)
    assert sent == {**asked, "model": model, "stream_options": {"include_usage": True}}
    usage = chunks[-1].usage
    assert usage is not None and usage.completion_tokens == 5
    assert all(chunk.usage is None for chunk in chunks[:-1])


async def test_a_stream_asking_for_its_usage_goes_unchanged(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """The client's bytes go upstream unchanged when the client asked for the usage itself,
    as they do for a whole answer."""
    request = chat(stream=True, stream_options={"include_usage": True})
    raw = b" " + request.raw  # bytes no serializer would write
    await collect(backend.stream(GenerationRequest("chat", request.body, raw, "r"), soon()))
    assert mock.last_body == raw


async def test_a_stream_teaches_its_replica_though_its_client_did_not_ask_for_usage(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """A clean stream whose client did not ask for its usage still teaches its replica's
    service estimate and the model's output lengths, by the usage the upstream sent."""
    replica = Replica("mock", backend, healthy=True)
    fleet = Fleet([replica], retry_attempts=0, health_interval_s=60, health_timeout_s=1)
    budgets = ClassBudgets(total_s=60.0, ttft_s=60.0, admission_s=60.0, stall_s=60.0)
    budget = RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())
    opened = await fleet.open_stream(chat(stream=True), budget)
    chunks = [chunk async for chunk in opened.iterate()]
    assert texts(chunks)[0] and replica.uncached_estimate.evidence() > 0
    assert fleet.lengths("mock").value() == 5


async def test_the_url_password_is_sent_as_a_bearer_key(mock: MockOpenAIServer) -> None:
    """`http://user:KEY@host/v1` sends `Authorization: Bearer KEY`; the URL shown drops it."""
    url = mock.url.replace("http://", "http://user:sk-upstream@")
    settings = BackendSettings.from_env({"GATEWAY_BACKENDS": f"mock={url}"})
    (replica,) = build_replicas(settings)
    assert replica.url == mock.url.rstrip("/")
    await replica.backend.start()
    try:
        await replica.backend.complete(chat(), soon())
    finally:
        await replica.backend.aclose()
    assert mock.last_headers["authorization"] == "Bearer sk-upstream"


async def test_rewrites_the_model_for_a_differently_named_backend(
    mock: MockOpenAIServer,
) -> None:
    """A backend serving another model name gets requests that name its model."""
    backend = OpenAIHTTPBackend(mock.url, model="served-name")
    await backend.start()
    try:
        await backend.complete(chat(), soon())
    finally:
        await backend.aclose()
    assert orjson.loads(mock.last_body)["model"] == "served-name"


@pytest.mark.parametrize("sent", [{}, {"max_tokens": None}])
async def test_a_completion_without_max_tokens_is_sent_the_default(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend, sent: dict[str, Any]
) -> None:
    """A text completion that sets no max_tokens (or null) says 16 upstream, OpenAI's and
    vLLM's default, whatever the server's own; one that sets it is forwarded as it is."""
    await backend.complete(completion(**sent), soon())
    assert orjson.loads(mock.last_body)["max_tokens"] == 16
    request = completion(max_tokens=3)
    await backend.complete(request, soon())
    assert mock.last_body == request.raw


async def test_a_chat_with_two_different_caps_is_sent_the_one_it_was_judged_by(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """A chat that sets `max_tokens` and `max_completion_tokens` apart is sent the second in
    both fields (servers differ in which one wins; the gateway keyed and charged by it); one
    field, or both alike, is forwarded as it is."""
    await backend.complete(chat(max_tokens=3, max_completion_tokens=10), soon())
    sent = orjson.loads(mock.last_body)
    assert (sent["max_tokens"], sent["max_completion_tokens"]) == (10, 10)
    for request in (chat(max_tokens=3), chat(max_tokens=4, max_completion_tokens=4)):
        await backend.complete(request, soon())
        assert mock.last_body == request.raw


async def test_upstream_400_is_rejected_with_message_and_param(
    backend: OpenAIHTTPBackend,
) -> None:
    """An upstream 400 becomes BackendRejected carrying its message and parameter."""
    with pytest.raises(BackendRejected) as info:
        await backend.complete(chat(raw=b'{"model": "mock", "messages": []}'), soon())
    assert info.value.param == "messages"
    assert "messages must be a non-empty list" in info.value.message


@pytest.mark.parametrize("status", [404, 422])
async def test_upstream_invalid_statuses_are_rejected(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend, status: int
) -> None:
    """404 and 422 from upstream are the client's fault too."""
    mock.error_status, mock.error_rate = status, 1.0
    with pytest.raises(BackendRejected, match=f"Injected HTTP {status}"):
        await backend.complete(chat(), soon())


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_upstream_failures_are_retryable_errors(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend, status: int
) -> None:
    """429 and 5xx become retryable BackendErrors, for streams before their first chunk too."""
    mock.error_status, mock.error_rate = status, 1.0
    with pytest.raises(BackendError) as info:
        await backend.complete(chat(), soon())
    assert info.value.retryable and f"HTTP {status}" in info.value.message
    with pytest.raises(BackendError):
        await collect(backend.stream(chat(stream=True), soon()))


async def test_connection_refused_is_unavailable() -> None:
    """A server that is not there is a retryable BackendUnavailable."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = OpenAIHTTPBackend(f"http://127.0.0.1:{port}/v1", model="mock")
    await backend.start()
    try:
        with pytest.raises(BackendUnavailable) as info:
            await backend.complete(chat(), soon())
        assert info.value.retryable
        health = await backend.health(5.0)
        assert not health.healthy
    finally:
        await backend.aclose()


async def test_deadline_fires_while_waiting(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """A slow answer raises DeadlineExceeded naming the deadline's stage."""
    mock.ttft = 3600.0
    with pytest.raises(DeadlineExceeded) as info:
        await backend.complete(chat(), Deadline.after(0.2, "ttft"))
    assert info.value.stage == "ttft"
    with pytest.raises(DeadlineExceeded):
        await collect(backend.stream(chat(stream=True), Deadline.after(0.2, "ttft")))


async def test_deadline_fires_mid_stream(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """A stream that stalls after its first token raises DeadlineExceeded."""
    mock.itl = 3600.0
    stream = backend.stream(chat(stream=True), Deadline.after(0.5, "total"))
    assert (await anext(stream)).deltas
    with pytest.raises(DeadlineExceeded) as info:
        await anext(stream)
    assert info.value.stage == "total"


async def test_expired_deadline_sends_nothing(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """An already expired deadline fails at once without reaching the server."""
    with pytest.raises(DeadlineExceeded):
        await backend.complete(chat(), Deadline.after(-1, "total"))
    assert mock.requests == 0


async def test_closing_the_stream_drops_the_upstream_request(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """Closing the iterator early closes the connection, which the server sees."""
    mock.itl = 3600.0
    stream = backend.stream(chat(stream=True), soon())
    first = await anext(stream)
    assert first.deltas[0].text
    await stream.aclose()
    async with asyncio.timeout(30):
        await mock.wait_for_disconnects(1)


async def test_streams_and_answers_reuse_connections(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """Finished streams and answers return their connection to the pool."""
    for _ in range(3):
        await collect(backend.stream(chat(stream=True), soon()))
        await backend.complete(chat(), soon())
    assert mock.connections == 1


async def test_connection_is_pooled_when_the_body_ends_after_done(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """A stream whose HTTP body ends only after [DONE] was read still reuses its connection."""
    body_may_end = asyncio.Event()
    client_ports: list[int] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        client_ports.append(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
        if not (await request.json()).get("stream"):
            return web.json_response({"choices": [{"index": 0, "text": "x"}]})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"choices": [{"index": 0, "text": "x"}]}\n\n')
        await response.write(b"data: [DONE]\n\n")
        await body_may_end.wait()
        await response.write_eof()
        return response

    url = await odd_server({"/v1/completions": answer})
    # One connection at most: the next request waits for it to be pooled or closed.
    backend = OpenAIHTTPBackend(url, model="mock", max_connections=1)
    await backend.start()
    try:
        chunks = await collect(backend.stream(completion(stream=True), soon()))
        assert texts(chunks) == {0: "x"}
        body_may_end.set()
        await backend.complete(completion(), soon())
    finally:
        await backend.aclose()
    assert client_ports[0] == client_ports[1]


async def test_mid_stream_error_event_raises(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """An error event after some output raises BackendError after those chunks' deltas."""
    mock.stream_error_after = 2
    chunks: list[StreamChunk] = []

    async def drain() -> None:
        async for chunk in backend.stream(chat(stream=True), soon()):
            chunks.append(chunk)

    with pytest.raises(BackendError, match="mid-stream"):
        await drain()
    assert [d.index for c in chunks for d in c.deltas if d.text] == [0, 0]


async def test_dropped_connection_mid_stream_is_cut_off(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """A connection lost mid-answer is an answer cut off, not an unreachable replica."""
    mock.drop_after = 2
    with pytest.raises(BackendCutOff) as info:
        await collect(backend.stream(chat(stream=True), soon()))
    assert not isinstance(info.value, BackendUnavailable)


async def test_health_uses_health_route(backend: OpenAIHTTPBackend) -> None:
    """A server with /health (vLLM, the mock) is healthy when it answers 200."""
    health = await backend.health(5.0)
    assert health.healthy, health.detail


async def test_health_falls_back_to_models(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """Without /health the model list decides, and a missing model is unhealthy."""

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "other", "object": "model"}]})

    url = await odd_server({"/v1/models": models})
    for model, healthy in (("other", True), ("mock", False)):
        backend = OpenAIHTTPBackend(url, model=model)
        await backend.start()
        try:
            assert (await backend.health(5.0)).healthy is healthy
            assert (await backend.health(5.0)).healthy is healthy  # the learned route
        finally:
            await backend.aclose()


async def test_a_health_probe_without_answer_is_missed_and_an_error_is_not(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """No answer within the probe's timeout is a missed probe (only several in a row eject a
    healthy replica); an answer that says unhealthy is not missed."""
    never = asyncio.Event()

    async def silent(request: web.Request) -> web.Response:
        await never.wait()
        return web.Response(status=200)

    async def failing(request: web.Request) -> web.Response:
        return web.Response(status=500)

    for handler, missed in ((silent, True), (failing, False)):
        backend = OpenAIHTTPBackend(await odd_server({"/health": handler}), model="mock")
        await backend.start()
        try:
            health = await backend.health(0.2)
            assert not health.healthy and health.missed is missed, health.detail
        finally:
            await backend.aclose()
    never.set()  # the server's cleanup waits for its handlers


async def test_health_before_start_and_after_failure_never_raises(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """Probes report unhealthy instead of raising: not started, 503, or garbage."""

    async def unavailable(request: web.Request) -> web.Response:
        return web.Response(status=503)

    async def garbage(request: web.Request) -> web.Response:
        return web.Response(status=200, body=b"<html>")

    url = await odd_server({"/health": unavailable})
    backend = OpenAIHTTPBackend(url, model="mock")
    assert not (await backend.health(5.0)).healthy
    await backend.start()
    try:
        health = await backend.health(5.0)
        assert not health.healthy and "503" in health.detail
    finally:
        await backend.aclose()
    url = await odd_server({"/v1/models": garbage})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        assert not (await backend.health(5.0)).healthy
    finally:
        await backend.aclose()


async def test_malformed_answers_are_backend_errors(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """Unparseable JSON or SSE from upstream raises BackendError, not a crash."""

    async def garbage(request: web.Request) -> web.StreamResponse:
        if (await request.json()).get("stream"):
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b"data: {not json\n\n")
            return response
        return web.Response(body=b'{"choices": "nope"}', content_type="application/json")

    url = await odd_server({"/v1/chat/completions": garbage})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        with pytest.raises(BackendError, match="malformed"):
            await backend.complete(chat(), soon())
        with pytest.raises(BackendError, match="malformed"):
            await collect(backend.stream(chat(stream=True), soon()))
    finally:
        await backend.aclose()


async def test_fastapi_422_names_the_parameter(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """A FastAPI validation error (vLLM's 422) becomes BackendRejected with its location."""

    async def invalid(request: web.Request) -> web.Response:
        detail = [{"loc": ["body", "temperature"], "msg": "too hot", "type": "value_error"}]
        return web.json_response({"detail": detail}, status=422)

    url = await odd_server({"/v1/chat/completions": invalid})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        with pytest.raises(BackendRejected) as info:
            await backend.complete(chat(), soon())
    finally:
        await backend.aclose()
    assert info.value.param == "temperature"
    assert "too hot" in info.value.message


async def test_not_started_backend_is_unavailable() -> None:
    """Calls before start() fail as unavailable rather than crashing."""
    backend = OpenAIHTTPBackend("http://127.0.0.1:9/v1", model="mock")
    with pytest.raises(BackendUnavailable):
        await backend.complete(chat(), soon())


async def test_events_that_arrive_together_are_one_chunk(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """Events in one network read become one chunk holding each event's delta in order."""
    events = b"".join(
        b'data: {"choices": [{"index": 0, "text": "%s"}]}\n\n' % word for word in (b"a", b"b")
    )
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}\n\n'

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(events + usage + b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    backend = OpenAIHTTPBackend(await odd_server({"/v1/completions": answer}), model="mock")
    await backend.start()
    try:
        chunks = await collect(backend.stream(completion(stream=True), soon()))
    finally:
        await backend.aclose()
    assert len(chunks) == 1
    assert [d.text for d in chunks[0].deltas] == ["a", "b"]
    assert chunks[0].usage is not None and chunks[0].usage.completion_tokens == 2


@pytest.mark.parametrize(
    ("endpoint", "path"), [("chat", b"/chat/completions"), ("completion", b"/completions")]
)
async def test_the_generation_probe_asks_one_token_where_the_request_went(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend, endpoint: Endpoint, path: bytes
) -> None:
    """The probe is one `max_tokens: 1` request on the waiting request's endpoint, naming
    the served model; an answer within the timeout is a pass."""
    assert isinstance(backend, GenerationProbe)
    assert await backend.probe_generation(endpoint, 10.0)
    assert mock.last_request is not None and mock.last_request.path.endswith(path)
    sent = orjson.loads(mock.last_request.body)
    assert (sent["model"], sent["max_tokens"], sent.get("stream")) == ("mock", 1, None)


async def test_a_server_that_never_answers_fails_the_generation_probe(
    mock: MockOpenAIServer, backend: OpenAIHTTPBackend
) -> None:
    """No answer within the timeout fails the probe, while health, on a connection of its
    own, still passes; an error answer passes it (a broken server is not a hung one)."""
    mock.ttft = 3600.0
    probe = asyncio.create_task(backend.probe_generation("chat", 0.5))
    assert (await backend.health(5.0)).healthy
    assert not await probe
    mock.ttft, mock.error_status, mock.error_rate = 0.0, 500, 1.0
    assert await backend.probe_generation("chat", 10.0)


async def test_an_error_typed_event_ends_the_stream_with_its_error(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """An `event: error` (its data the error object itself) ends the stream with the error it
    reports, after the deltas before it; nothing after it is read as output."""
    events = [
        b'data: {"choices": [{"index": 0, "text": "a"}]}\n\n',
        b'event: error\ndata: {"message": "overloaded", "code": 503}\n\n',
        b'data: {"choices": [{"index": 0, "text": "b"}]}\n\n',
        b"data: [DONE]\n\n",
    ]

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(events))
        return response

    backend = OpenAIHTTPBackend(await odd_server({"/v1/completions": answer}), model="mock")
    await backend.start()
    chunks: list[StreamChunk] = []

    async def drain() -> None:
        async for chunk in backend.stream(completion(stream=True), soon()):
            chunks.append(chunk)

    try:
        with pytest.raises(BackendOverloaded, match="overloaded"):
            await drain()
    finally:
        await backend.aclose()
    assert texts(chunks) == {0: "a"}


async def test_a_repeated_finish_chunk_is_passed_on_once(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """An upstream sending its finish chunk twice gives one finish: a client counting
    finished choices (or appending a stop) would see two."""
    finish = b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    hello = b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(hello + finish)
        await response.write(finish + b"data: [DONE]\n\n")
        return response

    backend = OpenAIHTTPBackend(await odd_server({"/v1/chat/completions": answer}), model="mock")
    await backend.start()
    try:
        chunks = await collect(backend.stream(chat(stream=True), soon()))
    finally:
        await backend.aclose()
    finishes = [d.finish_reason for c in chunks for d in c.deltas if d.finish_reason]
    assert finishes == ["stop"] and texts(chunks) == {0: "hi"}


def _sse_then_close(*events: bytes, drop: bool = False) -> Handler:
    """A stream of these events that ends without `[DONE]`: its body ends, or with `drop` its
    connection is closed."""

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(events))
        if drop:
            assert request.transport is not None
            request.transport.close()
        return response

    return answer


def _choice(index: int, content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    choice = {"index": index, "delta": delta, "finish_reason": finish}
    return b"data: " + orjson.dumps({"choices": [choice]}) + b"\n\n"


USAGE_EVENT = b'data: {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}}\n\n'


@pytest.mark.parametrize("drop", [False, True])
async def test_a_whole_stream_without_done_ends_as_complete(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
    caplog: pytest.LogCaptureFixture,
    drop: bool,
) -> None:
    """A stream whose every choice finished (and whose usage came, which the client asked
    for) is complete though `[DONE]` never comes, its body ending or its connection closed:
    it ends as any other, and the log says so once for the replica."""
    caplog.set_level(logging.WARNING)
    events = (_choice(0, "hi"), _choice(1, "yo"), _choice(0, finish="stop"))
    answer = _sse_then_close(*events, _choice(1, finish="length"), USAGE_EVENT, drop=drop)
    url = await odd_server({"/v1/chat/completions": answer})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    request = chat(stream=True, n=2, stream_options={"include_usage": True})
    try:
        for _ in range(2):
            chunks = await collect(backend.stream(request, soon()))
            assert texts(chunks) == {0: "hi", 1: "yo"}
            assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 2
    finally:
        await backend.aclose()
    told = [r for r in caplog.records if "without [DONE]" in r.getMessage()]
    assert len(told) == 1 and url in told[0].getMessage() and told[0].levelno == logging.WARNING


@pytest.mark.parametrize(
    ("events", "fields"),
    [
        ((_choice(0, "hi"),), {}),  # no finish
        ((_choice(0, "hi"), _choice(0, finish="stop")), {"n": 2}),  # one choice of two
        (  # the usage the client asked for
            (_choice(0, "hi"), _choice(0, finish="stop")),
            {"stream_options": {"include_usage": True}},
        ),
    ],
)
@pytest.mark.parametrize("drop", [False, True])
async def test_a_stream_ended_before_its_whole_answer_is_cut_off(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
    events: tuple[bytes, ...],
    fields: dict[str, Any],
    drop: bool,
) -> None:
    """A stream that ends without `[DONE]` before every choice finished, or before the usage
    the client asked for, was cut off: the replica answered, so it is not unreachable."""
    url = await odd_server({"/v1/chat/completions": _sse_then_close(*events, drop=drop)})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        with pytest.raises(BackendCutOff) as info:
            await collect(backend.stream(chat(stream=True, **fields), soon()))
    finally:
        await backend.aclose()
    assert not isinstance(info.value, BackendUnavailable) and info.value.replica == url


async def test_a_whole_answer_cut_short_is_cut_off(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """A body shorter than its Content-Length is an answer cut off, not an unreachable
    replica."""

    async def cut(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Length": "300"})
        response.content_type = "application/json"
        await response.prepare(request)
        await response.write(b'{"choices": [')
        assert request.transport is not None
        request.transport.close()
        return response

    backend = OpenAIHTTPBackend(await odd_server({"/v1/chat/completions": cut}), model="mock")
    await backend.start()
    try:
        with pytest.raises(BackendCutOff, match="broke off") as info:
            await backend.complete(chat(), soon())
    finally:
        await backend.aclose()
    assert not isinstance(info.value, BackendUnavailable)


def _streams_of(answers: list[list[bytes]], finish: str) -> Handler:
    """A handler that answers each request with the next list of events (each a delta of
    choice 0), then a finish and `[DONE]`."""

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for delta in answers.pop(0):
            event = b'{"choices": [{"index": 0, "delta": %s}]}' % delta
            await response.write(b"data: " + event + b"\n\n")
        end = b'{"choices": [{"index": 0, "delta": {}, "finish_reason": "%s"}]}' % finish.encode()
        await response.write(b"data: " + end + b"\n\ndata: [DONE]\n\n")
        await response.write_eof()
        return response

    return answer


async def test_an_emoji_cut_in_tool_call_arguments_streams_whole(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """The same cut inside a tool call's argument fragments: the arguments arrive whole, the
    emoji joined (it was U+FFFD in each fragment)."""
    opened = b'{\\"q\\": \\"'
    cuts = [(opened + b"\xf0\x9f", b'\x98\x80\\"}'), (opened + b"\\ud83d", b'\\ude00\\"}')]
    head = b'{"index": 0, "id": "c1", "type": "function", "function": {"name": "f", '
    answers = [
        [
            b'{"tool_calls": [%s"arguments": "%s"}}]}' % (head, first),
            b'{"tool_calls": [{"index": 0, "function": {"arguments": "%s"}}]}' % second,
        ]
        for first, second in cuts
    ]
    url = await odd_server({"/v1/chat/completions": _streams_of(answers, "tool_calls")})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        for _ in range(2):
            chunks = await collect(backend.stream(chat(stream=True), soon()))
            fragments = [
                call["function"].get("arguments", "")
                for chunk in chunks
                for delta in chunk.deltas
                for call in delta.tool_calls or ()
            ]
            assert "".join(fragments) == '{"q": "\U0001f600"}'
    finally:
        await backend.aclose()


async def test_an_emoji_cut_between_events_streams_whole(
    odd_server: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """A server that sends an emoji's UTF-8 bytes across two events (or its UTF-16 halves)
    streams it whole, not as a malformed answer."""
    cuts = [(b"Hi \xf0\x9f", b"\x98\x80!"), (b"Hi \\ud83d", b"\\ude00!")]
    answers = [[b'{"content": "%s"}' % text for text in cut] for cut in cuts]
    url = await odd_server({"/v1/chat/completions": _streams_of(answers, "stop")})
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        for _ in range(2):
            chunks = await collect(backend.stream(chat(stream=True), soon()))
            assert texts(chunks) == {0: "Hi \U0001f600!"}
    finally:
        await backend.aclose()
