"""Per-request observations added up in plain Python, handed to prometheus-client in batches.

A prometheus-client histogram observation takes a lock twice and scans the buckets (~2 us);
a request records about ten. Here an observation is a bisect and two additions; `flush`
(once a second, and before every scrape) moves the totals into the real metric children,
which in multiprocess mode are the shared memory-mapped files.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any


class HistogramBatch:
    """Pending observations of one labelled histogram child."""

    __slots__ = ("_bounds", "_child", "_counts", "_sum")

    def __init__(self, child: Any, buckets: Sequence[float]) -> None:
        self._child = child
        self._bounds = [*buckets, math.inf] if buckets[-1] != math.inf else list(buckets)
        self._counts = [0] * len(self._bounds)
        self._sum = 0.0

    def observe(self, value: float) -> None:
        # Prometheus buckets are `le`: the first bound >= value.
        self._counts[bisect_left(self._bounds, value)] += 1
        self._sum += value

    def flush(self) -> None:
        counts = self._counts
        if not any(counts):
            return
        # prometheus-client keeps one non-cumulative value per bucket plus the sum;
        # `Histogram.observe` increments exactly these.
        buckets = self._child._buckets
        for index, count in enumerate(counts):
            if count:
                buckets[index].inc(count)
                counts[index] = 0
        self._child._sum.inc(self._sum)
        self._sum = 0.0


class CounterBatch:
    """Pending increments of one labelled counter child."""

    __slots__ = ("_child", "_pending")

    def __init__(self, child: Any) -> None:
        self._child = child
        self._pending = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self._pending += amount

    def flush(self) -> None:
        if self._pending:
            self._child.inc(self._pending)
            self._pending = 0.0
