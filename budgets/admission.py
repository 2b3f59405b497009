"""Admission control for one backend replica: concurrency slots, two priority queues, shedding.

The fleet keeps one `AdmissionQueue` per replica and wraps every backend call in
`slot = await queue.acquire(priority, deadline)` ... `slot.release()`. A refusal is a `Shed`,
which the gateway answers with 429 and Retry-After.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from budgets.deadline import Deadline

Priority = Literal["interactive", "batch"]
PRIORITIES: tuple[Priority, ...] = ("interactive", "batch")
ShedReason = Literal["queue_full", "predicted_wait", "queue_timeout"]


class Shed(Exception):
    """Admission refused: the caller answers 429 with Retry-After.

    `predicted_wait_s` is the wait estimate behind the decision (0 when unknown).
    `retry_after_s` is that estimate — the time for the queue ahead of a newcomer to drain —
    or one service time when the estimate is 0, or 1 s with no service history; never < 1 ms.
    """

    def __init__(
        self, reason: ShedReason, priority: Priority, predicted_wait_s: float, retry_after_s: float
    ) -> None:
        super().__init__(f"{priority} request shed: {reason} (retry after {retry_after_s:.3f}s)")
        self.reason: ShedReason = reason
        self.priority: Priority = priority
        self.predicted_wait_s = predicted_wait_s
        self.retry_after_s = retry_after_s


def _per_priority() -> dict[Priority, int]:
    return dict.fromkeys(PRIORITIES, 0)


@dataclass(slots=True)
class AdmissionStats:
    """Cumulative counters."""

    admitted: int = 0
    shed_queue_full: int = 0
    shed_predicted: int = 0
    shed_timeout: int = 0
    shed_by_priority: dict[Priority, int] = field(default_factory=_per_priority)


class Slot:
    """One admitted request's hold on a concurrency slot; `release()` is idempotent."""

    __slots__ = ("_admitted_at", "_owner", "_priority", "_released")

    def __init__(self, owner: AdmissionQueue, priority: Priority, admitted_at: float) -> None:
        self._owner = owner
        self._priority: Priority = priority
        self._admitted_at = admitted_at
        self._released = False

    def release(self) -> None:
        """Free the slot, record the service time and hand the slot to the next waiter."""
        if not self._released:
            self._released = True
            self._owner._release(self._priority, self._admitted_at)


