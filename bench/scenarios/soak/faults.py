"""The soak's fault schedule: every `fault_every_s` one fault for `fault_s`, the kinds in
rotation, none in the last tenth of the run (the verdict's end window stays clean)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

FaultKind = Literal["replica-partition", "redis-blackhole", "replica-errors", "replica-reset"]
ROTATION: tuple[FaultKind, ...] = (
    "replica-partition",
    "redis-blackhole",
    "replica-errors",
    "replica-reset",
)
DESCRIPTIONS: dict[FaultKind, str] = {
    "replica-partition": "replica 0 blackholed by its proxy (accepts, never answers)",
    "redis-blackhole": "Redis blackholed by its proxy",
    "replica-errors": "replica 1 answers every call INTERNAL (stand-in control API)",
    "replica-reset": "replica 1's proxy resets every connection",
}
CLEAN_TAIL = 0.1  # no fault starts or runs in the last tenth of the run


@dataclass(frozen=True, slots=True)
class FaultWindow:
    """One fault: seconds from the start of the traffic."""

    kind: FaultKind
    start_s: float
    end_s: float

    def covers(self, t: float, after_s: float = 0.0) -> bool:
        """`t` falls in the window or within `after_s` after it."""
        return self.start_s <= t < self.end_s + after_s


def schedule(duration_s: float, every_s: float, fault_s: float) -> list[FaultWindow]:
    """Faults at every_s, 2 every_s, ... that end before the clean tail."""
    windows: list[FaultWindow] = []
    start = every_s
    while start + fault_s <= duration_s * (1 - CLEAN_TAIL):
        kind = ROTATION[len(windows) % len(ROTATION)]
        windows.append(FaultWindow(kind, start, start + fault_s))
        start += every_s
    return windows


def in_any(windows: Sequence[FaultWindow], t: float, after_s: float = 0.0) -> bool:
    return any(w.covers(t, after_s) for w in windows)


class Injector(Protocol):
    """Turns a fault on and off (the stack knows how)."""

    async def apply(self, kind: FaultKind) -> None: ...

    async def clear(self, kind: FaultKind) -> None: ...


async def run_faults(
    injector: Injector, windows: Sequence[FaultWindow], start: float, log: list[str]
) -> None:
    """Apply and clear each window at its time (`start` is a monotonic instant); every fault
    is cleared even when the run is cancelled."""
    for window in windows:
        delay = start + window.start_s - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await injector.apply(window.kind)
        log.append(f"{time.monotonic() - start:7.1f} s: {window.kind} on")
        try:
            await asyncio.sleep(max(0.0, start + window.end_s - time.monotonic()))
        finally:
            await injector.clear(window.kind)
            log.append(f"{time.monotonic() - start:7.1f} s: {window.kind} off")
