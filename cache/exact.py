"""The exact cache: answers by canonical request hash, behind a timeout and circuit breaker."""

from __future__ import annotations

from cache.breaker import CircuitBreaker
from cache.entry import CachedAnswer
from cache.types import ExactStore


class ExactCache:
    """Reads and writes `CachedAnswer`s; a failing store raises `CacheUnavailable` quickly."""

    def __init__(
        self, store: ExactStore, breaker: CircuitBreaker | None, timeout_s: float, ttl_s: int
    ) -> None:
        self._store = store
        self._breaker = breaker
        self._timeout_s = timeout_s
        self._ttl_s = ttl_s

    async def get(self, tenant: str, key: str) -> CachedAnswer | None:
        if self._breaker is None:
            raw = await self._store.get(tenant, key)
        else:
            raw = await self._breaker.call(lambda: self._store.get(tenant, key), self._timeout_s)
        return None if raw is None else CachedAnswer.from_bytes(raw)

    async def put(self, tenant: str, key: str, answer: CachedAnswer) -> None:
        value = answer.to_bytes()
        if self._breaker is None:
            await self._store.set(tenant, key, value, self._ttl_s)
        else:
            await self._breaker.call(
                lambda: self._store.set(tenant, key, value, self._ttl_s), self._timeout_s
            )

    async def aclose(self) -> None:
        await self._store.aclose()
