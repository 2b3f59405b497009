"""Admission judged by outcome: a request that cannot reach its goal (first token or whole
answer) before its deadline is refused on arrival, in the queue, and at the queue's head."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from budgets.admission import AdmissionQueue
from budgets.deadline import Deadline
from budgets.shed import Shed
from tests.budgets.queue_helpers import (
    FakeClock,
    FixedGoal,
    far,
    make,
    settle,
    spawn,
    warm,
    within,
)


async def test_goal_out_of_reach_on_an_idle_replica_is_refused() -> None:
    """With a free slot, a request whose service time exceeds its time left is still refused."""
    clock = FakeClock()
    q = make(clock, limit=2)
    with pytest.raises(Shed) as info:
        await q.acquire("interactive", far(clock), FixedGoal(within(clock, 0.5), 0.6))
    shed = info.value
    assert (shed.reason, shed.predicted_wait_s) == ("predicted_outcome", 0.0)
    assert shed.slack_s == pytest.approx(-0.1)
    assert q.inflight == 0 and q.stats.shed == {"predicted_outcome": 1}


async def test_unknown_service_time_never_refuses() -> None:
    """Before the replica has a prediction the request is admitted as before."""
    clock = FakeClock()
    q = make(clock)
    slot = await q.acquire("interactive", far(clock), FixedGoal(within(clock, 0.001), None))
    assert q.inflight == 1
    slot.release()


async def test_arrival_counts_the_wait_and_the_service_time() -> None:
    """Predicted wait (1 s) plus service (0.6 s) against the time left decides on arrival."""
    clock = FakeClock()
    q = make(clock)
    await warm(q, clock, 1.0)
    held = await q.acquire("interactive", far(clock))
    with pytest.raises(Shed) as info:
        await q.acquire("interactive", far(clock), FixedGoal(within(clock, 1.5), 0.6))
    assert info.value.reason == "predicted_outcome" and info.value.predicted_wait_s == 1.0
    assert info.value.retry_after_s == 1.0
    fits = spawn(q.acquire("interactive", far(clock), FixedGoal(within(clock, 1.7), 0.6)))
    await settle()
    assert q.queued() == 1 and not fits.done()
    held.release()
    await settle()
    assert fits.done() and q.inflight == 1


async def test_head_of_queue_drops_a_waiter_that_can_no_longer_make_it() -> None:
    """A waiter whose time ran out while it queued is refused, never handed the slot; the
    slot goes to the next waiter."""
    clock = FakeClock()
    q = make(clock)
    await warm(q, clock, 10.0)
    held = await q.acquire("interactive", far(clock))
    late = spawn(q.acquire("interactive", far(clock), FixedGoal(within(clock, 20.0), 5.0)))
    patient = spawn(q.acquire("interactive", far(clock)))
    await settle()
    assert q.queued() == 2
    clock.now += 16.0  # the holder ran long: `late` has 4 s left and needs 5
    held.release()
    await settle()
    with pytest.raises(Shed) as info:
        await late
    assert info.value.reason == "expired_in_queue" and info.value.slack_s == 15.0
    assert patient.done() and q.inflight == 1 and q.queued() == 0
    assert q.stats.shed == {"expired_in_queue": 1} and q.stats.admitted == 3


async def test_waiter_leaves_when_its_last_start_passes() -> None:
    """A queued request leaves at the last instant it could still start, long before its
    admission budget runs out."""
    q = AdmissionQueue(limit=1, max_queue=10, batch_share=0.5)
    held = await q.acquire("interactive", Deadline.after(60.0))
    goal = FixedGoal(Deadline.after(0.2, "ttft"), 0.15)
    with pytest.raises(Shed) as info:
        await q.acquire("interactive", Deadline.after(60.0), goal)
    assert info.value.reason == "expired_in_queue" and q.queued() == 0
    held.release()
    assert q.inflight == 0


@dataclass
class LearningGoal:
    """A goal whose prediction appears while it waits (the replica learned meanwhile)."""

    deadline: Deadline
    service: float | None = None

    def slack_s(self) -> float | None:
        return None if self.service is None else self.deadline.remaining() - self.service

    def hold_s(self) -> float | None:
        return None


async def test_head_of_queue_judges_with_the_latest_prediction() -> None:
    """A waiter admitted with no prediction is judged at the head with what is known then."""
    clock = FakeClock()
    q = make(clock)
    held = await q.acquire("interactive", far(clock))
    goal = LearningGoal(within(clock, 10.0))
    waiter = spawn(q.acquire("interactive", far(clock), goal))
    await settle()
    clock.now += 8.0
    goal.service = 3.0
    held.release()
    await settle()
    with pytest.raises(Shed) as info:
        await waiter
    assert info.value.reason == "expired_in_queue" and q.inflight == 0


async def test_disabled_admission_ignores_goals() -> None:
    """With admission off, nothing is refused for its outcome either."""
    clock = FakeClock()
    q = make(clock, max_queue=0, enabled=False)
    await q.acquire("interactive", far(clock), FixedGoal(within(clock, 0.1), 5.0))
    assert q.inflight == 1 and q.stats.shed == {}


class GainingGoal:
    """A goal that gains time once told to, and says when the queue judged it again."""

    def __init__(self, slack: float) -> None:
        self.slack = slack
        self.calls = 0
        self.judged_again = asyncio.Event()

    def slack_s(self) -> float | None:
        self.calls += 1
        if self.calls > 1:
            self.judged_again.set()
        return self.slack

    def hold_s(self) -> float | None:
        return None


async def test_a_goal_that_gains_time_keeps_its_place_in_the_queue() -> None:
    """A waiter whose goal gained time while it queued (a shared call joined by a caller with
    more time) stays past its first last start, and takes the slot when it frees."""
    clock = FakeClock()
    q = make(clock)
    held = await q.acquire("interactive", far(clock))
    goal = GainingGoal(0.01)  # its last start comes 10 ms from now
    waiter = spawn(q.acquire("interactive", far(clock), goal))
    await settle()
    goal.slack = 100.0
    judged = asyncio.ensure_future(goal.judged_again.wait())
    await asyncio.wait([waiter, judged], return_when=asyncio.FIRST_COMPLETED)
    await settle()
    assert not waiter.done() and q.queued() == 1
    held.release()
    await settle()
    assert waiter.done() and q.inflight == 1 and q.stats.shed == {}
