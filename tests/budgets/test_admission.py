"""The per-replica admission queue: slots, priorities, shedding, races."""

from __future__ import annotations

import itertools

import pytest

from budgets.admission import AdmissionQueue
from budgets.deadline import Deadline
from budgets.priority import Priority
from budgets.shed import Shed
from budgets.slots import Slot
from tests.budgets.queue_helpers import (
    FakeClock,
    cancel_all,
    far,
    make,
    settle,
    spawn,
    warm,
)


async def test_fast_path_admits_without_queueing() -> None:
    """A free slot is granted at once with nothing queued."""
    clock = FakeClock()
    q = make(clock, limit=2)
    slot = await q.acquire("interactive", far(clock))
    assert q.inflight == 1 and q.queued() == 0 and q.stats.admitted == 1
    slot.release()
    assert q.inflight == 0


async def test_limit_respected() -> None:
    """Beyond `limit` slots, requests queue until a release."""
    clock = FakeClock()
    q = make(clock, limit=2)
    a = await q.acquire("interactive", far(clock))
    await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", far(clock)))
    await settle()
    assert not waiter.done() and q.queued("interactive") == 1 and q.inflight == 2
    a.release()
    await settle()
    assert waiter.done() and q.inflight == 2 and q.queued() == 0


async def test_fifo_within_a_class() -> None:
    """Waiters of one class are served in arrival order."""
    clock = FakeClock()
    q = make(clock)
    held = await q.acquire("interactive", far(clock))
    order: list[int] = []

    async def wait(i: int) -> Slot:
        slot = await q.acquire("interactive", far(clock))
        order.append(i)
        return slot

    tasks = [spawn(wait(i)) for i in range(3)]
    await settle()
    held.release()
    for task in tasks:
        await settle()
        (await task).release()
    assert order == [0, 1, 2]


async def test_interactive_served_before_batch() -> None:
    """On release, a later interactive waiter goes before an earlier batch waiter."""
    clock = FakeClock()
    q = make(clock)
    held = await q.acquire("interactive", far(clock))
    batch = spawn(q.acquire("batch", far(clock)))
    await settle()
    interactive = spawn(q.acquire("interactive", far(clock)))
    await settle()
    held.release()
    await settle()
    assert interactive.done() and not batch.done()
    interactive.result().release()
    await settle()
    assert batch.done() and q.queued() == 0


async def test_batch_cap_leaves_slots_for_interactive() -> None:
    """A batch flood holds at most floor(limit * share) slots; interactive still gets in."""
    clock = FakeClock()
    q = make(clock, limit=4)
    tasks = [spawn(q.acquire("batch", far(clock))) for _ in range(10)]
    await settle()
    assert sum(t.done() for t in tasks) == 2 and q.queued("batch") == 8
    await q.acquire("interactive", far(clock))
    assert q.inflight == 3 and q.queued("interactive") == 0
    await cancel_all(*tasks)


async def test_queue_full_sheds() -> None:
    """With `max_queue` waiters already queued, the next one is shed at once."""
    clock = FakeClock()
    q = make(clock, max_queue=1)
    await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", far(clock)))
    await settle()
    with pytest.raises(Shed) as info:
        await q.acquire("interactive", far(clock))
    assert info.value.reason == "queue_full" and info.value.priority == "interactive"
    assert info.value.retry_after_s == 1.0  # no service history
    assert q.stats.shed == {"queue_full": 1} and q.stats.shed_by_priority["interactive"] == 1
    await cancel_all(waiter)


async def test_service_time_ewma() -> None:
    """The first duration sets S; later ones move it by alpha; negative ones are ignored."""
    clock = FakeClock()
    q = make(clock)
    assert q.service_time() is None
    await warm(q, clock, 1.0, 3.0)
    assert q.service_time() == pytest.approx(1.4)
    slot = await q.acquire("interactive", far(clock))
    clock.now -= 5.0
    slot.release()
    assert q.service_time() == pytest.approx(1.4) and q.inflight == 0


async def test_predicted_wait_sheds_with_exact_math() -> None:
    """S=1, limit 2, 3 queued: (3+1)*1/2 = 2 s > 1.5 s left sheds without queueing."""
    clock = FakeClock()
    q = make(clock, limit=2)
    await warm(q, clock, 1.0, 1.0)
    assert q.service_time() == 1.0
    assert q.predicted_wait("interactive") == 0.0  # a slot is free
    await q.acquire("interactive", far(clock))
    await q.acquire("interactive", far(clock))
    waiters = [spawn(q.acquire("interactive", far(clock))) for _ in range(3)]
    await settle()
    assert q.predicted_wait("interactive") == 2.0
    with pytest.raises(Shed) as info:
        await q.acquire("interactive", Deadline(clock.now + 1.5, "ttft", clock))
    shed = info.value
    assert shed.reason == "predicted_wait" and shed.predicted_wait_s == 2.0
    assert shed.retry_after_s == 2.0 and q.queued() == 3 and q.stats.shed == {"predicted_wait": 1}
    await cancel_all(*waiters)


