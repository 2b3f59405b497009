"""What a client and the log are told when an OpenAI-compatible upstream fails, through the
official client over a gateway on loopback."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping

import aiohttp
import openai
import orjson
import pytest
from aiohttp import web
from openai.types.chat import ChatCompletionMessageParam

from backends.factory import build_backend
from backends.outliers import OutlierPolicy
from backends.replica import Replica
from backends.settings import BackendSettings
from gateway.app import create_app
from gateway.settings import Settings
from tests.support.asgi_server import serving
from tests.support.scripted_upstream import Handler, gateway_over, json_answer, upstream

HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]
SLOW_DOWN = {"error": {"message": "slow down", "type": "rate_limit_error"}}


async def test_an_upstream_retry_after_is_relayed_no_longer_than_the_gateway_rests() -> None:
    """An upstream asking for a day's wait is relayed as GATEWAY_OUTLIER_MAX_EJECTION_S,
    the longest the gateway itself keeps work from that replica, in both headers."""
    settings = Settings(backends=BackendSettings(outliers=OutlierPolicy(max_ejection_s=60)))
    answer = json_answer(SLOW_DOWN, status=429, headers={"Retry-After": "86400"})
    async with gateway_over({"/v1/chat/completions": answer}, settings) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.RateLimitError) as info:
            await client.chat.completions.create(model="m", messages=HI)
    headers = info.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("60", "60000")


async def test_a_spent_upstream_quota_is_told_as_openai_tells_it_and_not_retried() -> None:
    """OpenAI's 429 `insufficient_quota` reaches the official client as the same error,
    without a Retry-After promising a recovery, and with `x-should-retry: false`, so the
    client (which retries every other 429) does not send it again in vain."""
    quota = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    asked = json_answer(quota, status=429, headers={"Retry-After": "20"})
    calls = 0

    async def answer(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return await asked(request)

    async with gateway_over({"/v1/chat/completions": answer}) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=2)
        with pytest.raises(openai.RateLimitError) as info:
            await client.chat.completions.create(model="m", messages=HI)
    error, headers = info.value, info.value.response.headers
    assert (error.code, error.type, calls) == ("insufficient_quota", "insufficient_quota", 1)
    assert headers["x-should-retry"] == "false" and "retry-after" not in headers
    assert "billing" not in error.message  # the upstream account's business, in the log


def _sse(*events: bytes) -> Handler:
    """A handler that streams these SSE events, then `[DONE]`."""

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(events) + b"data: [DONE]\n\n")
        return response

    return answer


def _delta(content: str | None = None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + orjson.dumps({"id": "up", "choices": [choice]}) + b"\n\n"


async def test_an_upstream_error_event_ends_the_stream_with_the_gateways_error() -> None:
    """An upstream `event: error` mid-stream is never skipped: the client gets the text
    before it, then the gateway's error event (which the SDK raises), and nothing after."""
    error = b'event: error\ndata: {"message": "bad things", "code": 400}\n\n'
    answer = _sse(_delta("Hello"), error, _delta(" world"), _delta(finish="stop"))
    async with gateway_over({"/v1/chat/completions": answer}) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        stream = await client.chat.completions.create(model="m", messages=HI, stream=True)
        text: list[str] = []

        async def drain() -> None:
            async for chunk in stream:
                text.extend(c.delta.content or "" for c in chunk.choices)

        with pytest.raises(openai.APIError, match="bad things"):
            await drain()
    assert "".join(text) == "Hello"


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("gateway")]


UPSTREAM_ERROR = {"error": {"message": "internal upstream error at 10.9.9.9", "code": None}}


