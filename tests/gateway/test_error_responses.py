"""What a client and the log are told when an OpenAI-compatible upstream fails, through the
official client over a gateway on loopback."""

from __future__ import annotations

import openai
import orjson
import pytest
from aiohttp import web
from openai.types.chat import ChatCompletionMessageParam

from backends.outliers import OutlierPolicy
from backends.settings import BackendSettings
from gateway.settings import Settings
from tests.support.scripted_upstream import Handler, gateway_over, json_answer

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
