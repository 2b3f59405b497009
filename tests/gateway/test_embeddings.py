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
