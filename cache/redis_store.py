"""The exact store in Redis: one string per entry, namespaced by tenant, with a TTL.

Every operation is one command on one key (no pipeline, transaction or multi-key command), so
it runs unchanged on a single Redis and on a Redis Cluster, where the keys spread over every
master by their hash slot (no hash tag: one tenant's entries are not pinned to one node)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from redis.exceptions import RedisClusterException

from core.redis_client import RedisClient


class RedisExactStore:
    """GET/SET EX on `{prefix}:{namespace}:{key}` over a pooled `redis.asyncio` client (a
    `Redis` or a `RedisCluster`).

    Errors propagate; the caller wraps each call in a timeout and a circuit breaker.
    """

    def __init__(self, client: RedisClient, prefix: str = "gw:x") -> None:
        self._client = client
        self._prefix = prefix

    def _name(self, namespace: str, key: str) -> str:
        return f"{self._prefix}:{namespace}:{key}"

    async def get(self, namespace: str, key: str) -> bytes | None:
        with _lost_connection():
            value = await self._client.get(self._name(namespace, key))
        return value.encode() if isinstance(value, str) else value

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None:
        with _lost_connection():
            await self._client.set(self._name(namespace, key), value, ex=ttl_s)

    async def delete(self, namespace: str, key: str) -> bool:
        with _lost_connection():
            return bool(await self._client.delete(self._name(namespace, key)))

    async def aclose(self) -> None:
        await self._client.aclose()


@contextlib.contextmanager
def _lost_connection() -> Iterator[None]:
    """A pooled connection Redis has reset: under uvloop redis-py writes to the closed transport
    and gets a RuntimeError ("unable to perform operation on <TCPTransport closed=True>"). It is
    a lost connection, so the breaker must see a ConnectionError, not a bug escaping as a 500.
    Likewise a Redis Cluster that cannot be reached or does not serve a key's slot: redis-py
    raises `RedisClusterException`, which is no `RedisError`."""
    try:
        yield
    except RedisClusterException as exc:
        raise ConnectionError(f"Redis Cluster unavailable: {exc}") from exc
    except RuntimeError as exc:
        if "closed" not in str(exc):
            raise
        raise ConnectionError(f"Redis connection lost: {exc}") from exc
