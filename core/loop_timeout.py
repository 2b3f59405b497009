"""A timeout for a dependency's reply that does not count the event loop's own lag.

`asyncio.timeout(t)` fires `t` seconds after it starts, however busy the loop was meanwhile: a
burst of requests that keeps this process's loop busy for longer than `t` makes a fast
dependency look slow, since its reply sat unread in the socket (a burst of 60 requests on one
worker made loop turns of ~30 ms, and a limit script on a new connection needed up to 8 of
them, 250 ms, against Redis's ~0.3 ms). `loop_timeout(t)` counts time in steps of `t / steps`
(at least a millisecond, the loop's timer resolution): a timer that is rearmed when it runs,
so a step the loop was too busy to notice counts once, however late. It fires once every step
has passed, plus one turn of grace, so a reply already waiting is read first: on an idle loop
at about `t`, as `asyncio.timeout` does; on a loop that needs 30 ms a turn after about `steps`
turns. A timer costs nothing when the body is quicker than a step.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

DEFAULT_STEPS = 16
MIN_STEP_S = 0.001


@asynccontextmanager
async def loop_timeout(seconds: float, steps: int = DEFAULT_STEPS) -> AsyncIterator[None]:
    """Raise `TimeoutError` in the body once `seconds` have passed, counting a step the loop
    was too busy to notice once (see the module's docstring)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None) as timeout:
        counter = _Steps(loop, timeout, seconds, steps)
        try:
            yield
        finally:
            counter.handle.cancel()


class _Steps:
    """Counts the steps down, rearming its timer when it runs; the last one fires `timeout`."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, timeout: asyncio.Timeout, seconds: float, steps: int
    ) -> None:
        self._loop, self._timeout = loop, timeout
        self._step = max(seconds / steps, MIN_STEP_S)
        self._left = max(1, math.ceil(seconds / self._step - 1e-9))
        self.handle = loop.call_later(self._step, self._tick)

    def _tick(self) -> None:
        self._left -= 1
        if self._left > 0:
            self.handle = self._loop.call_later(self._step, self._tick)
        else:
            self._timeout.reschedule(self._loop.time())  # due now: fires on the next turn
