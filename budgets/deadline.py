"""Absolute, monotonic deadlines that stages receive instead of bare timeouts."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from core.stages import StageName

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Deadline:
    """An instant on a monotonic clock, named after the budget that set it."""

    at: float
    stage: str = StageName.TOTAL
    clock: Clock = field(default=time.monotonic, repr=False, compare=False)

    @classmethod
    def after(
        cls, seconds: float, stage: str = StageName.TOTAL, clock: Clock = time.monotonic
    ) -> Deadline:
        """A deadline `seconds` from now."""
        return cls(clock() + seconds, stage, clock)

    def remaining(self) -> float:
        """Seconds left; never negative."""
        return max(0.0, self.at - self.clock())

    @property
    def expired(self) -> bool:
        return self.clock() >= self.at

    def child(self, cap: float, stage: str) -> Deadline:
        """The earlier of this deadline and `cap` seconds from now.

        The child keeps the parent's name when the parent is the one that binds, so
        an error always names the budget that really ran out.
        """
        capped = self.clock() + cap
        if capped < self.at:
            return Deadline(capped, stage, self.clock)
        return self


class Remaining(Protocol):
    """A deadline as a waiter reads it: the seconds left, which may move while it waits (a
    shared call's, as callers join it and leave); a `Deadline`'s never does."""

    def remaining(self) -> float:
        """Seconds left now; never negative."""
        ...
