"""The exact cache: answers by canonical request hash, behind a timeout and circuit breaker,
with an optional in-process near cache in front of a shared store."""

from __future__ import annotations

import time
from collections.abc import Callable

from cache.entry import CachedAnswer
from cache.memory_store import MemoryExactStore
from cache.types import ExactStore
from core.breaker import CircuitBreaker


class ExactCache:
    """Reads and writes `CachedAnswer`s; a failing store raises `CacheUnavailable` quickly.

    Entries never change (the key is the whole request), so a near copy cannot go stale: it
    only saves the round trip for hot entries. It holds only what the store confirmed (a read
    hit or a successful write), so a dead store adds nothing to it, and never outlives the
    entry it copies. `clock` is the wall clock entries' `created_at` is on.
    """

    def __init__(
        self,
        store: ExactStore,
        breaker: CircuitBreaker | None,
        timeout_s: float,
        ttl_s: int,
        near: MemoryExactStore | None = None,
        near_ttl_s: int = 30,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._breaker = breaker
        self._timeout_s = timeout_s
        self._ttl_s = ttl_s
        self._near = near
        self._near_ttl_s = min(near_ttl_s, ttl_s)
        self._clock = clock

    @property
    def breaker(self) -> CircuitBreaker | None:
        return self._breaker

    async def near(self, tenant: str, key: str) -> CachedAnswer | None:
        """The entry if an in-process copy holds it; no I/O."""
        if self._near is None:
            return None
        raw = await self._near.get(tenant, key)
        return None if raw is None else CachedAnswer.from_bytes(raw)

    async def get(
        self, tenant: str, key: str, timeout_s: float | None = None
    ) -> CachedAnswer | None:
        """The entry, if any: an in-process copy, else the store. A remote lookup is bounded
        by the store's timeout or, when shorter, `timeout_s` (what the request's budget
        leaves for this stage)."""
        answer = await self.near(tenant, key)
        if answer is not None:
            return answer
        if self._breaker is None:
            raw = await self._store.get(tenant, key)
        else:
            timeout = self._timeout_s if timeout_s is None else min(self._timeout_s, timeout_s)
            raw = await self._breaker.call(
                lambda: self._store.get(tenant, key), timeout, self._timeout_s
            )
        if raw is None:
            return None
        answer = CachedAnswer.from_bytes(raw)
        if answer is not None and self._near is not None:
            # What is left of the entry's life (another gateway may have written it long
            # ago), in whole seconds, rounded down.
            left_s = int(self._ttl_s - (self._clock() - answer.created_at))
            if left_s > 0:
                await self._near.set(tenant, key, raw, min(self._near_ttl_s, left_s))
        return answer

    async def put(self, tenant: str, key: str, answer: CachedAnswer, age_s: int = 0) -> None:
        """Store `answer` for the cache's TTL less `age_s` (an answer written back that old
        expires when it would have); one already past the TTL is not stored."""
        ttl_s = self._ttl_s - age_s
        if ttl_s <= 0:
            return
        value = answer.to_bytes()
        if self._breaker is None:
            await self._store.set(tenant, key, value, ttl_s)
        else:
            await self._breaker.call(
                lambda: self._store.set(tenant, key, value, ttl_s), self._timeout_s
            )
        if self._near is not None:
            await self._near.set(tenant, key, value, min(self._near_ttl_s, ttl_s))

    async def aclose(self) -> None:
        await self._store.aclose()