class AdmissionQueue:
    """The admission queue of one replica.

    Occupancy is `max(inflight, reported running + waiting)`: the backend's own report is a
    lower bound on its load (other gateways share it). Stale reports never block forever: with
    none of our requests in flight, the next request (or head waiter) is admitted regardless,
    and each release also decays the remembered report by one. `interactive` may fill all
    `limit` slots; `batch` holds at most `max(1, floor(limit * batch_share))` of them. Waiters
    queue FIFO per class; freed slots go to interactive waiters first. With `enabled=False`
    nothing waits or sheds; slots are only counted (for load-based routing).
    """

    def __init__(
        self,
        *,
        limit: int,
        max_queue: int,
        batch_share: float,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
        service_time_alpha: float = 0.2,
    ) -> None:
        if limit < 1 or max_queue < 0 or not 0.0 <= batch_share <= 1.0:
            raise ValueError("need limit >= 1, max_queue >= 0, 0 <= batch_share <= 1")
        if not 0.0 < service_time_alpha <= 1.0:
            raise ValueError("service_time_alpha must be in (0, 1]")
        self._limit = limit
        self.max_queue = max_queue
        self.batch_share = batch_share
        self.enabled = enabled
        self.stats = AdmissionStats()
        self._clock = clock
        self._alpha = service_time_alpha
        self._service: float | None = None
        self._inflight = 0
        self._batch_inflight = 0
        self._reported_running = 0
        self._reported_waiting = 0
        # Futures resolve to the admission instant. Abandoned waiters stay in the deque (their
        # future is done) until skipped or compacted; `_live` counts the rest.
        self._queues: dict[Priority, deque[asyncio.Future[float]]] = {
            p: deque() for p in PRIORITIES
        }
        self._live = _per_priority()

    @property
    def limit(self) -> int:
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        self._limit = value
        self._dispatch()

    def resize(self, limit: int) -> None:
        """Set the slot count and admit any waiters it now allows."""
        self.limit = limit

    @property
    def inflight(self) -> int:
        return self._inflight

    def queued(self, priority: Priority | None = None) -> int:
        if priority is None:
            return self._live["interactive"] + self._live["batch"]
        return self._live[priority]

    def service_time(self) -> float | None:
        """EWMA of service durations; None before the first release."""
        return self._service

    def observe_backend(self, running: int, waiting: int) -> None:
        """Record the backend's own load from its last health poll."""
        self._reported_running = max(0, running)
        self._reported_waiting = max(0, waiting)
        self._dispatch()

    def predicted_wait(self, priority: Priority) -> float:
        """Seconds a newcomer of this class would queue: `(ahead + 1) * S / slots`.

        `ahead` is our waiters it would queue behind plus the engine's reported waiting queue;
        0 when it would be admitted now or when there is no service history yet.
        """
        if self._service is None or (self._ahead(priority) == 0 and self._can_admit(priority)):
            return 0.0
        slots = self._limit if priority == "interactive" else self._batch_cap()
        ahead = self._ahead(priority) + self._reported_waiting
        return (ahead + 1) * self._service / max(1, slots)

    async def acquire(self, priority: Priority, deadline: Deadline) -> Slot:
        """Wait for a slot, or raise `Shed` (queue full, predicted wait past the deadline, or
        the deadline firing while queued)."""
        if self._live["interactive"] or self._live["batch"]:
            self._dispatch()  # `limit` may have grown since the last release
        if self._ahead(priority) == 0 and self._can_admit(priority):
            self._take(priority)
            self.stats.admitted += 1
            return Slot(self, priority, self._clock())
        if self._live[priority] >= self.max_queue:
            raise self._shed("queue_full", priority)
        remaining = deadline.remaining()
        wait = self.predicted_wait(priority)
        if self._service is not None and wait > remaining:
            raise self._shed("predicted_wait", priority, wait)
        if remaining <= 0.0:
            raise self._shed("queue_timeout", priority)

        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._queues[priority].append(fut)
        self._live[priority] += 1
        try:
            async with asyncio.timeout(remaining):
                admitted_at = await fut
        except BaseException as exc:
            if fut.done() and not fut.cancelled():
                # Handed a slot in the same loop step as the timeout/cancellation: give it back.
                self._free(priority)
                self._dispatch()
            else:
                fut.cancel()
                self._abandon(priority)
            if isinstance(exc, TimeoutError):
                raise self._shed("queue_timeout", priority) from None
            raise
        self.stats.admitted += 1
        return Slot(self, priority, admitted_at)

    def _batch_cap(self) -> int:
        # The epsilon keeps float error from flooring e.g. 100 * 0.29 to 28.
        return max(1, math.floor(self._limit * self.batch_share + 1e-9))

    def _ahead(self, priority: Priority) -> int:
        live = self._live["interactive"]
        return live if priority == "interactive" else live + self._live["batch"]

    def _can_admit(self, priority: Priority) -> bool:
        if not self.enabled or self._inflight == 0:
            return True
        reported = self._reported_running + self._reported_waiting
        if max(self._inflight, reported) >= self._limit:
            return False
        return priority == "interactive" or self._batch_inflight < self._batch_cap()

    def _take(self, priority: Priority) -> None:
        self._inflight += 1
        if priority == "batch":
            self._batch_inflight += 1

    def _free(self, priority: Priority) -> None:
        self._inflight -= 1
        if priority == "batch":
            self._batch_inflight -= 1

    def _release(self, priority: Priority, admitted_at: float) -> None:
        self._free(priority)
        # One of ours left the engine: its next waiting request starts running.
        if self._reported_waiting:
            self._reported_waiting -= 1
        elif self._reported_running:
            self._reported_running -= 1
        duration = self._clock() - admitted_at
        if duration >= 0.0:
            s = self._service
            self._service = duration if s is None else s + self._alpha * (duration - s)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free slots to live waiters, interactive first."""
        for priority in PRIORITIES:
            queue = self._queues[priority]
            while queue:
                if queue[0].done():  # abandoned waiter
                    queue.popleft()
                    continue
                if not self._can_admit(priority):
                    # Batch needs everything interactive needs, so a blocked interactive
                    # waiter blocks batch too.
                    return
                self._live[priority] -= 1
                self._take(priority)
                queue.popleft().set_result(self._clock())

    def _abandon(self, priority: Priority) -> None:
        self._live[priority] -= 1
        queue = self._queues[priority]
        if len(queue) > 2 * self._live[priority] + 16:  # mostly dead: compact, amortized O(1)
            self._queues[priority] = deque(f for f in queue if not f.done())

    def _shed(self, reason: ShedReason, priority: Priority, wait: float | None = None) -> Shed:
        if wait is None:
            wait = self.predicted_wait(priority)
        retry = wait or (self._service if self._service is not None else 1.0)
        stats = self.stats
        if reason == "queue_full":
            stats.shed_queue_full += 1
        elif reason == "predicted_wait":
            stats.shed_predicted += 1
        else:
            stats.shed_timeout += 1
        stats.shed_by_priority[priority] += 1
        return Shed(reason, priority, wait, max(0.001, retry))
