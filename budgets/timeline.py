"""The stages one request went through and how long each took: the source of `Server-Timing`."""

from __future__ import annotations

from budgets.deadline import Clock


class Timeline:
    """Stage durations in the order they ended. Cheap: one tuple per stage."""

    __slots__ = ("clock", "stages", "started")

    def __init__(self, clock: Clock, started: float | None = None) -> None:
        self.clock = clock
        self.started = clock() if started is None else started
        self.stages: list[tuple[str, float]] = []

    def record(self, stage: str, since: float) -> float:
        """Record `stage` as having run from `since` until now; returns its duration."""
        duration = self.clock() - since
        self.stages.append((stage, duration))
        return duration

    def elapsed(self) -> float:
        return self.clock() - self.started

    def server_timing(self, *, total: bool = False) -> str:
        """The `Server-Timing` value, durations in milliseconds; `total` appends the whole."""
        parts = [f"{stage};dur={duration * 1000:.2f}" for stage, duration in self.stages]
        if total:
            parts.append(f"total;dur={self.elapsed() * 1000:.2f}")
        return ", ".join(parts)
