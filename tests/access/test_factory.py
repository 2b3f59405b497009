"""The rate limiter built from the settings: its local share covers every worker process."""

from __future__ import annotations

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
