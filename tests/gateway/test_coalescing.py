"""A shared call's budget, and each caller leaving a shared call at its own deadline."""

from __future__ import annotations

import asyncio
import time

import pytest

from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.errors import DeadlineExceeded
from gateway.coalescing import shared_budget, within

BUDGETS = ClassBudgets(total_s=10.0, ttft_s=2.0, admission_s=0.5, stall_s=3.0)


def test_a_shared_call_runs_under_the_class_budgets_not_the_clients_timeout() -> None:
    """The client's 0.6 s is its own; the call it shares gets the class's 10 s and 2 s to the
    first token, on the same timeline."""
    budget = RequestBudget.start("interactive", BUDGETS, lambda: 100.0, 100.0, 0.6)
    shared = shared_budget(budget)
    assert budget.total.at == pytest.approx(100.6)
    assert (shared.total.at, shared.first_token.at) == (110.0, 102.0)
    assert shared.timeline is budget.timeline and shared.priority == "interactive"


async def test_a_result_in_time_is_returned() -> None:
    """Nothing changes for a call that ends before the deadline."""
    assert await within(asyncio.sleep(0, "done"), Deadline.after(30.0)) == "done"


async def test_the_caller_leaves_at_its_deadline_naming_it() -> None:
    """A call still running at the deadline: `DeadlineExceeded` naming the deadline's stage."""
    never = asyncio.get_running_loop().create_future()
    with pytest.raises(DeadlineExceeded) as raised:
        await within(never, Deadline(time.monotonic() + 0.01, "ttft"))
    assert raised.value.stage == "ttft"


async def test_a_timeout_of_the_call_itself_is_not_the_deadlines() -> None:
    """A `TimeoutError` the awaited call raises on its own passes through unchanged."""

    async def times_out() -> None:
        raise TimeoutError("socket")

    with pytest.raises(TimeoutError, match="socket"):
        await within(times_out(), Deadline.after(30.0))
