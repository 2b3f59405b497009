"""What a replica admitted alone while Redis was unreachable, owed to Redis and charged there
before Redis decides again.

A debt is kept as a TAT per whole limit, so what rests meanwhile is not charged when it is
paid. A failed payment keeps the debt; a payment whose call timed out may have landed all
the same, so a debt is charged twice at worst, never lost while the process lives."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence

from access.gcra import Limit
from access.shared_limiter import SharedLimiter

log = logging.getLogger("gateway.limits")


class RedisDebts:
    """The charges Redis has not seen, and their one payment at a time."""

    def __init__(self, shared: SharedLimiter, clock: Callable[[], float] = time.monotonic) -> None:
        self._shared = shared
        self._clock = clock
        self._owed: dict[Limit, float] = {}  # whole limit -> TAT of what was admitted alone
        self._paying: asyncio.Task[None] | None = None

    def __contains__(self, limit: Limit) -> bool:
        return limit in self._owed

    def __len__(self) -> int:
        return len(self._owed)

    @property
    def pending(self) -> bool:
        """Something is owed, or a payment is on its way."""
        return bool(self._owed) or (self._paying is not None and not self._paying.done())

    def add(self, limits: Sequence[Limit], costs: Sequence[int]) -> None:
        """Owe `costs` to `limits` (a negative cost gives back what an answer did not use)."""
        now = self._clock()
        for limit, cost in zip(limits, costs, strict=True):
            tat = max(self._owed.get(limit, now), now) + cost * limit.interval_s
            if tat > now:
                self._owed[limit] = tat
            else:
                self._owed.pop(limit, None)

    async def pay(self) -> None:
        """Charge Redis what was admitted alone and has not rested yet, before the first
        decision taken there again; concurrent requests wait for the one payment. Raises
        `DependencyUnavailable` when Redis is still gone (the debt is kept). A payment that
        has ended is never awaited again (its failure was told to those who waited): a new
        one starts."""
        paying = self._paying
        if paying is None or paying.done():
            paying = self._paying = asyncio.get_running_loop().create_task(self._send())
            paying.add_done_callback(self._paid)
        await asyncio.shield(paying)

    def _paid(self, paying: asyncio.Task[None]) -> None:
        if self._paying is paying:
            self._paying = None
        if not paying.cancelled():
            paying.exception()  # retrieved: whoever waited was told, or went away

    async def _send(self) -> None:
        now, owed, self._owed = self._clock(), self._owed, {}
        charges = [
            (limit, math.ceil((tat - now) / limit.interval_s - 1e-9)) for limit, tat in owed.items()
        ]
        charges = [(limit, units) for limit, units in charges if units > 0]
        if not charges:
            return
        try:
            await self._shared.refund([(limit, -units) for limit, units in charges])
        except BaseException:  # unreachable, a bug, or cancelled: the debt is kept either way
            for limit, units in charges:
                self.add((limit,), (units,))
            raise
        log.info("charged Redis for %d limits' requests admitted alone", len(charges))