async def test_an_error_in_a_200_answer_is_logged_as_the_upstreams_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An upstream's error sent with HTTP 200 (to a whole answer, or to a stream request as
    JSON) is a 502 that says the model server failed, not that it could not be reached; the
    log names the replica and the upstream's own words, which the client is not told."""
    caplog.set_level(logging.WARNING)
    routes = {"/v1/chat/completions": json_answer(UPSTREAM_ERROR)}
    async with gateway_over(routes) as (base_url, upstream_url):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        for stream in (False, True):
            with pytest.raises(openai.InternalServerError) as info:
                await client.chat.completions.create(model="m", messages=HI, stream=stream)
            assert (info.value.status_code, info.value.code) == (502, "backend_error")
            assert info.value.message.endswith("The model server failed to answer this request.")
    told = [m for m in _logged(caplog) if "internal upstream error at 10.9.9.9" in m]
    assert len(told) == 2 and all(upstream_url in m for m in told), _logged(caplog)


async def test_a_cut_answer_is_logged_with_its_replica(caplog: pytest.LogCaptureFixture) -> None:
    """A whole answer cut before its end is logged naming the replica that cut it."""
    caplog.set_level(logging.WARNING)
    async with gateway_over({"/v1/chat/completions": _cut_body}) as (base_url, upstream_url):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            await client.chat.completions.create(model="m", messages=HI)
    answered = [r.getMessage() for r in caplog.records if r.name == "gateway"]  # the 502's line
    assert any(f"replica {upstream_url}: " in m and "broke off" in m for m in answered), answered


