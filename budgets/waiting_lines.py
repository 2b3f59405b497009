"""The waiting lines of one replica's admission queue: a queue of waiters per priority, and
how long a newcomer would wait in them."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from budgets.error_band import ErrorBand
from budgets.occupancy import Occupancy
from budgets.priority import PRIORITIES, Priority
from budgets.queue_wait import free_times, holds_ahead, simulated_wait
from budgets.slots import Waiter

# How fast the correction learned from recent waits fades once no waits come to refresh it
# (it refuses the requests that would): `budgets.error_band`.
WAIT_ERRORS_HALF_LIFE_S = 5.0


class WaitingLines(Occupancy):
    """The waiters of one replica's `AdmissionQueue`, which admits and sheds them. Waits are
    predicted from when the running requests should end and how long each waiter ahead should
    hold its slot, corrected by how wrong recent predictions were (`ErrorBand`), so a queue
    whose waits run long is judged more cautiously (while those errors are recent:
    `WAIT_ERRORS_HALF_LIFE_S`)."""

    def __init__(
        self,
        *,
        limit: int,
        max_queue: int,
        batch_share: float,
        batch_min_share: float,
        enabled: bool,
        clock: Callable[[], float],
        service_time_alpha: float,
    ) -> None:
        super().__init__(
            limit=limit,
            batch_share=batch_share,
            batch_min_share=batch_min_share,
            enabled=enabled,
            service_time_alpha=service_time_alpha,
        )
        self.max_queue = max_queue
        self._clock = clock
        # Abandoned waiters stay in the deque (their future is done) until skipped or
        # compacted; `_live` counts the rest.
        self._queues: dict[Priority, deque[Waiter]] = {p: deque() for p in PRIORITIES}
        self._live: dict[Priority, int] = dict.fromkeys(PRIORITIES, 0)
        self._wait_errors = {p: ErrorBand(half_life_s=WAIT_ERRORS_HALF_LIFE_S) for p in PRIORITIES}

    def queued(self, priority: Priority | None = None) -> int:
        if priority is None:
            return self._live["interactive"] + self._live["batch"]
        return self._live[priority]

    def predicted_wait(self, priority: Priority) -> float:
        """Seconds a newcomer of this class would queue, corrected by recent errors; 0 when it
        would be admitted now or when there is no service history yet."""
        return self._corrected(priority, self._raw_wait(priority))

    def known_wait(self, priority: Priority) -> float | None:
        """`predicted_wait`, but None when a newcomer would queue and there is no service
        history yet to tell for how long."""
        raw = self._raw_wait(priority)
        return None if raw is None else self._corrected(priority, raw)

    def _corrected(self, priority: Priority, raw: float | None) -> float:
        if raw is None or raw == 0.0:
            return 0.0
        return max(0.0, raw + self._wait_errors[priority].margin(now=self._clock()))

    def _ahead(self, priority: Priority) -> int:
        """Our waiters a newcomer of this class would queue behind."""
        live = self._live
        if priority == "batch":
            return live["interactive"] + live["batch"]
        owed = max(0, self._batch_min() - self._batch_inflight)  # batch's guarantee goes first
        return live["interactive"] + min(live["batch"], owed)

    def _raw_wait(self, priority: Priority) -> float | None:
        """The predicted wait before correction; 0 when admitted now, None when unknown."""
        if self._ahead(priority) == 0 and self._can_admit(priority):
            return 0.0
        service = self._service
        if service is None:
            return None
        guaranteed, others = self._batch_min(), 0
        queues: tuple[tuple[Priority, int], ...]
        if priority == "interactive":
            # Batch takes back the slots of its guarantee as they free whenever a batch request
            # is waiting by then: interactive does not count on them.
            ends, slots = self._ends.for_interactive(self._limit, guaranteed)
            others = max(0, self._reported_running - self._inflight)
            owed = max(0, guaranteed - self._batch_inflight)  # batch's guarantee goes first
            queues = (("batch", owed), ("interactive", self.max_queue))
        elif guaranteed and self._live["interactive"]:
            # Interactive is waiting too: batch advances on its guaranteed slots only.
            ends, slots = self._ends.for_batch(guaranteed), guaranteed
            queues = (("batch", self.max_queue),)
        else:
            slots = self._batch_cap()
            ends = self._ends.for_batch(slots)
            queues = (("interactive", self.max_queue), ("batch", self.max_queue))
        holds, unknown = holds_ahead([(self._queues[p], n, self._live[p]) for p, n in queues])
        now = self._clock()
        free_at = free_times(ends, slots, others, service, now)
        return simulated_wait(free_at, holds, unknown + self._reported_waiting, service, now)

    def _has_head(self, priority: Priority) -> bool:
        queue = self._queues[priority]
        while queue and queue[0].future.done():  # abandoned waiters
            queue.popleft()
        return bool(queue)

    def _note_wait(self, priority: Priority, waiter: Waiter, now: float) -> None:
        """Learn from how long a waiter really queued (a lower bound when it left early)."""
        if waiter.predicted is not None:
            self._wait_errors[priority].add(now - waiter.arrived - waiter.predicted, now)

    def _abandon(self, priority: Priority) -> None:
        self._live[priority] -= 1
        queue = self._queues[priority]
        if len(queue) > 2 * self._live[priority] + 16:  # mostly dead: compact, amortized O(1)
            self._queues[priority] = deque(w for w in queue if not w.future.done())
