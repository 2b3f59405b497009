"""Deadlines, stage budgets, admission and priorities over a real uvicorn server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import aiohttp
import orjson
import pytest

from backends.replica import Replica
from budgets.request_budget import ClassBudgets
from budgets.settings import BudgetSettings
from gateway.app import create_app
from gateway.settings import Settings
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

INTERACTIVE = ClassBudgets(total_s=5.0, ttft_s=2.0, admission_s=1.0, stall_s=0.3)
BATCH = ClassBudgets(total_s=30.0, ttft_s=20.0, admission_s=20.0, stall_s=5.0)


def _settings(**budgets: Any) -> Settings:
    return Settings(
        budgets=BudgetSettings(classes={"interactive": INTERACTIVE, "batch": BATCH}, **budgets),
    )


def _chat(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend(url="fake://a", hold=asyncio.Event())


async def _serve(backend: FakeBackend, settings: Settings) -> AsyncIterator[str]:
    async with serving(create_app(settings, [Replica("m", backend)])) as url:
        yield f"{url}/v1"


@pytest.fixture
async def url(backend: FakeBackend) -> AsyncIterator[str]:
    async for base in _serve(backend, _settings()):
        yield base


@pytest.fixture
async def one_slot_url(backend: FakeBackend) -> AsyncIterator[str]:
    async for base in _serve(backend, _settings(max_inflight=1, max_queue=0)):
        yield base


async def _post(
    url: str, payload: dict[str, Any], headers: Mapping[str, str] | None = None
) -> tuple[int, Mapping[str, str], bytes]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{url}/chat/completions", json=payload, headers=headers) as response,
    ):
        return response.status, response.headers, await response.read()


def _timing(header: str) -> dict[str, float]:
    stages = {}
    for part in header.split(","):
        name, _, duration = part.strip().partition(";dur=")
        stages[name] = float(duration)
    return stages


async def test_server_timing_lists_stages(url: str) -> None:
    """A completed request reports every stage it went through in Server-Timing."""
    status, headers, _ = await _post(url, _chat(temperature=0))
    assert status == 200
    stages = _timing(headers["server-timing"])
    assert {"parse", "exact_cache", "admission", "backend", "total"} <= set(stages)
    assert all(duration >= 0 for duration in stages.values())


async def test_stream_server_timing_up_to_first_token(url: str) -> None:
    """A stream's Server-Timing covers the stages before its first byte."""
    status, headers, body = await _post(url, _chat(stream=True))
    assert status == 200 and body.endswith(b"data: [DONE]\n\n")
    assert {"parse", "admission", "ttft"} <= set(_timing(headers["server-timing"]))


async def test_client_timeout_tightens_total(url: str, backend: FakeBackend) -> None:
    """X-Request-Timeout-Ms cuts the total: a held backend call ends in 504 naming total."""
    status, headers, body = await _post(url, _chat("hold"), {"x-request-timeout-ms": "100"})
    error = orjson.loads(body)["error"]
    assert status == 504 and error["code"] == "deadline_exceeded"
    assert error["message"] == "Deadline exceeded in stage total." and "server-timing" in headers
    await backend.wait_held(0)


async def test_bad_client_timeout_is_400(url: str) -> None:
    """A malformed X-Request-Timeout-Ms is a 400 naming the header."""
    status, _, body = await _post(url, _chat(), {"x-request-timeout-ms": "soon"})
    assert status == 400 and orjson.loads(body)["error"]["param"] == "X-Request-Timeout-Ms"


async def test_bad_priority_is_400(url: str) -> None:
    """An unknown X-Priority is a 400 naming the header."""
    status, _, body = await _post(url, _chat(), {"x-priority": "urgent"})
    assert status == 400 and orjson.loads(body)["error"]["param"] == "X-Priority"


async def test_first_token_deadline_aborts_stream(url: str, backend: FakeBackend) -> None:
    """A stream without a first token within the ttft budget is a 504 naming ttft, and the
    backend stream is closed."""
    status, _, body = await _post(url, _chat("hold", stream=True))
    error = orjson.loads(body)["error"]
    assert status == 504 and error["message"] == "Deadline exceeded in stage ttft."
    assert backend.closed_early == 1


async def test_stalled_stream_gets_error_event(url: str, backend: FakeBackend) -> None:
    """A stream that stalls past the stall budget ends with an error event and [DONE], and
    the backend stream is closed (aborted)."""
    backend.stall_after = 1
    status, _, body = await _post(url, _chat(stream=True))
    events = [e for e in body.split(b"\n\n") if e]
    assert status == 200 and events[-1] == b"data: [DONE]"
    error = orjson.loads(events[-2].removeprefix(b"data: "))["error"]
    assert error["code"] == "deadline_exceeded" and error["message"].endswith("stage stall.")
    assert backend.closed_early == 1


async def test_full_queue_is_fast_429(one_slot_url: str, backend: FakeBackend) -> None:
    """With the only slot taken and no queue, a request is refused at once with 429 and
    Retry-After headers; the held request still completes."""
    assert backend.hold is not None
    held = asyncio.create_task(_post(one_slot_url, _chat("hold")))
    await backend.wait_held(1)
    status, headers, body = await _post(one_slot_url, _chat())
    assert status == 429 and orjson.loads(body)["error"]["code"] == "overloaded"
    assert int(headers["retry-after"]) >= 1 and int(headers["retry-after-ms"]) >= 1
    backend.hold.set()
    assert (await held)[0] == 200


