"""An error answered after the cache stage says in `X-Cache` what the cache did, as a 200
does; one answered before any cache decision carries none."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from backends.replica import Replica
from core.backend_errors import BackendError
from core.errors import DeadlineExceeded, GatewayError
from core.stages import StageName
from gateway.app import create_app
from gateway.settings import Settings
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

CHAT: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
async def url(backend: FakeBackend) -> AsyncIterator[str]:
    async with serving(create_app(Settings(), [Replica("m", backend)])) as url:
        yield url


async def _ask(
    url: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, str | None]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/chat/completions", json=body, headers=headers) as response,
    ):
        await response.read()
        return response.status, response.headers.get("x-cache")


@pytest.mark.parametrize(
    ("failure", "status"),
    [(BackendError("engine died", retryable=False), 502), (DeadlineExceeded(StageName.TTFT), 504)],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_failure_after_the_cache_stage_says_what_the_cache_did(
    url: str, backend: FakeBackend, failure: GatewayError, status: int, stream: bool
) -> None:
    """A backend error or a deadline after a lookup says `miss`; one the cache was not read
    for says `bypass`."""
    backend.fail_with = failure
    cacheable = {**CHAT, "temperature": 0, "stream": stream}
    assert await _ask(url, cacheable) == (status, "miss")
    assert await _ask(url, cacheable, {"cache-control": "no-cache"}) == (status, "bypass")
    assert await _ask(url, {**CHAT, "stream": stream}) == (status, "bypass")


async def test_a_request_refused_before_the_cache_stage_carries_no_x_cache(url: str) -> None:
    """A bad body or an unknown model is refused before any cache decision: no `X-Cache`."""
    assert await _ask(url, {**CHAT, "n": "two"}) == (400, None)
    assert await _ask(url, {**CHAT, "model": "nope"}) == (404, None)
