"""One timer per streamed response that ends it when the backend stalls, the client stops
reading or the total budget runs out, without a timer operation per chunk."""

from __future__ import annotations

import asyncio
import math

from core.stages import StageName

STALL = StageName.STALL
TOTAL = StageName.TOTAL
SEND = "send"  # a write to the client outlasted the send timeout (not a budget of the request)


class StreamWatchdog:
    """Watches the waits and the writes of one consumer task.

    The consumer notes when each phase begins (`since`, loop time) and which it is
    (`waiting`: for the backend's next chunk; otherwise writing to the client). When the
    timer fires it checks that note: reaching the total deadline, a wait that has lasted the
    stall budget, or a write that has lasted the send timeout (a client that stopped
    reading: its send buffer is full) cancels the consumer and says which in `fired`;
    otherwise the timer is set again for when the current phase, or one that begins at once,
    would overrun. The consumer tells by `waiting` whether the cancellation cut a write short
    (then no more can be written).
    """

    __slots__ = (
        "_handle",
        "_loop",
        "_next_s",
        "_send_s",
        "_stall_s",
        "_task",
        "fired",
        "since",
        "total_at",
        "waiting",
    )

    def __init__(
        self, task: asyncio.Task[object], stall_s: float, total_s: float, send_s: float
    ) -> None:
        self._loop = loop = asyncio.get_running_loop()
        self._task = task
        self._stall_s = stall_s
        self._send_s = send_s
        self._next_s = min(stall_s, send_s)
        now = loop.time()
        self.total_at = now + total_s
        self.since = now
        self.waiting = False
        self.fired: str | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._arm(now)

    def _arm(self, now: float) -> None:
        # When the current phase would overrun, or a phase of the other kind begun now.
        limit = self._stall_s if self.waiting else self._send_s
        due = min(self.since + limit, now + self._next_s, self.total_at)
        self._handle = self._loop.call_at(max(due, now), self._check)

    def _check(self) -> None:
        now = self._loop.time()
        if now >= self.total_at:
            self._fire(TOTAL)
        elif self.waiting and now - self.since >= self._stall_s:
            self._fire(STALL)
        elif not self.waiting and now - self.since >= self._send_s:
            self._fire(SEND)
        else:
            self._arm(now)

    def _fire(self, stage: str) -> None:
        self._handle = None
        self.fired = stage
        self._task.cancel()

    def last_write(self) -> None:
        """The consumer writes the stream's end (or its error event): from now only the send
        timeout bounds it, the total being spent or nearly so."""
        now = self._loop.time()
        self.total_at = math.inf
        self.waiting = False
        self.since = now
        self.fired = None
        if self._handle is None:
            self._arm(now)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
