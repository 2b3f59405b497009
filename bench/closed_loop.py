"""The closed loop shared by the HTTP load generator and the bare gRPC client: `concurrency`
workers, each starting its next request when the previous one ends, first warming up, then
measuring. Bounded by time and by count; a request that started while measuring is counted."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench.stats import Recorder

# One request: records itself into the recorder it is given.
Request = Callable[[Recorder], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class LoopBounds:
    """How long and how much. A phase that has fewer than `min_requests` measured when its
    duration ends keeps going, for at most `overtime_s` more (a slow or overloaded server
    must still give a few samples, and a dead one must not hang the run)."""

    concurrency: int
    warmup_s: float
    duration_s: float
    max_requests: int
    min_requests: int
    overtime_s: float
    request_timeout_s: float

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoopBounds:
        return cls(
            concurrency=int(data["concurrency"]),
            warmup_s=float(data["warmup_s"]),
            duration_s=float(data["duration_s"]),
            max_requests=int(data["max_requests"]),
            min_requests=int(data.get("min_requests", 1)),
            overtime_s=float(data.get("overtime_s", 0.0)),
            request_timeout_s=float(data["request_timeout_s"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "warmup_s": self.warmup_s,
            "duration_s": self.duration_s,
            "max_requests": self.max_requests,
            "min_requests": self.min_requests,
            "overtime_s": self.overtime_s,
            "request_timeout_s": self.request_timeout_s,
        }


async def drive(request: Request, bounds: LoopBounds) -> dict[str, Any]:
    """Run the loop; returns `LoadResult.to_json()` plus whole-phase counters."""
    recorder = Recorder()
    warm = Recorder()
    cpu_start = time.process_time()
    wall_start = time.perf_counter()
    measure_from = wall_start + bounds.warmup_s
    stop_at = measure_from + bounds.duration_s
    give_up_at = stop_at + bounds.overtime_s
    last_end = measure_from

    def more() -> bool:
        now = time.perf_counter()
        if recorder.completed >= bounds.max_requests or now >= give_up_at:
            return False
        return now < stop_at or recorder.completed < bounds.min_requests

    async def worker() -> None:
        nonlocal last_end
        while more():
            measuring = time.perf_counter() >= measure_from
            await request(recorder if measuring else warm)
            if measuring:
                last_end = max(last_end, time.perf_counter())

    hard_limit = bounds.warmup_s + bounds.duration_s + bounds.overtime_s
    async with asyncio.timeout(hard_limit + bounds.request_timeout_s + 10):
        await asyncio.gather(*(worker() for _ in range(bounds.concurrency)))
    wall = time.perf_counter() - wall_start
    cpu = time.process_time() - cpu_start
    result = recorder.result(max(last_end - measure_from, 1e-9), cpu).to_json()
    result["phase_requests"] = recorder.completed + warm.completed
    result["phase_wall_s"] = wall
    result["client_cpu_fraction"] = cpu / wall if wall > 0 else math.nan
    return result
