"""Admission control for one backend replica: concurrency slots, two priority queues, and
refusal of work that can no longer finish in time.

The fleet keeps one `AdmissionQueue` per replica and wraps every backend call in
`slot = await queue.acquire(priority, deadline, goal)` ... `slot.release()`. A refusal is a
`Shed`, which the gateway answers with 429 and Retry-After.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from budgets.deadline import Remaining
from budgets.goal import Goal
from budgets.priority import Priority
from budgets.shed import AdmissionStats, Shed, ShedReason
from budgets.slots import Slot, Waiter
from budgets.waiting_lines import WaitingLines

# Successive refusals' retries are spread over [1, 1 + RETRY_SPREAD] times the wait they are
# told, evenly: the k-th at the fractional part of k times the golden ratio's inverse, a
# sequence whose first n values always lie about 1/n apart.
RETRY_SPREAD = 0.5
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0

_REGAINED_S = 0.001
"""Time a waiter's goal must gain, past its last start, for it to keep waiting (so float noise
in a prediction that did not change never re-arms the wait)."""


class AdmissionQueue(WaitingLines):
    """The admission queue of one replica.

    Occupancy is `max(inflight, reported running + waiting)`: the backend's own report is a
    lower bound on its load (other gateways share it). Stale reports never block forever: with
    none of our requests in flight, the next request (or head waiter) is admitted regardless,
    and each release also decays the remembered report by one. `interactive` may fill all
    `limit` slots; `batch` holds at most `max(1, floor(limit * batch_share))` of them, and is
    guaranteed `max(1, floor(limit * batch_min_share))` (none when that share is 0): while it
    holds fewer and has waiters, a freed slot goes to batch first; otherwise interactive
    waiters go first. With `enabled=False` nothing waits or sheds; slots are only counted.

    A request that brings a `Goal` is refused when it cannot reach it: on arrival when the
    predicted wait exceeds what its goal has to spare, in the queue when that runs out (it
    leaves at the last instant it could still start), and at the head of the queue when it
    can no longer make it, by the waits `WaitingLines` predicts.
    """

    def __init__(
        self,
        *,
        limit: int,
        max_queue: int,
        batch_share: float,
        batch_min_share: float = 0.0,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
        service_time_alpha: float = 0.2,
    ) -> None:
        if limit < 1 or max_queue < 0 or not 0.0 <= batch_min_share <= batch_share <= 1.0:
            raise ValueError(
                "need limit >= 1, max_queue >= 0, 0 <= batch_min_share <= batch_share <= 1"
            )
        super().__init__(
            limit=limit,
            max_queue=max_queue,
            batch_share=batch_share,
            batch_min_share=batch_min_share,
            enabled=enabled,
            clock=clock,
            service_time_alpha=service_time_alpha,
        )
        self.stats = AdmissionStats()
        self._sheds = 0  # refusals so far, which place each one's retry in the spread

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

    def observe_backend(self, running: int, waiting: int) -> None:
        """Record the backend's own load from its last health poll."""
        self._reported_running = max(0, running)
        self._reported_waiting = max(0, waiting)
        self._dispatch()

    async def acquire(
        self, priority: Priority, deadline: Remaining, goal: Goal | None = None
    ) -> Slot:
        """Wait for a slot, or raise `Shed`: queue full, predicted wait past the admission
        `deadline`, goal out of reach (on arrival, in the queue or at its head), or the
        admission deadline firing while queued (read again when it comes: one that moved
        later keeps the waiter on)."""
        if self._live["interactive"] or self._live["batch"]:
            self._dispatch()  # `limit` may have grown since the last release
        known = goal.slack_s() if goal is not None and self.enabled else None
        slack = math.inf if known is None else known
        if self._ahead(priority) == 0 and self._can_admit(priority):
            if slack < 0.0:
                raise self._shed("predicted_outcome", priority, 0.0, known)
            now = self._clock()
            end = now + self._hold(goal)
            self._take(priority, end)
            self.stats.admitted += 1
            return Slot(self._release, priority, now, end)
        if self._live[priority] >= self.max_queue:
            raise self._shed("queue_full", priority)
        remaining = deadline.remaining()
        raw = self._raw_wait(priority)
        wait = self._corrected(priority, raw)
        if slack < (wait if raw is not None else 0.0):
            raise self._shed("predicted_outcome", priority, wait, known)
        if raw is not None and wait > remaining:
            raise self._shed("predicted_wait", priority, wait)
        if remaining <= 0.0:
            raise self._shed("queue_timeout", priority)

        waiter = Waiter(goal, self._clock(), raw, self._hold(goal))
        self._queues[priority].append(waiter)
        self._live[priority] += 1
        future = waiter.future
        try:
            handed = await self._turn(future, deadline, goal, min(remaining, slack))
        except BaseException as exc:
            if future.done() and not future.cancelled():
                if future.result():
                    # Handed a slot in the same loop step as the timeout/cancellation: give
                    # it back.
                    self._free(priority, waiter.end)
                    self._dispatch()
            else:
                future.cancel()
                self._abandon(priority)
                self._note_wait(priority, waiter, self._clock())
            if isinstance(exc, TimeoutError):
                left = _slack(goal)  # which bound the wait: the goal or the admission budget
                reason: ShedReason = (
                    "expired_in_queue" if left < deadline.remaining() else "queue_timeout"
                )
                raise self._shed(reason, priority, slack=known) from None
            raise
        if not handed:
            raise self._shed("expired_in_queue", priority, slack=known)
        self.stats.admitted += 1
        return Slot(self._release, priority, waiter.admitted_at, waiter.end)

    async def _turn(
        self, future: asyncio.Future[bool], deadline: Remaining, goal: Goal | None, wait: float
    ) -> bool:
        """The waiter's fate (`future`), or `TimeoutError` after `wait` seconds (when the
        admission `deadline` passes or the goal's last start does), unless the earlier of the
        two moved later meanwhile: a call shared by several callers, judged by the one with the
        most time and admitted until the latest's admission deadline, joined by one with more
        (or a replica that sped up). Then the wait goes on to the new end; a goal that lost time
        is dropped at the head of the queue instead."""
        end = self._clock() + wait
        while True:
            try:
                async with asyncio.timeout(end - self._clock()):
                    return await asyncio.shield(future)  # a wait that goes on keeps its place
            except TimeoutError:
                if future.done():
                    return future.result()
                later = self._clock() + min(deadline.remaining(), _slack(goal))
                if later <= end + _REGAINED_S:
                    raise
                end = later

    def _release(self, priority: Priority, admitted_at: float, end: float) -> None:
        self._free(priority, end)
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

    def _next_class(self) -> Priority | None:
        """Whose head waiter gets the next free slot, if any may have one now."""
        interactive, batch = self._has_head("interactive"), self._has_head("batch")
        if batch and self._batch_inflight < self._batch_min() and self._can_admit("batch"):
            return "batch"
        if interactive:
            # Batch needs everything interactive needs, so a blocked interactive waiter
            # blocks batch too.
            return "interactive" if self._can_admit("interactive") else None
        return "batch" if batch and self._can_admit("batch") else None

    def _dispatch(self) -> None:
        """Hand free slots to live waiters; drop, instead, a head waiter that can no longer
        reach its goal in time."""
        while (priority := self._next_class()) is not None:
            waiter = self._queues[priority].popleft()
            self._live[priority] -= 1
            now = self._clock()
            self._note_wait(priority, waiter, now)
            goal = waiter.goal
            if goal is not None and self.enabled:
                slack = goal.slack_s()
                if slack is not None and slack < 0.0:
                    waiter.future.set_result(False)
                    continue
            waiter.admitted_at = now
            waiter.end = now + self._hold(goal)
            self._take(priority, waiter.end)
            waiter.future.set_result(True)

    def _shed(
        self,
        reason: ShedReason,
        priority: Priority,
        wait: float | None = None,
        slack: float | None = None,
    ) -> Shed:
        if wait is None:
            wait = self.predicted_wait(priority)
        retry = wait or (self._service if self._service is not None else 1.0)
        self.stats.count_shed(reason, priority)
        spread = 1.0 + RETRY_SPREAD * (self._sheds * _GOLDEN % 1.0)
        self._sheds += 1
        return Shed(reason, priority, wait, max(0.001, retry) * spread, slack, spread)


def _slack(goal: Goal | None) -> float:
    """What a goal has to spare now; unlimited when unknown."""
    known = goal.slack_s() if goal is not None else None
    return math.inf if known is None else known
