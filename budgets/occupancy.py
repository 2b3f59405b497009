"""How full one replica is: the slots our requests hold and until when, the load the backend
itself reports, batch's cap and guaranteed share, and how long a request holds a slot."""

from __future__ import annotations

import math

from budgets.goal import Goal
from budgets.priority import Priority
from budgets.queue_wait import RunningEnds


class Occupancy:
    """The slot accounting of one replica's `AdmissionQueue`; `WaitingLines` adds the waiting
    lines."""

    def __init__(
        self,
        *,
        limit: int,
        batch_share: float,
        batch_min_share: float,
        enabled: bool,
        service_time_alpha: float,
    ) -> None:
        if not 0.0 < service_time_alpha <= 1.0:
            raise ValueError("service_time_alpha must be in (0, 1]")
        self._limit = limit
        self.batch_share = batch_share
        self.batch_min_share = batch_min_share
        self.enabled = enabled
        self._alpha = service_time_alpha
        self._service: float | None = None
        self._inflight = 0
        self._batch_inflight = 0
        self._ends = RunningEnds()
        self._reported_running = 0
        self._reported_waiting = 0

    @property
    def inflight(self) -> int:
        return self._inflight

    def occupied(self) -> int:
        """Requests the backend holds by our best count: ours in flight, or its own report
        (running + waiting, less ours that ended since) when that is higher."""
        return max(self._inflight, self._reported_running + self._reported_waiting)

    def service_time(self) -> float | None:
        """EWMA of how long requests held a slot; None before the first release."""
        return self._service

    def _batch_cap(self) -> int:
        # The epsilon keeps float error from flooring e.g. 100 * 0.29 to 28.
        return max(1, math.floor(self._limit * self.batch_share + 1e-9))

    def _batch_min(self) -> int:
        if self.batch_min_share <= 0.0:
            return 0
        return min(self._batch_cap(), max(1, math.floor(self._limit * self.batch_min_share + 1e-9)))

    def _hold(self, goal: Goal | None) -> float:
        hold = goal.hold_s() if goal is not None else None
        if hold is None:
            hold = self._service if self._service is not None else 0.0
        return hold

    def _can_admit(self, priority: Priority) -> bool:
        if not self.enabled or self._inflight == 0:
            return True
        reported = self._reported_running + self._reported_waiting
        if max(self._inflight, reported) >= self._limit:
            return False
        return priority == "interactive" or self._batch_inflight < self._batch_cap()

    def _take(self, priority: Priority, end: float) -> None:
        self._inflight += 1
        if priority == "batch":
            self._batch_inflight += 1
        self._ends.add(end, priority == "batch")

    def _free(self, priority: Priority, end: float) -> None:
        self._inflight -= 1
        if priority == "batch":
            self._batch_inflight -= 1
        self._ends.remove(end, priority == "batch")
