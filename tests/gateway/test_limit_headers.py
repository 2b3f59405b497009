"""With API keys and limits, every answer to a key carries its rate-limit headers: errors
before admission (bad requests, unknown models, bodies too large), after it (the backend's
failures, deadlines, no healthy replica) and refusals alike, streamed or not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from access.caller import Caller, KeyLimits, key_digest
from access.limiter import Admission, RateLimiter
from access.settings import AccessSettings
from backends.replica import Replica
from core.answers import Completion
from core.backend_errors import BackendError, NoHealthyBackend
from core.errors import DeadlineExceeded, GatewayError
from core.stages import StageName
from gateway.app import create_app
from gateway.presentation import CompletionsPresentation
from gateway.settings import Settings
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

LIMITS = KeyLimits(requests_per_minute=1000, tokens_per_minute=100_000)
CHAT: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
HEADERS = {"x-ratelimit-limit-requests", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"}


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
async def url(backend: FakeBackend) -> AsyncIterator[str]:
    callers = {key_digest("k"): Caller("t", key_id="id", limits=LIMITS)}
    settings = Settings(max_body_bytes=4096, access=AccessSettings(inline_keys=callers))
    async with serving(create_app(settings, [Replica("m", backend)])) as url:
        yield url


async def _ask(url: str, path: str, body: dict[str, Any]) -> tuple[int, set[str]]:
    async with (
        aiohttp.ClientSession(headers={"Authorization": "Bearer k"}) as session,
        session.post(f"{url}/v1{path}", json=body) as response,
    ):
        await response.read()
        return response.status, {name.lower() for name in response.headers}


@pytest.mark.parametrize(
    ("failure", "status"),
    [
        (BackendError("engine died", retryable=False), 502),
        (DeadlineExceeded(StageName.TTFT), 504),
        (NoHealthyBackend("none"), 503),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_failure_after_admission_carries_the_headers(
    url: str, backend: FakeBackend, failure: GatewayError, status: int, stream: bool
) -> None:
    """A backend failure, a deadline, no healthy replica: the headers of a 200."""
    backend.fail_with = failure
    answered, headers = await _ask(url, "/chat/completions", {**CHAT, "stream": stream})
    assert answered == status and headers >= HEADERS


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/chat/completions", {**CHAT, "n": "two"}, 400),
        ("/chat/completions", {**CHAT, "model": "nope"}, 404),
        ("/chat/completions", {**CHAT, "max_tokens": 10**6}, 400),  # request_too_large
        ("/chat/completions", {**CHAT, "stop": "x" * 5000}, 413),
        ("/completions", {"model": "m"}, 400),
        ("/embeddings", {"model": "m", "input": []}, 400),
        ("/responses", {"model": "m", "input": "hi", "previous_response_id": "resp_x"}, 400),
    ],
)
async def test_a_request_refused_before_admission_carries_the_headers(
    url: str, path: str, body: dict[str, Any], status: int
) -> None:
    """Refused before it was charged, a request's answer still says what the key has left."""
    answered, headers = await _ask(url, path, body)
    assert answered == status and headers >= HEADERS


async def test_success_and_answers_without_a_key_are_as_before(url: str) -> None:
    """A 200 carries the headers; a 401 (no key, so no limits to describe) does not."""
    answered, headers = await _ask(url, "/chat/completions", CHAT)
    assert answered == 200 and headers >= HEADERS
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/v1/chat/completions", json=CHAT) as response,
    ):
        assert response.status == 401
        assert not any(name.lower().startswith("x-ratelimit") for name in response.headers)


async def _remaining_tokens(
    limits: KeyLimits, asks: list[tuple[str, dict[str, Any]]], backend: FakeBackend
) -> list[tuple[int, int]]:
    """Each ask's status and `x-ratelimit-remaining-tokens`, in turn, for a key with
    `limits`."""
    callers = {key_digest("k"): Caller("t", key_id="id", limits=limits)}
    settings = Settings(access=AccessSettings(inline_keys=callers))
    seen = []
    async with (
        serving(create_app(settings, [Replica("m", backend)])) as url,
        aiohttp.ClientSession(headers={"Authorization": "Bearer k"}) as session,
    ):
        for path, body in asks:
            async with session.post(f"{url}/v1{path}", json=body) as response:
                await response.read()
                remaining = int(response.headers["x-ratelimit-remaining-tokens"])
                seen.append((response.status, remaining))
    return seen


async def test_an_answer_says_what_its_usage_left_not_its_reservation(
    backend: FakeBackend,
) -> None:
    """A key with only 1000 tokens a minute and no max_tokens sent: the request reserves the
    whole bucket, but the answer's headers are written once it is settled (6 tokens used)."""
    limits = KeyLimits(tokens_per_minute=1000)
    [(status, remaining)] = await _remaining_tokens(limits, [("/chat/completions", CHAT)], backend)
    assert status == 200 and 994 <= remaining <= 1000


async def test_an_embedding_says_what_it_used(backend: FakeBackend) -> None:
    """An embedding's input is estimated at admission and counted by the backend: its headers
    say what the real count left."""
    limits = KeyLimits(tokens_per_minute=10_000)
    embed = {"model": "m", "input": "x" * 4000}  # estimated at 1000 tokens, 2 used
    [(status, remaining)] = await _remaining_tokens(limits, [("/embeddings", embed)], backend)
    assert status == 200 and 9998 <= remaining <= 10_000


async def test_a_failure_after_admission_gives_back_its_whole_reservation(
    backend: FakeBackend,
) -> None:
    """The error's headers say the reservation was given back: nothing was used."""
    backend.fail_with = BackendError("engine died", retryable=False)
    limits = KeyLimits(tokens_per_minute=1000)
    [(status, remaining)] = await _remaining_tokens(limits, [("/chat/completions", CHAT)], backend)
    assert status == 502 and remaining == 1000


async def test_a_stream_s_headers_count_its_whole_reservation(backend: FakeBackend) -> None:
    """Written before the answer, a stream's headers say what is left while it runs: its
    reservation is held until it ends (documented), here the whole bucket."""
    limits = KeyLimits(tokens_per_minute=1000)
    asks = [("/chat/completions", {**CHAT, "stream": True})]
    [(status, remaining)] = await _remaining_tokens(limits, asks, backend)
    assert status == 200 and remaining == 0


@pytest.mark.parametrize("cached", [False, True])
async def test_an_answer_that_fails_to_render_is_settled_once(
    url: str, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    """An answer whose body fails to render (after the backend or the cache answered) gives
    its reservation back once, not once for the answer and again for the failure (which would
    hand the key tokens other requests hold)."""
    body = {**CHAT, "temperature": 0}
    if cached:  # the second ask is a cache hit
        assert (await _ask(url, "/chat/completions", body))[0] == 200
    settles: list[int] = []
    real = RateLimiter.settle

    def counted(self: RateLimiter, admission: Admission, used_tokens: int) -> None:
        settles.append(used_tokens)
        real(self, admission, used_tokens)

    async def broken(self: CompletionsPresentation, completion: Completion) -> bytes:
        raise GatewayError("the answer could not be rendered")

    monkeypatch.setattr(RateLimiter, "settle", counted)
    monkeypatch.setattr(CompletionsPresentation, "body", broken)
    status, _ = await _ask(url, "/chat/completions", body)
    assert status == 500
    assert settles == [0]
