"""Open-loop load and request classification: bench.load.open_loop (Poisson arrivals, each
answer the gateway can give told apart against a local server, the drain cap), and the
closed-loop driver counting completions per second over `send`."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator, Sequence

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.load.closed_loop import LoopBounds, drive
from bench.load.open_loop import (
    Arrival,
    RequestRecord,
    Target,
    new_session,
    poisson_schedule,
    retry_after_ms,
    run_open_loop,
    send,
    status_outcome,
)


def test_poisson_schedule_is_seeded_sorted_and_at_rate() -> None:
    """The same seed gives the same arrivals, in order, inside the window, at about the rate."""
    schedule = poisson_schedule(50.0, 200.0, seed=7, batch_fraction=0.2)
    assert schedule == poisson_schedule(50.0, 200.0, seed=7, batch_fraction=0.2)
    assert schedule != poisson_schedule(50.0, 200.0, seed=8, batch_fraction=0.2)
    offsets = [a.offset_s for a in schedule]
    assert offsets == sorted(offsets) and offsets[0] > 0 and offsets[-1] < 200.0
    assert abs(len(schedule) - 10_000) < 400  # 4 standard deviations
    batch = sum(a.priority == "batch" for a in schedule) / len(schedule)
    assert 0.18 < batch < 0.22


def test_poisson_mix_does_not_move_arrivals() -> None:
    """The class draw has its own random stream: the mix leaves the arrival times alone."""
    plain = poisson_schedule(20.0, 5.0, seed=3)
    mixed = poisson_schedule(20.0, 5.0, seed=3, batch_fraction=0.5)
    assert [a.offset_s for a in plain] == [a.offset_s for a in mixed]
    assert {a.priority for a in plain} == {"interactive"}
    assert poisson_schedule(0.0, 5.0, seed=3) == [] == poisson_schedule(5.0, 0.0, seed=3)


def test_retry_after_prefers_milliseconds() -> None:
    """retry-after-ms wins over Retry-After; an HTTP date in Retry-After is not a number."""
    assert retry_after_ms({"retry-after-ms": "250", "retry-after": "1"}) == 250.0
    assert retry_after_ms({"retry-after": "2"}) == 2000.0
    assert math.isnan(retry_after_ms({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}))
    assert math.isnan(retry_after_ms({}))


def test_a_deadline_no_replica_could_meet_counts_as_shed() -> None:
    """Admission's 400 `deadline_too_short` is a refusal like its 429s; other 400s are not."""
    assert status_outcome(400, "deadline_too_short") == "shed"
    assert status_outcome(429, "overloaded") == "shed"
    assert status_outcome(400, "invalid_value") == "http_error"


