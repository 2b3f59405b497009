"""Shared limits on a real three-master Redis Cluster: one request's keys share a hash slot,
tenants spread over the masters, batched refunds split by slot, and a dead cluster decided
locally."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
import redis

from access.caller import Caller, KeyLimits
from access.limiter import RateLimiter
from access.shared_limiter import SharedLimiter
from bench.harness.probes import free_port
from core.breaker import CircuitBreaker
from core.errors import RateLimited, TokensRateLimited
from core.redis_client import redis_client
from tests.support.redis_cluster import RedisClusterProcess


def _limiter(url: str, timeout_s: float = 1.0) -> RateLimiter:
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=30.0, name="redis-limits")
    return RateLimiter(SharedLimiter(redis_client(url, timeout_s), breaker, timeout_s))


@pytest.fixture
async def limiter(redis_cluster_server: RedisClusterProcess) -> AsyncIterator[RateLimiter]:
    shared = _limiter(redis_cluster_server.url)
    yield shared
    await shared.aclose()


def _caller(tenant: str, key_tokens: int = 1000, **tenant_limits: int) -> Caller:
    return Caller(
        tenant,
        key_id=uuid.uuid4().hex[:12],
        limits=KeyLimits(requests_per_minute=100, tokens_per_minute=key_tokens),
        tenant_limits=KeyLimits(**tenant_limits),
    )


async def test_a_key_and_its_tenant_are_charged_in_one_slot(
    limiter: RateLimiter, redis_cluster_server: RedisClusterProcess
) -> None:
    """Key and tenant limits go through one script (no CROSSSLOT); the tenant's limit is
    shared by its keys, and every state key of the request sits in the tenant's slot."""
    tenant = uuid.uuid4().hex[:8]
    first, second = _caller(tenant, requests_per_minute=3), _caller(tenant, requests_per_minute=3)
    for caller in (first, second, first):
        admission = await limiter.admit(caller, lambda: 10)
        assert admission.shared
    with pytest.raises(RateLimited, match=f"tenant {tenant}"):
        await limiter.admit(second, lambda: 10)
    assert limiter.local_decisions == 0
    if redis_cluster_server.ports:
        names = [
            f"gw:rl:{{tenant:{tenant}}}:requests_per_minute",
            f"gw:rl:{{tenant:{tenant}}}:key:{first.key_id}:requests_per_minute",
            f"gw:rl:{{tenant:{tenant}}}:key:{first.key_id}:tokens_per_minute",
        ]
        owner = redis_cluster_server.owner_of(names[0])
        with redis_cluster_server.node(owner) as node:
            assert node.exists(*names) == len(names)
        assert len({redis_cluster_server.slot_of(name) for name in names}) == 1


async def test_tenants_spread_over_every_master(
    limiter: RateLimiter, redis_cluster_server: RedisClusterProcess
) -> None:
    """Thirty tenants' limits are decided in Redis and land on all three masters."""
    tenants = [uuid.uuid4().hex[:8] for _ in range(30)]
    for tenant in tenants:
        assert (await limiter.admit(_caller(tenant, requests_per_minute=5), lambda: 1)).shared
    if redis_cluster_server.ports:
        owners = {
            redis_cluster_server.owner_of(f"gw:rl:{{tenant:{t}}}:requests_per_minute")
            for t in tenants
        }
        assert owners == set(redis_cluster_server.ports)


async def test_refunds_of_many_tenants_are_split_by_slot(limiter: RateLimiter) -> None:
    """One flush gives back reservations of callers in different slots (key limits filed
    under their tenant's tag included): each can reserve its whole budget again."""
    callers = [_caller(uuid.uuid4().hex[:8], 500, tokens_per_minute=500) for _ in range(12)]
    callers.append(  # a key whose tenant has no limits: filed under the key's own tag
        Caller("solo", key_id=uuid.uuid4().hex[:12], limits=KeyLimits(tokens_per_minute=500))
    )
    admissions = [await limiter.admit(caller, lambda: 500) for caller in callers]
    for caller in callers:
        with pytest.raises(TokensRateLimited):
            await limiter.admit(caller, lambda: 500)
    for admission in admissions:
        limiter.settle(admission, used_tokens=0)
    await limiter.flush()
    for caller in callers:
        assert (await limiter.admit(caller, lambda: 500)).shared
    assert limiter.local_decisions == 0


async def test_an_excess_is_charged_after_redis_has_forgotten_the_reservation(
    limiter: RateLimiter,
) -> None:
    """An answer that outlived its small reservation (the key expired with its TAT) is still
    charged everything it used beyond it."""
    caller = _caller(uuid.uuid4().hex[:8], key_tokens=60_000)  # a token every millisecond
    first = await limiter.admit(caller, lambda: 10)
    await asyncio.sleep(0.05)  # the key expired 10 ms after it was set
    limiter.settle(first, 59_000)
    await limiter.flush()
    with pytest.raises(TokensRateLimited):
        await limiter.admit(caller, lambda: 2_000)


async def test_an_unreachable_cluster_is_decided_locally() -> None:
    """No cluster node answers: the replica decides alone, never an error, on its share of a
    limit the cluster never reported, started half spent (2 of the tenant's 4)."""
    limiter = _limiter(f"redis+cluster://127.0.0.1:{free_port()}", timeout_s=0.2)
    try:
        caller = _caller("acme", requests_per_minute=4)
        admissions = [await limiter.admit(caller, lambda: 1) for _ in range(2)]
        assert not any(admission.shared for admission in admissions)
        with pytest.raises(RateLimited):
            await limiter.admit(caller, lambda: 1)
        assert limiter.local_decisions == 3
    finally:
        await limiter.aclose()


def test_the_cluster_rejects_keys_of_two_slots_in_one_script(
    redis_cluster_server: RedisClusterProcess,
) -> None:
    """The constraint the hash tags satisfy: a script over keys of two slots is refused."""
    if not redis_cluster_server.ports:
        pytest.skip("needs the private cluster (REDIS_CLUSTER_URL is set)")
    with redis_cluster_server.node(redis_cluster_server.ports[0]) as node:
        keys = ("gw:rl:{a}:x", "gw:rl:{b}:x")
        assert redis_cluster_server.slot_of(keys[0]) != redis_cluster_server.slot_of(keys[1])
        with pytest.raises(redis.ResponseError):
            node.eval("return redis.call('GET', KEYS[1])", 2, *keys)