async def test_a_burst_of_refusals_spreads_its_retries() -> None:
    """Twenty requests refused by the same 2 s wait are told to retry from 2 s to 3 s, one
    every 50 ms or so, not all at 2 s (their retries would be the next burst)."""
    clock = FakeClock()
    q = make(clock, limit=2)
    await warm(q, clock, 1.0, 1.0)
    await q.acquire("interactive", far(clock))
    await q.acquire("interactive", far(clock))
    waiters = [spawn(q.acquire("interactive", far(clock))) for _ in range(3)]
    await settle()
    retries = []
    for _ in range(20):
        with pytest.raises(Shed) as info:
            await q.acquire("interactive", Deadline(clock.now + 1.5, "ttft", clock))
        assert info.value.predicted_wait_s == 2.0
        retries.append(info.value.retry_after_s)
    retries.sort()
    assert retries[0] == 2.0 and retries[-1] < 3.0
    assert min(b - a for a, b in itertools.pairwise(retries)) > 0.02
    await cancel_all(*waiters)


async def test_no_prediction_shedding_without_history() -> None:
    """With no service time yet, a tight deadline still queues."""
    clock = FakeClock()
    q = make(clock)
    await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", Deadline(clock.now + 0.001, "ttft", clock)))
    await settle()
    assert q.queued() == 1 and not waiter.done()
    await cancel_all(waiter)


async def test_queue_timeout_removes_waiter() -> None:
    """A waiter whose deadline fires is shed and later releases skip it."""
    q = AdmissionQueue(limit=1, max_queue=10, batch_share=0.5)
    held = await q.acquire("batch", Deadline.after(10.0))
    with pytest.raises(Shed) as info:
        await q.acquire("batch", Deadline.after(0.05))
    assert info.value.reason == "queue_timeout" and info.value.priority == "batch"
    assert q.queued() == 0 and q.stats.shed == {"queue_timeout": 1}
    held.release()
    assert q.inflight == 0
    await q.acquire("interactive", Deadline.after(10.0))
    assert q.inflight == 1


async def test_cancel_while_queued_does_not_leak() -> None:
    """Cancelling a queued waiter frees its place; the slot goes to no one."""
    clock = FakeClock()
    q = make(clock)
    held = await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", far(clock)))
    await settle()
    await cancel_all(waiter)
    assert waiter.cancelled() and q.queued() == 0
    held.release()
    assert q.inflight == 0


async def test_handed_slot_then_cancelled_gives_it_back() -> None:
    """A waiter cancelled in the step its slot was handed over returns the slot."""
    clock = FakeClock()
    q = make(clock)
    held = await q.acquire("interactive", far(clock))
    first = spawn(q.acquire("interactive", far(clock)))
    second = spawn(q.acquire("interactive", far(clock)))
    await settle()
    held.release()  # hands the slot to `first`, which has not run yet
    assert q.inflight == 1
    first.cancel()
    await settle()
    assert first.cancelled() and second.done() and q.inflight == 1
    second.result().release()
    assert q.inflight == 0 and q.stats.admitted == 2


async def test_disabled_never_waits_and_counts() -> None:
    """With admission off, every acquire is immediate and only counted."""
    clock = FakeClock()
    q = make(clock, max_queue=0, enabled=False)
    priorities: list[Priority] = ["batch", "batch", "batch", "interactive", "interactive"]
    slots = [await q.acquire(p, Deadline(clock.now, "total", clock)) for p in priorities]
    assert q.inflight == 5 and q.queued() == 0
    slots[0].release()
    assert q.inflight == 4


async def test_backend_load_reduces_slots_but_idle_still_admits() -> None:
    """Reported load fills slots, yet with nothing of ours in flight we always admit."""
    clock = FakeClock()
    q = make(clock, limit=4)
    q.observe_backend(running=4, waiting=2)
    first = await q.acquire("interactive", far(clock))
    waiter = spawn(q.acquire("interactive", far(clock)))
    await settle()
    assert not waiter.done()
    first.release()  # decays the stale report and leaves nothing in flight
    await settle()
    assert waiter.done() and q.inflight == 1
    blocked = spawn(q.acquire("interactive", far(clock)))
    await settle()
    assert not blocked.done()
    q.observe_backend(running=1, waiting=0)
    await settle()
    assert blocked.done() and q.inflight == 2


async def test_resize_admits_waiters() -> None:
    """Growing the limit admits queued waiters now, by resize() or at the next acquire."""
    clock = FakeClock()
    q = make(clock)
    await q.acquire("interactive", far(clock))
    waiters = [spawn(q.acquire("interactive", far(clock))) for _ in range(2)]
    await settle()
    q.resize(3)
    await settle()
    assert all(t.done() for t in waiters) and q.inflight == 3
    late = spawn(q.acquire("interactive", far(clock)))
    await settle()
    assert not late.done()
    q.limit = 4  # the attribute setter dispatches too
    await settle()
    assert late.done() and q.inflight == 4


async def test_release_is_idempotent() -> None:
    """A second release neither frees another slot nor records another sample."""
    clock = FakeClock()
    q = make(clock, limit=2)
    a = await q.acquire("interactive", far(clock))
    await q.acquire("interactive", far(clock))
    clock.now += 1.0
    a.release()
    clock.now += 9.0
    a.release()
    assert q.inflight == 1 and q.service_time() == 1.0
