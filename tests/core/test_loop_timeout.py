"""A timeout that forgives the event loop's own lag: a reply that waited while the loop was busy
is read, a dependency that never answers still times out."""

from __future__ import annotations

import asyncio
import time

import pytest

from core.loop_timeout import loop_timeout


def _stall_loop(seconds: float) -> None:
    """What a burst of requests does to the loop: nothing else runs meanwhile."""
    time.sleep(seconds)


async def _reply_after_a_stall(timer: object) -> int:
    loop = asyncio.get_running_loop()
    reply: asyncio.Future[int] = loop.create_future()

    def answer() -> None:
        _stall_loop(0.2)  # four times the timeout
        loop.call_soon(reply.set_result, 7)  # read on the next turn, as from a socket

    loop.call_soon(answer)
    async with timer(0.05):  # type: ignore[operator]
        return await reply


async def test_a_reply_that_waited_out_a_busy_loop_is_read() -> None:
    """The loop stalls for four timeouts while the reply waits: it is read, not timed out."""
    assert await _reply_after_a_stall(loop_timeout) == 7


async def test_asyncio_timeout_would_count_the_stall_against_the_reply() -> None:
    """The case above with `asyncio.timeout`: the stall alone times it out (why the limiter
    does not use it)."""
    with pytest.raises(TimeoutError):
        await _reply_after_a_stall(asyncio.timeout)


async def test_a_dependency_that_never_answers_still_times_out() -> None:
    """Nothing ever answers: TimeoutError, on an idle loop."""
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        async with loop_timeout(0.01):
            await never
