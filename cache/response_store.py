"""Stored responses of the Responses API (`store: true`): what `previous_response_id`, `GET`
and `DELETE /v1/responses/{id}` read, by tenant and id, with a TTL. In Redis when the gateway
has one (shared by every replica), else in-process."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from cache.memory_store import MemoryExactStore
from cache.redis_store import RedisExactStore
from cache.settings import CacheSettings
from core.breaker import CircuitBreaker, DependencyUnavailable
from core.errors import StoreUnavailable
from core.redis_client import redis_client

T = TypeVar("T")
_TIMEOUT_S = 1.0  # a stored conversation is needed to answer at all: wait longer than a cache


class KeyValueStore(Protocol):
    async def get(self, namespace: str, key: str) -> bytes | None: ...

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None: ...

    async def delete(self, namespace: str, key: str) -> bool: ...

    async def aclose(self) -> None: ...


class ResponseStore:
    """Values are opaque bytes here; a tenant never reads another's (the tenant is part of
    the key). A failing Redis is a 503 `response_store_unavailable`, fast once the breaker
    opens."""

    def __init__(self, store: KeyValueStore, breaker: CircuitBreaker | None, ttl_s: int) -> None:
        self._store = store
        self._breaker = breaker
        self._ttl_s = ttl_s

    @classmethod
    def from_settings(cls, settings: CacheSettings) -> ResponseStore:
        if not settings.redis_url:
            return cls(
                MemoryExactStore(settings.responses_max_entries), None, settings.responses_ttl_s
            )
        client = redis_client(settings.redis_url, _TIMEOUT_S)
        breaker = CircuitBreaker(
            failure_threshold=settings.breaker_failures,
            cooldown_s=settings.breaker_cooldown_s,
            name="redis-responses",
        )
        return cls(RedisExactStore(client, prefix="gw:r"), breaker, settings.responses_ttl_s)

    @property
    def shared(self) -> bool:
        return self._breaker is not None

    @property
    def writable(self) -> bool:
        """False while the breaker says Redis is down: a write now would be refused. True
        again once its cool-down has passed, so the next write is the probe that closes it
        (writes recover on their own, not only after a read)."""
        return self._breaker is None or self._breaker.available

    async def get(self, tenant: str, response_id: str) -> bytes | None:
        return await self._call(lambda: self._store.get(tenant, response_id))

    async def put(self, tenant: str, response_id: str, value: bytes) -> None:
        await self._call(lambda: self._store.set(tenant, response_id, value, self._ttl_s))

    async def delete(self, tenant: str, response_id: str) -> bool:
        return await self._call(lambda: self._store.delete(tenant, response_id))

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        if self._breaker is None:
            return await operation()
        try:
            return await self._breaker.call(operation, _TIMEOUT_S)
        except DependencyUnavailable as exc:
            raise StoreUnavailable(
                "The response store (Redis) is unavailable; try again shortly."
            ) from exc

    async def aclose(self) -> None:
        await self._store.aclose()
