"""The rate limiter built from the settings: its local share covers every worker process."""

from __future__ import annotations

import asyncio
import time
import uuid

from access.caller import Caller, KeyLimits
from access.factory import build_rate_limiter
from access.settings import AccessSettings
from core.errors import RateLimited


async def _admitted(workers: int, replicas: int, attempts: int) -> int:
    limiter = build_rate_limiter(AccessSettings(limit_replicas=replicas), workers)
    caller = Caller("acme", key_id=uuid.uuid4().hex[:12], limits=KeyLimits(requests_per_minute=12))
    admitted = 0
    try:
        for _ in range(attempts):
            try:
                await limiter.admit(caller, lambda: 1)
                admitted += 1
            except RateLimited:
                pass
    finally:
        await limiter.aclose()
    return admitted


async def test_each_worker_decides_alone_on_its_part_of_the_replica_share() -> None:
    """Without Redis, 2 replicas x 3 workers: each process admits a sixth of the limit, so the
    fleet never admits more than the limit (12 a minute: 2 each)."""
    assert await _admitted(workers=3, replicas=2, attempts=6) == 2


async def test_one_worker_keeps_the_replica_share() -> None:
    """One worker per replica: the replica's whole share (half of 12 with 2 replicas)."""
    assert await _admitted(workers=1, replicas=2, attempts=10) == 6


async def test_a_burst_that_stalls_the_loop_is_still_decided_in_redis(redis_url: str) -> None:
    """A burst keeps this process's loop busy for three timeouts while Redis answers at once
    (every reply waits, on new connections too): Redis still decides each request, so a key
    that spent 4 of 10 gets exactly 6 more, not a fresh local bucket on top."""
    limiter = build_rate_limiter(AccessSettings(redis_url=redis_url, limit_timeout_s=0.2))
    caller = Caller("acme", key_id=uuid.uuid4().hex[:12], limits=KeyLimits(requests_per_minute=10))
    try:
        for _ in range(4):
            await limiter.admit(caller, lambda: 1)
        burst = asyncio.gather(
            *(limiter.admit(caller, lambda: 1) for _ in range(30)), return_exceptions=True
        )
        asyncio.get_running_loop().call_soon(time.sleep, 0.6)  # every request's first step ran
        outcomes = await burst
    finally:
        await limiter.aclose()
    assert sum(not isinstance(o, BaseException) for o in outcomes) == 6
    assert sum(isinstance(o, RateLimited) for o in outcomes) == 24
    assert limiter.local_decisions == 0
