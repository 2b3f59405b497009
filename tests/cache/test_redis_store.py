"""The exact store on a real three-master Redis Cluster: keys spread over every master, slot
migrations followed through MOVED, and an unreachable cluster failing open."""

from __future__ import annotations

import uuid

import pytest

from bench.harness.probes import free_port
from cache.entry import CachedAnswer
from cache.exact import ExactCache
from cache.factory_redis import breaker_for
from cache.redis_store import RedisExactStore
from cache.settings import CacheSettings
from cache.types import CacheUnavailable
from core.answers import Choice, Completion, Usage
from core.breaker import BreakerState
from core.redis_client import redis_client
from tests.support.redis_cluster import RedisClusterProcess

SETTINGS = CacheSettings(breaker_failures=2, breaker_cooldown_s=30.0)


def _answer(text: str) -> CachedAnswer:
    return CachedAnswer(Completion([Choice(0, text, "stop")], Usage(3, 2)), created_at=1.0)


def _cache(url: str, prefix: str, timeout_s: float = 1.0) -> ExactCache:
    store = RedisExactStore(redis_client(url, timeout_s), prefix=prefix)
    return ExactCache(store, breaker_for(SETTINGS, "redis-exact"), timeout_s, ttl_s=60)


async def test_entries_spread_over_every_master_and_read_back(
    redis_cluster_server: RedisClusterProcess,
) -> None:
    """60 entries of 3 tenants land on all three masters and every one reads back."""
    prefix = f"gw:x:{uuid.uuid4().hex[:8]}"
    cache = _cache(redis_cluster_server.url, prefix)
    try:
        entries = [(f"tenant{i % 3}", f"key{i}") for i in range(60)]
        for tenant, key in entries:
            await cache.put(tenant, key, _answer(f"{tenant}/{key}"))
        for tenant, key in entries:
            found = await cache.get(tenant, key)
            assert found is not None and found.completion.choices[0].text == f"{tenant}/{key}"
        assert await cache.get("tenant0", "key1") is None  # key1 belongs to tenant1
        if redis_cluster_server.ports:
            owners = {redis_cluster_server.owner_of(f"{prefix}:{t}:{k}") for t, k in entries}
            assert owners == set(redis_cluster_server.ports)
    finally:
        await cache.aclose()


async def test_a_migrated_slot_is_followed_through_moved(
    redis_cluster_server: RedisClusterProcess,
) -> None:
    """After its slot moves to another master, the same client still reads and writes the key."""
    if not redis_cluster_server.ports:
        pytest.skip("needs the private cluster (REDIS_CLUSTER_URL is set)")
    prefix = f"gw:x:{uuid.uuid4().hex[:8]}"
    client = redis_client(redis_cluster_server.url, 1.0)
    store = RedisExactStore(client, prefix=prefix)
    try:
        await store.set("acme", "moving", b"before", 60)
        name = f"{prefix}:acme:moving"
        source = redis_cluster_server.owner_of(name)
        target = next(port for port in redis_cluster_server.ports if port != source)
        redis_cluster_server.migrate_slot(redis_cluster_server.slot_of(name), target)
        assert redis_cluster_server.owner_of(name) == target
        assert await store.get("acme", "moving") == b"before"  # MOVED, then the new owner
        await store.set("acme", "moving", b"after", 60)
        assert await store.get("acme", "moving") == b"after"
        assert await store.delete("acme", "moving")
    finally:
        await store.aclose()


async def test_a_slot_mid_migration_is_followed_through_ask(
    redis_cluster_server: RedisClusterProcess,
) -> None:
    """While a slot migrates, keys already moved are read and new keys written through ASK."""
    if not redis_cluster_server.ports:
        pytest.skip("needs the private cluster (REDIS_CLUSTER_URL is set)")
    prefix = f"gw:x:{uuid.uuid4().hex[:8]}"
    store = RedisExactStore(redis_client(redis_cluster_server.url, 1.0), prefix=prefix)
    name = f"{prefix}:acme:asked"
    slot = redis_cluster_server.slot_of(name)
    source = redis_cluster_server.owner_of(name)
    target = next(port for port in redis_cluster_server.ports if port != source)
    try:
        await store.set("acme", "asked", b"moved early", 60)
        redis_cluster_server.start_migration(slot, target)
        with redis_cluster_server.node(source) as node:
            assert node.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0  # all moved
        assert await store.get("acme", "asked") == b"moved early"  # ASK, then the target
        await store.set("acme", "asked", b"written mid-migration", 60)
        redis_cluster_server.finish_migration(slot, target)
        with redis_cluster_server.node(target) as node:
            assert node.get(name) == b"written mid-migration"
        assert await store.get("acme", "asked") == b"written mid-migration"
    finally:
        await store.aclose()


async def test_an_unreachable_cluster_fails_open_and_opens_the_breaker() -> None:
    """No node answers: lookups raise CacheUnavailable (a miss upstream), then fail fast."""
    cache = _cache(f"redis+cluster://127.0.0.1:{free_port()}", "gw:x", timeout_s=0.2)
    try:
        for _ in range(SETTINGS.breaker_failures):
            with pytest.raises(CacheUnavailable):
                await cache.get("acme", "k")
        with pytest.raises(CacheUnavailable):
            await cache.put("acme", "k", _answer("x"))
        assert cache.breaker is not None and cache.breaker.state is BreakerState.OPEN
    finally:
        await cache.aclose()
