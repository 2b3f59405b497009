"""The progress watch: a whole answer's first-token and stall budgets."""

from __future__ import annotations

import asyncio

from budgets.deadline import Deadline
from budgets.progress_watch import ProgressWatch
from core.stages import StageName


async def _watched(first_token_s: float, stall_s: float, ticks: int) -> ProgressWatch:
    """Run a call that ticks `ticks` times (two tokens each) and then waits forever; the watch
    once it fired."""
    task = asyncio.current_task()
    assert task is not None
    watch = ProgressWatch(task, Deadline.after(first_token_s, StageName.TTFT), stall_s)
    try:
        for _ in range(ticks):
            watch.tick(2)
            await asyncio.sleep(0)
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        task.uncancel()
    finally:
        watch.stop()
    return watch


async def test_no_first_token_fires_the_first_token_budget() -> None:
    """Nothing arrives: the watch cancels the call and names the first-token deadline."""
    watch = await _watched(0.05, 60.0, ticks=0)
    assert (watch.fired, watch.produced) == ("ttft", 0)


async def test_a_gap_after_the_first_token_fires_stall() -> None:
    """Tokens came, then none for the stall budget: the watch names stall, long before the
    first-token deadline."""
    watch = await asyncio.wait_for(_watched(60.0, 0.05, ticks=3), timeout=30.0)
    assert (watch.fired, watch.produced) == ("stall", 6)
