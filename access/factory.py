"""Builds the rate limiter from the access settings: shared through Redis when a URL is set."""

from __future__ import annotations

from access.limiter import RateLimiter
from access.settings import AccessSettings
from access.shared_limiter import SharedLimiter
from core.breaker import CircuitBreaker
from core.redis_client import redis_client

_SOCKET_BACKSTOP_S = 1.0


def build_rate_limiter(settings: AccessSettings, workers: int = 1) -> RateLimiter:
    """The limiter of one process. Deciding alone (no Redis, or Redis unreachable), each of the
    `workers` processes of each of the `GATEWAY_LIMIT_REPLICAS` replicas takes its share."""
    shared = None
    if settings.redis_url:
        # Each call is bounded by the limit's timeout, not counting this loop's own lag
        # (`loop_timeout`); the client's socket timeouts, which would count it (a burst of
        # new connections timed out connecting), are only a backstop.
        socket_timeout_s = max(settings.limit_timeout_s, _SOCKET_BACKSTOP_S)
        shared = SharedLimiter(
            redis_client(settings.redis_url, socket_timeout_s),
            CircuitBreaker(failure_threshold=3, cooldown_s=2.0, name="redis-limits"),
            settings.limit_timeout_s,
        )
    return RateLimiter(shared, settings.limit_replicas * workers)
