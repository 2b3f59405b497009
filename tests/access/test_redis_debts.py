"""access/redis_debts.py: what was admitted alone is charged to a real Redis, less what has
rested since, and kept when Redis cannot take it."""

from __future__ import annotations

import uuid

import pytest

from access.gcra import Limit
from access.redis_debts import RedisDebts
from access.shared_limiter import SharedLimiter
from bench.harness.probes import free_port
from core.breaker import CircuitBreaker, DependencyUnavailable
from core.redis_client import redis_client


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _shared(url: str) -> SharedLimiter:
    breaker = CircuitBreaker(failure_threshold=5, cooldown_s=30.0, name="redis-limits")
    return SharedLimiter(redis_client(url, 0.5), breaker, 0.5)


def _limit() -> Limit:
    return Limit("requests_per_minute", "requests", 60, 60.0, f"key:{uuid.uuid4().hex[:12]}")


def test_a_debt_rests_like_the_limit_and_a_give_back_cancels_it() -> None:
    """Owed units rest one per interval; giving back what was owed leaves nothing owed."""
    clock, limit = Clock(), _limit()
    debts = RedisDebts(_shared("redis://127.0.0.1:1"), clock)
    debts.add((limit,), (3,))
    assert limit in debts and debts.pending and len(debts) == 1
    debts.add((limit,), (-3,))
    assert limit not in debts and not debts.pending
    debts.add((limit,), (2,))
    clock.now += 2 * limit.interval_s  # both rested before anything was paid
    debts.add((limit,), (0,))
    assert limit not in debts


async def test_what_is_owed_and_not_rested_is_charged_to_redis(redis_url: str) -> None:
    """Paying charges Redis the units that have not rested yet, and clears the debt."""
    clock, limit = Clock(), _limit()
    shared = _shared(redis_url)
    try:
        debts = RedisDebts(shared, clock)
        debts.add((limit,), (5,))
        clock.now += limit.interval_s  # one of the five has rested
        await debts.pay()
        assert not debts.pending
        decision = await shared.admit((limit,), (0,))
        assert decision.states[0].remaining == limit.amount - 4
    finally:
        await shared.aclose()


async def test_a_payment_redis_cannot_take_keeps_the_debt() -> None:
    """Redis unreachable: the payment raises, and the same debt is owed afterwards."""
    clock, limit = Clock(), _limit()
    shared = _shared(f"redis://127.0.0.1:{free_port()}")
    try:
        debts = RedisDebts(shared, clock)
        debts.add((limit,), (4,))
        with pytest.raises(DependencyUnavailable):
            await debts.pay()
        assert limit in debts and debts.pending
    finally:
        await shared.aclose()