async def test_a_mid_stream_error_is_logged_with_its_replica_and_words(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An upstream's error event after the first byte is logged with the replica's URL and the
    upstream's message; the client gets the gateway's error event."""
    caplog.set_level(logging.WARNING)
    error = b'data: {"error": {"message": "CUDA out of memory", "code": 500}}\n\n'
    answer = _sse(_delta("Hello"), error)
    async with gateway_over({"/v1/chat/completions": answer}) as (base_url, upstream_url):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        stream = await client.chat.completions.create(model="m", messages=HI, stream=True)

        async def drain() -> None:
            async for _ in stream:
                pass

        with pytest.raises(openai.APIError, match="failed to answer"):
            await drain()
    logged = _logged(caplog)
    assert any(upstream_url in m and "CUDA out of memory" in m for m in logged), logged


def _cut_after(*events: bytes) -> Handler:
    """A handler that streams these events, then ends its body without `[DONE]`."""

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(events))
        return response

    return answer


async def _events(session: aiohttp.ClientSession, url: str, body: object) -> list[bytes]:
    async with session.post(f"{url}/chat/completions", json=body) as response:
        assert response.status == 200
        return [e for e in (await response.read()).split(b"\n\n") if e]


async def _statuses(session: aiohttp.ClientSession, url: str, count: int) -> list[int]:
    statuses = []
    for _ in range(count):
        async with session.post(f"{url}/chat/completions", json=CHAT) as response:
            await response.read()
            statuses.append(response.status)
    return statuses


CHAT = {"model": "m", "messages": HI}
USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}\n\n'


async def test_a_whole_stream_without_done_ends_as_complete(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An upstream that sends every choice's finish (and the usage) and then ends without
    `[DONE]` gave the whole answer: the client's stream ends as any other, the replica stays
    in routing (its model's only one), and the log says so once for the replica."""
    caplog.set_level(logging.WARNING)
    answer = _cut_after(_delta("Hello"), _delta(finish="stop"), USAGE)
    async with (
        gateway_over({"/v1/chat/completions": answer}) as (base_url, upstream_url),
        aiohttp.ClientSession() as session,
    ):
        for _ in range(3):
            events = await _events(session, base_url, {**CHAT, "stream": True})
            assert events[-1] == b"data: [DONE]" and b'"finish_reason":"stop"' in events[-2]
            assert not any(b'"error"' in e for e in events), events
    told = [m for m in _logged(caplog) if "without [DONE]" in m]
    assert len(told) == 1 and upstream_url in told[0], _logged(caplog)
    assert not [m for m in _logged(caplog) if "ejected" in m or "failed" in m]


async def _cut_stream(request: web.Request) -> web.StreamResponse:
    """Half an answer (no finish), then the connection closes."""
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(_delta("Hel"))
    assert request.transport is not None
    request.transport.close()
    return response


async def _cut_body(request: web.Request) -> web.StreamResponse:
    """A body shorter than its Content-Length."""
    await request.read()
    response = web.StreamResponse(headers={"Content-Length": "300"})
    response.content_type = "application/json"
    await response.prepare(request)
    await response.write(b'{"choices": [')
    assert request.transport is not None
    request.transport.close()
    return response


ANSWER = {
    "choices": [{"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}


@pytest.mark.parametrize(
    ("cut", "stream"),
    [
        (_cut_after(_delta("Hello")), True),  # no finish, no [DONE]
        (_cut_stream, True),
        (_cut_body, False),
        (json_answer(ANSWER), True),  # JSON to a stream request
    ],
)
async def test_one_cut_answer_leaves_the_only_replica_serving(
    cut: Handler, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """One answer cut off (or JSON to a stream request) is a failure of that request only:
    the replica answered, so it is not taken for unreachable, and the model's only replica
    serves the next requests rather than a 503."""
    caplog.set_level(logging.WARNING)
    calls = 0

    async def answer(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        return await (cut if calls == 1 else json_answer(ANSWER))(request)

    async with (
        gateway_over({"/v1/chat/completions": answer}) as (base_url, _),
        aiohttp.ClientSession() as session,
    ):
        async with session.post(
            f"{base_url}/chat/completions", json={**CHAT, "stream": stream}
        ) as response:
            status, body = response.status, await response.read()
        assert status == 502 or b'"backend_error"' in body, (status, body)
        assert await _statuses(session, base_url, 5) == [200] * 5
    assert not [m for m in _logged(caplog) if "ejected" in m], _logged(caplog)


TOP_P = {
    "error": {
        "message": "Invalid 'top_p': must be <= 1",
        "type": "invalid_request_error",
        "param": "top_p",
        "code": "invalid_value",
    }
}


@pytest.mark.parametrize(
    ("answer_with", "stream"),
    [
        (json_answer(TOP_P), False),
        (json_answer(TOP_P), True),
        (_sse(b"data: " + orjson.dumps(TOP_P) + b"\n\n"), True),
    ],
    ids=["in place of the answer", "json to a stream", "first event"],
)
async def test_an_upstream_rejection_sent_with_200_is_the_clients_400_tried_once(
    answer_with: Handler, stream: bool
) -> None:
    """OpenAI's error object sent with HTTP 200 by one of two replicas is the client's 400
    naming the upstream's param and code, as with HTTP 400, and no other replica is asked."""
    calls: list[str] = []

    def counted(name: str) -> Mapping[str, Handler]:
        async def answer(request: web.Request) -> web.StreamResponse:
            calls.append(name)
            return await answer_with(request)

        return {"/v1/chat/completions": answer}

    settings = Settings()
    async with contextlib.AsyncExitStack() as stack:
        urls = [await stack.enter_async_context(upstream(counted(n))) for n in ("a", "b")]
        replicas = [Replica("m", build_backend("m", u, settings.backends), True) for u in urls]
        base = await stack.enter_async_context(serving(create_app(settings, replicas)))
        client = openai.AsyncOpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            await client.chat.completions.create(model="m", messages=HI, stream=stream)
    assert (info.value.status_code, info.value.code, info.value.param) == (
        400,
        "invalid_value",
        "top_p",
    )
    assert info.value.message.endswith("Invalid 'top_p': must be <= 1")
    assert len(calls) == 1, calls


@pytest.mark.parametrize("stream", [False, True])
async def test_an_upstream_rejection_sent_with_200_is_a_400_in_the_responses_api(
    stream: bool,
) -> None:
    """The Responses API, built on the upstream's chat completions, tells the same 400."""
    async with gateway_over({"/v1/chat/completions": json_answer(TOP_P)}) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model="m", input="hi", stream=stream)
    assert (info.value.code, info.value.param) == ("invalid_value", "top_p")
