"""The stages one request went through, when each began and how long it took: the source of
`Server-Timing`, of the stage metrics and of the stage spans."""

from __future__ import annotations

from typing import NamedTuple

from budgets.deadline import Clock
from core.stages import StageName


class Stage(NamedTuple):
    name: str
    start: float
    duration: float
    replica: str | None = None  # the replica chosen by then (admission and backend stages)
    error: str | None = None  # the error code a backend call ended with, when it failed


class Timeline:
    """Stages in the order they ended, on the request's monotonic clock. Cheap: one tuple per
    stage; spans and metrics are derived from it once the request is over."""

    __slots__ = ("clock", "first_token_at", "replica", "stages", "started")

    def __init__(self, clock: Clock, started: float | None = None) -> None:
        self.clock = clock
        self.started = clock() if started is None else started
        self.stages: list[Stage] = []
        self.first_token_at: float | None = None
        self.replica: str | None = None

    def record(self, stage: StageName, since: float, error: str | None = None) -> float:
        """Record `stage` as having run from `since` until now (on the replica chosen by then,
        failing with `error` if given); returns its duration."""
        duration = self.clock() - since
        self.stages.append(Stage(stage.value, since, duration, self.replica, error))
        return duration

    def elapsed(self) -> float:
        return self.clock() - self.started

    def server_timing(self, *, total: bool = False) -> str:
        """The `Server-Timing` value, durations in milliseconds; `total` appends the whole."""
        parts = [f"{stage.name};dur={stage.duration * 1000:.2f}" for stage in self.stages]
        if total:
            parts.append(f"total;dur={self.elapsed() * 1000:.2f}")
        return ", ".join(parts)
