"""The embeddings endpoint over an OpenAI-compatible upstream, through the official client:
what reaches the client when the upstream's answer does not fit the request."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest
from aiohttp import web

from tests.support.scripted_upstream import gateway_over


def _vectors(count: int) -> dict[str, Any]:
    data = [{"object": "embedding", "index": i, "embedding": [0.1, 0.2]} for i in range(count)]
    return {"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 3}}


async def _one_short(request: web.Request) -> web.StreamResponse:
    return web.json_response(_vectors(len((await request.json())["input"]) - 1))


async def test_too_few_embeddings_are_a_502_logged_with_the_replica(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An upstream answering 2 vectors for 3 inputs is a 502 backend error, never a 200 the
    client would zip by position; the log names the replica and what was wrong."""
    caplog.set_level(logging.WARNING, logger="gateway")
    async with gateway_over({"/v1/embeddings": _one_short}) as (base_url, upstream_url):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as info:
            await client.embeddings.create(model="m", input=["a", "b", "c"])
    assert info.value.status_code == 502
    assert info.value.code == "backend_error"
    logged = [r.getMessage() for r in caplog.records if r.name == "gateway"]
    assert any(upstream_url in m and "2 embeddings for 3 inputs" in m for m in logged), logged


async def test_dimensions_reach_an_http_upstream_and_shape_the_answer() -> None:
    """`dimensions` is passed through to an OpenAI-compatible upstream, which shortens the
    vectors (vLLM and OpenAI serve matryoshka models so)."""
    sent: list[Any] = []

    async def shortening(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        sent.append(body)
        answer = _vectors(len(body["input"]))
        for item in answer["data"]:
            item["embedding"] = [0.5, 0.75, 0.25][: body.get("dimensions", 3)]
        return web.json_response(answer)

    async with gateway_over({"/v1/embeddings": shortening}) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        result = await client.embeddings.create(model="m", input=["a", "b"], dimensions=2)
    assert sent[0]["dimensions"] == 2
    assert [d.embedding for d in result.data] == [[0.5, 0.75], [0.5, 0.75]]


async def test_an_upstream_that_ignores_dimensions_is_a_400_naming_it() -> None:
    """Vectors of another size than asked (the upstream ignored `dimensions`) are a 400 on
    `dimensions`, never a 200 with vectors the client did not ask for."""

    async def ignoring(request: web.Request) -> web.StreamResponse:
        return web.json_response(_vectors(len((await request.json())["input"])))

    async with gateway_over({"/v1/embeddings": ignoring}) as (base_url, _):
        client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            await client.embeddings.create(model="m", input=["a"], dimensions=1)
    assert info.value.code == "unsupported_parameter"
    assert info.value.param == "dimensions"
