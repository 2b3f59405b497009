"""What the exact and semantic caches' factories share: the circuit breaker, and the Redis
client of the semantic index, which must be a single Redis (never a cluster)."""

from __future__ import annotations

import redis.asyncio as aioredis

from cache.settings import CacheSettings, check_semantic_deployment
from cache.types import CacheUnavailable
from core.breaker import CircuitBreaker
from core.env import SettingsError
from core.redis_client import redis_client


def breaker_for(settings: CacheSettings, name: str) -> CircuitBreaker:
    return CircuitBreaker(
        failure_threshold=settings.breaker_failures,
        cooldown_s=settings.breaker_cooldown_s,
        name=name,
        unavailable=CacheUnavailable,
    )


def semantic_redis_client(settings: CacheSettings) -> aioredis.Redis:
    """The semantic index's client. A cluster URL raises the `SettingsError` that
    `CacheSettings.from_env` raises at startup (vector search needs a single Redis)."""
    if settings.redis_cluster:
        check_semantic_deployment(settings.semantic, settings.redis_url)
        raise SettingsError("GATEWAY_REDIS_URL names a Redis Cluster: no semantic index there")
    client = redis_client(settings.redis_url, settings.semantic_timeout_s)
    assert isinstance(client, aioredis.Redis)  # a cluster URL was refused above
    return client
