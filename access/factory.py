"""Builds the rate limiter from the access settings: shared through Redis when a URL is set."""

from __future__ import annotations

from access.limiter import RateLimiter
from access.settings import AccessSettings
from access.shared_limiter import SharedLimiter
from core.breaker import CircuitBreaker
from core.redis_client import redis_client


def build_rate_limiter(settings: AccessSettings, workers: int = 1) -> RateLimiter:
    """The limiter of one process. Deciding alone (no Redis, or Redis unreachable), each of the
    `workers` processes of each of the `GATEWAY_LIMIT_REPLICAS` replicas takes its share."""
    shared = None
    if settings.redis_url:
        shared = SharedLimiter(
            redis_client(settings.redis_url, settings.limit_timeout_s),
            CircuitBreaker(failure_threshold=3, cooldown_s=2.0, name="redis-limits"),
            settings.limit_timeout_s,
        )
    return RateLimiter(shared, settings.limit_replicas * workers)
