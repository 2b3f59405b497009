"""A recent-window quantile, to decide whether an optional stage still fits the budget."""

from __future__ import annotations

import math


class RecentQuantile:
    """The q-quantile of the last `window` samples, recomputed lazily.

    Recomputing every `every` samples keeps `add` O(1) on the request path. The allowed lag
    also shrinks with the number of samples held (one in 16), so that right after startup a
    few slow samples show at once instead of hiding behind one fast first sample.
    """

    __slots__ = ("_cached", "_every", "_next", "_q", "_samples", "_since", "_window")

    def __init__(self, q: float = 0.95, window: int = 256, every: int = 16) -> None:
        if not 0.0 < q < 1.0 or window < 1 or every < 1:
            raise ValueError("need 0 < q < 1, window >= 1, every >= 1")
        self._q = q
        self._window = window
        self._every = every
        self._samples: list[float] = []
        self._next = 0
        self._since = 0
        self._cached: float | None = None

    def add(self, value: float) -> None:
        if len(self._samples) < self._window:
            self._samples.append(value)
        else:
            self._samples[self._next] = value
            self._next = (self._next + 1) % self._window
        self._since += 1
        if self._since >= max(1, min(self._every, len(self._samples) // 16)):
            self._cached = None

    def reset(self) -> None:
        """Forget every sample."""
        self._samples.clear()
        self._next = 0
        self._since = 0
        self._cached = None

    def value(self) -> float | None:
        """The quantile, or None before the first sample."""
        if self._cached is None and self._samples:
            ordered = sorted(self._samples)
            index = min(len(ordered) - 1, math.ceil(self._q * len(ordered)) - 1)
            self._cached = ordered[max(0, index)]
            self._since = 0
        return self._cached
