"""The background write-back queue: bounded, never failing the caller, draining on shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from cache.writeback import Job, WriteBackQueue


async def settle(done: Callable[[], bool]) -> None:
    """Yield to the loop until `done()` holds (a bounded number of turns, no wall time)."""
    for _ in range(1000):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def recorder(log: list[int], value: int) -> Job:
    async def job() -> None:
        log.append(value)

    return job


def gated(gate: asyncio.Event, cancelled: list[int], value: int) -> Job:
    async def job() -> None:
        try:
            await gate.wait()
        except asyncio.CancelledError:
            cancelled.append(value)
            raise

    return job


async def test_jobs_run_in_the_background_in_order() -> None:
    """Submitted jobs run on the worker, in submission order, and are counted as written."""
    queue = WriteBackQueue(workers=1)
    queue.start()
    done: list[int] = []
    assert all(queue.submit(recorder(done, i)) for i in range(5))
    await settle(lambda: queue.written == 5)
    assert done == [0, 1, 2, 3, 4] and queue.submitted == 5 and queue.depth == 0
    await queue.drain(timeout=5.0)


async def test_full_queue_drops_and_counts() -> None:
    """Past maxsize, submit returns False at once and counts the job as dropped."""
    queue = WriteBackQueue(maxsize=2)
    done: list[int] = []
    assert queue.submit(recorder(done, 1)) and queue.submit(recorder(done, 2))
    assert queue.submit(recorder(done, 3)) is False
    assert (queue.submitted, queue.dropped, queue.depth) == (2, 1, 2)
    queue.start()
    await queue.drain(timeout=5.0)
    assert done == [1, 2] and queue.written == 2


async def test_failures_are_counted_and_logged_on_one_rate_limited_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failing job is counted, logged once without a traceback, and never propagates."""
    queue = WriteBackQueue(workers=1, log_interval_s=3600.0)
    queue.start()

    async def boom() -> None:
        raise ConnectionError("redis went away")

    def not_async() -> None:
        raise RuntimeError("raised while creating the awaitable")

    done: list[int] = []
    with caplog.at_level(logging.WARNING, logger="gateway.cache.writeback"):
        queue.submit(boom)
        queue.submit(not_async)  # type: ignore[arg-type]
        queue.submit(recorder(done, 1))
        await settle(lambda: queue.written == 1)
    assert queue.failed == 2 and done == [1]
    assert len(caplog.records) == 1
    record = caplog.records[0]
    assert "redis went away" in record.getMessage() and record.exc_info is None
    await queue.drain(timeout=5.0)


async def test_job_timeout_counts_as_failure() -> None:
    """A job that hangs is cut at job_timeout_s and the worker moves on."""
    queue = WriteBackQueue(workers=1, job_timeout_s=0.01)
    queue.start()
    cancelled: list[int] = []
    second_ran = asyncio.Event()

    async def second() -> None:
        second_ran.set()

    queue.submit(gated(asyncio.Event(), cancelled, 1))
    queue.submit(second)
    await second_ran.wait()
    await settle(lambda: queue.written == 1)
    assert queue.failed == 1 and cancelled == [1]
    await queue.drain(timeout=5.0)


async def test_job_cancelled_from_inside_does_not_kill_the_worker() -> None:
    """A CancelledError raised by the job itself is a failure, not the worker's death."""
    queue = WriteBackQueue(workers=1)
    queue.start()

    async def cancelled_inside() -> None:
        raise asyncio.CancelledError

    done: list[int] = []
    queue.submit(cancelled_inside)
    queue.submit(recorder(done, 1))
    await settle(lambda: queue.written == 1)
    assert queue.failed == 1 and done == [1]
    await queue.drain(timeout=5.0)


async def test_drain_waits_for_queued_jobs() -> None:
    """drain stops new submissions and returns once the queued jobs have run."""
    queue = WriteBackQueue(workers=1)
    queue.start()
    gate = asyncio.Event()
    cancelled: list[int] = []
    for i in range(3):
        queue.submit(gated(gate, cancelled, i))
    drain = asyncio.create_task(queue.drain(timeout=60.0))
    await asyncio.sleep(0)  # one loop turn: drain has closed the queue and now waits
    assert queue.closed and not drain.done()
    assert queue.submit(recorder([], 9)) is False
    gate.set()
    await drain
    assert queue.written == 3 and cancelled == [] and queue.dropped == 1


async def test_drain_cancels_what_is_left_after_the_timeout() -> None:
    """Jobs still running or queued when the timeout fires are cancelled and counted."""
    queue = WriteBackQueue(workers=1)
    queue.start()
    cancelled: list[int] = []
    never = asyncio.Event()
    for i in range(3):
        queue.submit(gated(never, cancelled, i))
    await settle(lambda: queue.running == 1)
    await queue.drain(timeout=0.01)
    assert cancelled == [0]  # the running one saw its cancellation; the others never started
    assert (queue.written, queue.failed, queue.dropped, queue.depth) == (0, 0, 3, 0)


async def test_drain_without_start_drops_everything_queued() -> None:
    """A queue that never started has nothing to wait for: its jobs count as dropped."""
    queue = WriteBackQueue()
    queue.submit(recorder([], 1))
    await queue.drain(timeout=60.0)
    assert queue.dropped == 1 and queue.depth == 0


async def test_submit_never_raises() -> None:
    """Full, closed, or handed garbage: submit answers with a bool, never an exception."""
    queue = WriteBackQueue(maxsize=1, workers=1)
    assert queue.submit(42) is True  # type: ignore[arg-type]
    assert queue.submit(recorder([], 1)) is False
    queue.start()
    await settle(lambda: queue.failed == 1)
    await queue.drain(timeout=5.0)
    assert queue.submit(recorder([], 2)) is False
    assert queue.dropped == 2


def test_rejects_nonsense_configuration() -> None:
    """Zero capacity, zero workers or a non-positive job timeout are refused."""
    for kwargs in ({"maxsize": 0}, {"workers": 0}, {"job_timeout_s": 0.0}):
        with pytest.raises(ValueError, match="must be"):
            WriteBackQueue(**kwargs)
