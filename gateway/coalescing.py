"""Identical concurrent requests on one backend call, each caller under its own deadline.

The shared call runs under the class budgets counted from the first caller's arrival, not under
that caller's own `X-Request-Timeout-Ms`: a leader with a short deadline must not cut the
answer short for the callers who joined it with time to spare. Each caller leaves at its own
deadline instead, and the last one to leave cancels the call (`cache.coalesce`), which aborts
the backend's work.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

from backends.base import GenerationRequest
from backends.fleet import Fleet
from budgets.deadline import Deadline
from budgets.request_budget import RequestBudget
from core.answers import StreamChunk
from core.errors import DeadlineExceeded

T = TypeVar("T")


def shared_budget(budget: RequestBudget) -> RequestBudget:
    """The budget of a call shared by several callers: `budget`'s class budgets from its
    arrival, without its client's own timeout (stages still land on its timeline)."""
    timeline = budget.timeline
    fresh = RequestBudget.start(budget.priority, budget.budgets, timeline.clock, timeline.started)
    return replace(fresh, timeline=timeline)


async def within(waiting: Awaitable[T], deadline: Deadline) -> T:
    """`waiting`'s result, or `DeadlineExceeded` naming `deadline` once it passes (leaving a
    shared call this way cancels it only if no other caller still waits)."""
    scope = asyncio.timeout(deadline.remaining())
    try:
        async with scope:
            return await waiting
    except TimeoutError:
        if scope.expired():
            raise DeadlineExceeded(deadline.stage) from None
        raise


def shared_stream(
    fleet: Fleet, request: GenerationRequest, budget: RequestBudget
) -> Callable[[], Awaitable[AsyncGenerator[StreamChunk, None]]]:
    """How the first of several identical streaming callers starts the stream they share."""
    shared = shared_budget(budget)

    async def start() -> AsyncGenerator[StreamChunk, None]:
        opened = await fleet.open_stream(request, shared)
        return opened.iterate()

    return start
