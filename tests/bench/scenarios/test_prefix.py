"""`python -m bench.scenarios.prefix.run`'s workload: what a turn sends and reports."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.harness.errors import HarnessError
from bench.scenarios.prefix.workload import _turn

_REFUSAL = b'{"error":{"message":"no","type":"invalid_request_error","code":"deadline_too_short"}}'


async def test_a_refused_turn_stops_the_run_with_the_gateways_answer() -> None:
    """A 4xx from the gateway is reported with its body (the reason and the param it names)."""

    async def refuse(_request: web.Request) -> web.Response:
        return web.Response(status=400, body=_REFUSAL, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", refuse)
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        url = str(server.make_url("/v1/chat/completions"))
        with pytest.raises(HarnessError, match=r"HTTP 400 .*deadline_too_short"):
            await _turn(session, url, {"model": "sim"})
