"""A replica's waiting lines: how long a newcomer would wait, by the slots running requests
hold, the waiters ahead, the engine's own queue and how wrong recent predictions were."""

from __future__ import annotations

import pytest

from tests.budgets.queue_helpers import (
    FakeClock,
    FixedGoal,
    cancel_all,
    far,
    make,
    settle,
    spawn,
    warm,
)


async def test_predicted_wait_counts_backend_queue_and_batch_slots() -> None:
    """Interactive waits for the release its place in line needs, plus the engine's own queue
    spread over the slots; batch for its capped slots behind every waiter."""
    clock = FakeClock()
    q = make(clock, limit=4)
    await warm(q, clock, 2.0)
    for _ in range(4):
        await q.acquire("interactive", far(clock))  # all four end together, 2 s from now
    q.observe_backend(running=4, waiting=1)
    waiters = [spawn(q.acquire(p, far(clock))) for p in ("interactive", "batch")]
    await settle()
    # The waiter takes the first slot at +2 s; the newcomer the next, at +2 s too; the
    # engine's waiting request adds 2 s over four slots.
    assert q.predicted_wait("interactive") == 2.0 + 2.0 / 4
    # Two slots for batch: both waiters ahead take them at +2 s for 2 s each; then +2 s / 2.
    assert q.predicted_wait("batch") == 4.0 + 2.0 / 2
    await cancel_all(*waiters)


async def test_waits_that_ran_long_make_predictions_cautious() -> None:
    """A wait that took 2 s longer than predicted is added to later predictions."""
    clock = FakeClock()
    q = make(clock)
    await warm(q, clock, 1.0)
    held = await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", far(clock)))
    await settle()
    assert q.predicted_wait("interactive") == 2.0  # behind the holder and this waiter
    clock.now += 3.0  # the holder took 3 s, predicted 1 s
    held.release()
    await settle()
    assert q.service_time() == pytest.approx(1.4)
    assert q.predicted_wait("interactive") == pytest.approx(1.4 + 2.0)
    await cancel_all(waiter)


async def test_the_correction_fades_once_no_wait_refreshes_it() -> None:
    """Waits ran long during a slowdown, and then none came (the correction refused every
    request that would queue): it fades, so requests queue again and teach it afresh."""
    clock = FakeClock()
    q = make(clock)
    await warm(q, clock, 1.0)
    held = await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", far(clock)))
    await settle()
    clock.now += 3.0  # the holder took 3 s, predicted 1 s
    held.release()
    await settle()
    assert q.predicted_wait("interactive") == pytest.approx(1.4 + 2.0)
    clock.now += 1.0  # the waiter, admitted, should be done in 0.4 s; the 2 s error is 1 s old
    assert q.predicted_wait("interactive") == pytest.approx(0.4 + 2.0 * 0.5 ** (1 / 5))
    await cancel_all(waiter)


async def test_goal_hold_predicts_when_slots_free_up() -> None:
    """Each running request's predicted hold says when its slot frees: a newcomer waits for
    the earliest."""
    clock = FakeClock()
    q = make(clock, limit=2)
    await warm(q, clock, 1.0)
    await q.acquire("interactive", far(clock), FixedGoal(far(clock), 0.1, hold=5.0))
    await q.acquire("interactive", far(clock), FixedGoal(far(clock), 0.1, hold=0.5))
    assert q.predicted_wait("interactive") == 0.5
    clock.now += 0.2
    assert q.predicted_wait("interactive") == pytest.approx(0.3)