async def test_queue_timeout_is_429(backend: FakeBackend) -> None:
    """A request queued longer than its admission budget is refused with 429 queue_timeout."""
    assert backend.hold is not None
    fast = replace(INTERACTIVE, admission_s=0.05)
    settings = replace(
        _settings(max_inflight=1),
        budgets=BudgetSettings(classes={"interactive": fast, "batch": BATCH}, max_inflight=1),
    )
    async for url in _serve(backend, settings):
        held = asyncio.create_task(_post(url, _chat("hold")))
        await backend.wait_held(1)
        status, _, body = await _post(url, _chat())
        assert status == 429 and orjson.loads(body)["error"]["code"] == "queue_timeout"
        backend.hold.set()
        assert (await held)[0] == 200


async def test_predicted_wait_sheds_before_queueing(backend: FakeBackend) -> None:
    """Once service times are known, a request whose predicted wait exceeds its admission
    budget is refused at once instead of waiting the budget out."""
    assert backend.hold is not None
    quick = replace(INTERACTIVE, admission_s=0.05)
    settings = replace(
        _settings(),
        budgets=BudgetSettings(classes={"interactive": quick, "batch": BATCH}, max_inflight=1),
    )
    async for url in _serve(backend, settings):
        await _held_answer(url, backend, _chat("hold"), 0.5)
        held = asyncio.create_task(_post(url, _chat("hold again")))
        await backend.wait_held(1)
        status, _, body = await _post(url, _chat())
        error = orjson.loads(body)["error"]
        assert status == 429 and error["code"] == "overloaded"
        assert "predicted queue wait" in error["message"]
        backend.hold.set()
        assert (await held)[0] == 200


async def _held_answer(
    url: str,
    backend: FakeBackend,
    payload: dict[str, Any],
    hold_s: float,
    headers: dict[str, str] | None = None,
) -> None:
    """One request the backend holds for at least `hold_s` before answering (200)."""
    assert backend.hold is not None
    held = asyncio.create_task(_post(url, payload, headers))
    await backend.wait_held(1)
    await asyncio.sleep(hold_s)  # not synchronisation: makes the service time >= hold_s
    backend.hold.set()
    assert (await held)[0] == 200
    backend.hold.clear()


async def _learn_slow_answers(url: str, backend: FakeBackend) -> None:
    """Teach the replica that a first token comes at once but a whole answer takes >= 0.3 s
    (twice: fewer observations are too little evidence to refuse by)."""
    assert (await _post(url, _chat(stream=True)))[0] == 200
    for _ in range(2):
        await _held_answer(url, backend, _chat("hold"), 0.3)


async def test_request_that_cannot_finish_is_refused_at_once(
    url: str, backend: FakeBackend
) -> None:
    """A whole answer predicted to take longer than the time left even on an idle replica is a
    400 naming why and the header, without Retry-After (no wait can help), and the backend
    never sees it."""
    await _learn_slow_answers(url, backend)
    calls = backend.calls
    status, headers, body = await _post(url, _chat(), {"x-request-timeout-ms": "100"})
    error = orjson.loads(body)["error"]
    assert status == 400 and error["code"] == "deadline_too_short"
    assert error["param"] == "X-Request-Timeout-Ms" and "predicted" in error["message"]
    assert "retry-after" not in headers and "retry-after-ms" not in headers
    assert backend.calls == calls


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("sampling", [{"temperature": 0}, {"seed": 7}])
async def test_a_cacheable_request_that_cannot_finish_is_refused_at_once(
    url: str, backend: FakeBackend, sampling: dict[str, Any], stream: bool
) -> None:
    """A cache-eligible request (identical ones share one backend call) is judged by its
    caller's own deadline like any other: a 400 naming the header, and the backend never sees
    it (the call it would share runs under the class's budgets, not the admission's yardstick).
    """
    await _learn_slow_answers(url, backend)
    calls = backend.calls
    payload = _chat(stream=stream, **sampling)
    status, headers, body = await _post(url, payload, {"x-request-timeout-ms": "100"})
    error = orjson.loads(body)["error"]
    assert status == 400 and error["code"] == "deadline_too_short"
    assert error["param"] == "X-Request-Timeout-Ms" and headers["x-cache"] == "miss", error
    assert backend.calls == calls


async def test_streams_are_judged_by_their_first_token(backend: FakeBackend) -> None:
    """Once first tokens are known to take >= 0.3 s, a stream is refused against its 0.2 s
    first-token budget while a non-streaming request, judged against its 5 s total, is served."""
    assert backend.hold is not None
    quick_first = replace(INTERACTIVE, ttft_s=0.2, admission_s=0.2)
    settings = replace(
        _settings(),
        budgets=BudgetSettings(classes={"interactive": quick_first, "batch": BATCH}),
    )
    async for url in _serve(backend, settings):
        # Batch streams (20 s first-token budget) teach the replica's first-token time; two,
        # since one stream's first token and end are too little evidence to refuse by.
        for _ in range(2):
            batch = {"x-priority": "batch"}
            await _held_answer(url, backend, _chat("hold", stream=True), 0.3, batch)
        status, _, body = await _post(url, _chat(stream=True))
        assert status == 400 and orjson.loads(body)["error"]["code"] == "deadline_too_short"
        assert (await _post(url, _chat(max_tokens=3)))[0] == 200


async def test_batch_flood_leaves_room_for_interactive(backend: FakeBackend) -> None:
    """Batch requests hold at most their share of the slots; interactive ones still run."""
    assert backend.hold is not None
    async for url in _serve(backend, _settings(max_inflight=4, batch_share=0.5)):
        flood = [
            asyncio.create_task(_post(url, _chat(f"hold {i}"), {"x-priority": "batch"}))
            for i in range(10)
        ]
        await backend.wait_held(2)
        for _ in range(3):
            status, _, _ = await _post(url, _chat(), {"x-priority": "interactive"})
            assert status == 200
        assert backend.held == 2
        backend.hold.set()
        assert all(result[0] == 200 for result in await asyncio.gather(*flood))