async def _sse(
    request: web.Request, events: Sequence[bytes], done: bool = True
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    for event in events:
        await response.write(b"data: " + event + b"\n\n")
    if done:
        await response.write(b"data: [DONE]\n\n")
    return response


_TEXT = b'{"choices":[{"index":0,"text":"hi"}]}'
_ERROR = b'{"error":{"message":"late","type":"timeout_error","code":"deadline_exceeded"}}'


def _error(status: int, code: str, headers: dict[str, str] | None = None) -> web.Response:
    body = json.dumps({"error": {"message": code, "type": "x", "code": code}})
    return web.Response(status=status, text=body, headers=headers)


@pytest.fixture
async def server() -> AsyncIterator[TestServer]:
    """A local server answering each way the gateway can, one path per way."""
    forever = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await forever.wait()
        return web.Response()

    async def ok(request: web.Request) -> web.StreamResponse:
        return await _sse(request, [_TEXT, _TEXT])

    async def late(request: web.Request) -> web.StreamResponse:
        return await _sse(request, [_TEXT, _ERROR])

    async def empty(request: web.Request) -> web.StreamResponse:
        return await _sse(request, [b'{"choices":[]}'])

    async def cut(request: web.Request) -> web.StreamResponse:
        return await _sse(request, [_TEXT], done=False)

    async def shed(request: web.Request) -> web.Response:
        assert request.headers["x-priority"] in ("interactive", "batch")
        return _error(429, "overloaded", {"retry-after": "1", "retry-after-ms": "250"})

    async def deadline(request: web.Request) -> web.Response:
        return _error(504, "deadline_exceeded")

    app = web.Application()
    for path, handler in (
        ("/ok", ok),
        ("/late", late),
        ("/empty", empty),
        ("/cut", cut),
        ("/shed", shed),
        ("/deadline", deadline),
        ("/hang", hang),
    ):
        app.router.add_post(path, handler)
    test_server = TestServer(app)
    await test_server.start_server()
    try:
        yield test_server
    finally:
        forever.set()
        await test_server.close()


async def _send(server: TestServer, path: str) -> RequestRecord:
    target = Target(str(server.make_url(path)), b"{}")
    async with new_session(5.0) as session:
        due = time.perf_counter()
        return await send(session, target, Arrival(0.0, "batch"), due, due)


async def test_send_classifies_every_answer(server: TestServer) -> None:
    """Clean streams, error events, 429 with Retry-After, 504 and cut streams are told apart."""
    ok = await _send(server, "/ok")
    assert (ok.outcome, ok.status, ok.priority) == ("ok", 200, "batch")
    assert 0 <= ok.ttft_s <= ok.latency_s
    late = await _send(server, "/late")
    assert (late.outcome, late.code) == ("stream_error", "deadline_exceeded")
    shed = await _send(server, "/shed")
    assert (shed.outcome, shed.status, shed.code) == ("shed", 429, "overloaded")
    assert shed.retry_after_ms == 250.0
    deadline = await _send(server, "/deadline")
    assert (deadline.outcome, deadline.code) == ("deadline", "deadline_exceeded")
    assert (await _send(server, "/empty")).outcome == "broken"
    assert (await _send(server, "/cut")).outcome == "broken"


async def test_open_loop_sends_everything_and_drains_with_a_cap(server: TestServer) -> None:
    """Every arrival gets one record in schedule order; what outlives the drain is unfinished."""
    schedule = poisson_schedule(200.0, 0.1, seed=5, batch_fraction=0.5)
    async with new_session(5.0) as session:
        records = await run_open_loop(
            session, Target(str(server.make_url("/ok")), b"{}"), schedule, 5.0, 0.1
        )
        assert [(r.offset_s, r.priority) for r in records] == [
            (a.offset_s, a.priority) for a in schedule
        ]
        assert {r.outcome for r in records} == {"ok"}
        hung = await run_open_loop(
            session, Target(str(server.make_url("/hang")), b"{}"), schedule[:3], 0.05, 0.0
        )
    assert [r.outcome for r in hung] == ["unfinished"] * 3


async def test_closed_loop_of_send_counts_completions_in_its_window(server: TestServer) -> None:
    """The capacity phase: staggered workers keep sending; the requests that ended inside the
    window are clean answers, none ended after it closed."""
    target = Target(str(server.make_url("/ok")), b"{}")
    # A window long enough that some request ends inside it on a loaded 2-core machine.
    window_s = 1.0
    bounds = LoopBounds(
        concurrency=4, warmup_s=0.05, duration_s=window_s, min_requests=0, stagger_s=0.01
    )
    async with new_session(5.0) as session:
        start = time.perf_counter()

        async def one(_index: int) -> RequestRecord:
            now = time.perf_counter()
            return await send(session, target, Arrival(now - start, "interactive"), now, start)

        run = await drive(one, bounds, lambda record: record.outcome != "ok")
    window = run.ended_in_window()
    assert window and {r.outcome for r in window} == {"ok"}
    # `send` stamps a request's end a moment before `drive` does, so by its own clock a request
    # can end just before the window opens (`drive` counted it inside); none ends after it closes.
    closes = run.stop_at - start
    assert all(r.offset_s <= r.end_s < closes for r in window)
