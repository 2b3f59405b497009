"""How long a newcomer would wait in a replica's queue: when the running requests are
predicted to end, and the arithmetic behind `WaitingLines.predicted_wait`."""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence

from budgets.slots import Waiter

_SIMULATED = 256  # waiters ahead whose holds are simulated one by one; beyond, averages


class RunningEnds:
    """The predicted end instants of a replica's running requests (ours), sorted: all of them
    and batch's alone."""

    __slots__ = ("all", "batch")

    def __init__(self) -> None:
        self.all: list[float] = []
        self.batch: list[float] = []

    def add(self, end: float, batch: bool) -> None:
        insort(self.all, end)
        if batch:
            insort(self.batch, end)

    def remove(self, end: float, batch: bool) -> None:
        _remove(self.all, end)
        if batch:
            _remove(self.batch, end)

    def for_interactive(self, slots: int, guaranteed: int) -> tuple[list[float], int]:
        """The releases an interactive waiter can count on: not those of the slots batch may
        take back for its guarantee (the last `guaranteed` of its ends)."""
        if not guaranteed:
            return self.all, slots
        reserved = self.batch[max(0, len(self.batch) - guaranteed) :]
        return without(self.all, reserved), slots - len(reserved)

    def for_batch(self, guaranteed: int) -> list[float]:
        """The releases batch can count on while interactive waits too: its own requests'
        ends, and for guaranteed slots it does not hold yet, the next other releases."""
        missing = max(0, guaranteed - len(self.batch))
        return sorted(self.batch + without(self.all, self.batch)[:missing])


def _remove(ends: list[float], end: float) -> None:
    index = bisect_left(ends, end)
    if index < len(ends) and ends[index] == end:
        del ends[index]


def free_times(
    ends: Sequence[float], slots: int, others: int, service_s: float, now: float
) -> list[float]:
    """When each of `slots` slots frees up, soonest first (never before `now`).

    `ends` are the predicted end instants of our running requests (sorted); `others` slots are
    held by requests we cannot see (another gateway's), assumed half way through one service
    time; the rest are free now. With more running than slots (the limit shrank), the first
    releases free no usable slot.
    """
    times = sorted(
        [now] * max(0, slots - len(ends) - others)
        + [now + service_s / 2] * others
        + [max(now, end) for end in ends]
    )
    return times[max(0, len(times) - max(1, slots)) :]


def simulated_wait(
    free_at: Sequence[float], holds: Sequence[float], unknown: int, service_s: float, now: float
) -> float:
    """Seconds until a newcomer gets a slot. The requests ahead of it, in order, each take the
    slot that frees first and hold it for their predicted `holds`; `unknown` more requests
    ahead, whose holds are not known, add one service time each spread over the slots."""
    heap = list(free_at)
    heapq.heapify(heap)
    for hold in holds:
        heapq.heappush(heap, heapq.heappop(heap) + hold)
    return max(0.0, heap[0] - now) + unknown * service_s / max(1, len(heap))


def holds_ahead(queues: Sequence[tuple[Iterable[Waiter], int, int]]) -> tuple[list[float], int]:
    """The predicted holds of the waiters ahead of a newcomer in the order they will be
    served: from each (queue, how many of it go first, how many of it are live), skipping
    abandoned waiters; and how many more are ahead beyond those simulated."""
    holds: list[float] = []
    ahead = 0
    for queue, first, live in queues:
        count = min(first, live)
        ahead += count
        for waiter in queue:
            if count <= 0 or len(holds) >= _SIMULATED:
                break
            if not waiter.future.done():
                holds.append(waiter.hold)
                count -= 1
    return holds, ahead - len(holds)


def without(ends: Sequence[float], removed: Sequence[float]) -> list[float]:
    """`ends` less the values in `removed` (both sorted; each removed value once)."""
    kept: list[float] = []
    i = 0
    for end in ends:
        if i < len(removed) and end == removed[i]:
            i += 1
        else:
            kept.append(end)
    return kept
