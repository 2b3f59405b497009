"""One timer that bounds a call reporting its progress token by token (a whole answer the
backend streams to the gateway): no first token by the first-token deadline, or no next one
within the stall budget, cancels the waiting task, without a timer operation per token."""

from __future__ import annotations

import asyncio

from budgets.deadline import Deadline
from core.stages import StageName


class ProgressWatch:
    """Watches one call made by `task`; `tick()` says tokens arrived. When the watch fires
    it cancels `task` and names the budget in `fired`: the first-token deadline's stage, or
    stall."""

    __slots__ = (
        "_first_stage",
        "_handle",
        "_last",
        "_loop",
        "_stall_s",
        "_task",
        "fired",
        "produced",
    )

    def __init__(self, task: asyncio.Task[object], first_token: Deadline, stall_s: float) -> None:
        self._loop = loop = asyncio.get_running_loop()
        self._task = task
        self._stall_s = stall_s
        self._first_stage = first_token.stage
        self._last: float | None = None
        self.fired: str | None = None
        self.produced = 0  # the tokens heard of so far
        self._handle = loop.call_at(loop.time() + first_token.remaining(), self._check)

    def tick(self, tokens: int) -> None:
        """`tokens` more tokens arrived."""
        self.produced += tokens
        now = self._loop.time()
        if self._last is None:  # from now on the timer watches for stalls
            self._handle.cancel()
            self._handle = self._loop.call_at(now + self._stall_s, self._check)
        self._last = now

    def _check(self) -> None:
        last = self._last
        if last is None:
            self._fire(self._first_stage)
        elif self._loop.time() - last >= self._stall_s:
            self._fire(StageName.STALL)
        else:
            self._handle = self._loop.call_at(last + self._stall_s, self._check)

    def _fire(self, stage: str) -> None:
        self.fired = str(stage)
        self._task.cancel()

    def stop(self) -> None:
        self._handle.cancel()
