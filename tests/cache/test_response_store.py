"""The store of Responses API responses: in-process and in a real Redis, by tenant, with a TTL,
and a dead Redis as a fast 503."""

from __future__ import annotations

import uuid

import pytest
import redis.asyncio as aioredis

from bench.harness.probes import free_port
from cache.memory_store import MemoryExactStore
from cache.response_store import ResponseStore
from cache.settings import CacheSettings
from core.breaker import BreakerState, CircuitBreaker
from core.errors import StoreUnavailable
from tests.support.redis_cluster import RedisClusterProcess


def _stores(redis_url: str) -> list[ResponseStore]:
    return [
        ResponseStore.from_settings(CacheSettings()),
        ResponseStore.from_settings(CacheSettings(redis_url=redis_url)),
    ]


async def test_a_stored_response_is_read_by_its_tenant_only(redis_url: str) -> None:
    """Another tenant reads nothing under the same id, in memory and in Redis."""
    for store in _stores(redis_url):
        await store.put("acme", "resp_1", b'{"a":1}')
        assert await store.get("acme", "resp_1") == b'{"a":1}'
        assert await store.get("globex", "resp_1") is None
        assert not await store.delete("globex", "resp_1")
        await store.aclose()


async def test_delete_removes_once(redis_url: str) -> None:
    """A deleted response is gone; deleting it again says there was nothing."""
    for store in _stores(redis_url):
        await store.put("acme", "resp_2", b"x")
        assert await store.delete("acme", "resp_2")
        assert await store.get("acme", "resp_2") is None
        assert not await store.delete("acme", "resp_2")
        await store.aclose()


async def test_redis_entries_expire(redis_url: str) -> None:
    """Entries in Redis carry the configured TTL."""
    store = ResponseStore.from_settings(CacheSettings(redis_url=redis_url, responses_ttl_s=77))
    await store.put("acme", "resp_3", b"x")
    client = aioredis.Redis.from_url(redis_url)
    ttl = await client.ttl("gw:r:acme:resp_3")
    await client.aclose()
    await store.aclose()
    assert 0 < ttl <= 77


async def test_a_dead_redis_is_a_503() -> None:
    """Without Redis the store answers StoreUnavailable, never hangs or crashes."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    store = ResponseStore.from_settings(CacheSettings(redis_url=url))
    with pytest.raises(StoreUnavailable):
        await store.get("acme", "resp_4")
    with pytest.raises(StoreUnavailable):
        await store.put("acme", "resp_4", b"x")
    await store.aclose()


class FlakyStore(MemoryExactStore):
    """An in-process store whose writes fail while `down` is set."""

    def __init__(self) -> None:
        super().__init__(100)
        self.down = False
        self.writes = 0

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None:
        self.writes += 1
        if self.down:
            raise ConnectionError("refused")
        await super().set(namespace, key, value, ttl_s)


async def test_writes_probe_a_recovered_redis_without_any_read() -> None:
    """Once the open breaker's cool-down has passed the store is writable again, and that
    write is the probe that closes it: no read of the store is needed to recover."""
    now = [0.0]
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=5.0, clock=lambda: now[0])
    flaky = FlakyStore()
    store = ResponseStore(flaky, breaker, ttl_s=60)
    flaky.down = True
    for _ in range(2):
        with pytest.raises(StoreUnavailable):
            await store.put("acme", "resp_6", b"x")
    assert not store.writable
    flaky.down = False
    now[0] += 5.0
    assert store.writable
    await store.put("acme", "resp_6", b"x")
    assert breaker.state is BreakerState.CLOSED and flaky.writes == 3
    assert await store.get("acme", "resp_6") == b"x"


async def test_responses_on_a_redis_cluster_spread_and_read_back(
    redis_cluster_server: RedisClusterProcess,
) -> None:
    """On a three-master cluster stored responses land on every master, by tenant, with a TTL."""
    store = ResponseStore.from_settings(
        CacheSettings(redis_url=redis_cluster_server.url, responses_ttl_s=77)
    )
    run = uuid.uuid4().hex[:8]
    ids = [f"resp_{run}_{i}" for i in range(30)]
    try:
        assert store.shared
        for i, response_id in enumerate(ids):
            await store.put("acme", response_id, f"{i}".encode())
        assert [await store.get("acme", r) for r in ids] == [f"{i}".encode() for i in range(30)]
        assert await store.get("globex", ids[0]) is None
        assert await store.delete("acme", ids[0]) and await store.get("acme", ids[0]) is None
        if redis_cluster_server.ports:
            owners = {redis_cluster_server.owner_of(f"gw:r:acme:{r}") for r in ids}
            assert owners == set(redis_cluster_server.ports)
            with redis_cluster_server.node(
                redis_cluster_server.owner_of(f"gw:r:acme:{ids[1]}")
            ) as n:
                assert 0 < n.ttl(f"gw:r:acme:{ids[1]}") <= 77
    finally:
        await store.aclose()


async def test_an_unreachable_redis_cluster_is_a_503() -> None:
    """A cluster URL whose nodes are all down answers StoreUnavailable, like a dead Redis."""
    url = f"redis+cluster://127.0.0.1:{free_port()}"
    store = ResponseStore.from_settings(CacheSettings(redis_url=url))
    with pytest.raises(StoreUnavailable):
        await store.get("acme", "resp_5")
    await store.aclose()
