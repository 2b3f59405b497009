"""Faults of Redis: blackholed, flapping, resetting its connections, slow; the caches degrade
and come back right."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp

from tests.e2e.faults.harness import (
    RECOVERY_TIMEOUT_S,
    SLACK_S,
    TABLE,
    FaultStack,
    Row,
    ask,
    ask_many,
    within_budget,
)

# Cacheable, and short: without max_tokens admission judges a request by the model's recent
# output lengths, which the shared stack's earlier tests made long and slow enough that every
# request was once refused as `deadline_too_short` on a loaded CI box.
GREEDY: dict[str, Any] = {"temperature": 0.0, "max_tokens": 16}


async def test_blackholed_redis_then_back(stack: FaultStack) -> None:
    """Redis that never answers costs only cache errors; once back, hits return and are right."""
    async with aiohttp.ClientSession() as session:
        stack.redis.blackhole()
        during = await ask_many(session, stack.url, "redis hole", **GREEDY)
        stack.redis.clear()
        recovery = await _cache_recovers(session, stack.url, "redis hole back")
        TABLE.append(Row("Redis blackholed", during, recovery))
        again = await ask_many(session, stack.url, "redis hole", **GREEDY)
    assert {r.status for r in during + again} == {200}
    assert {r.cache for r in during} <= {"error", "skipped"}
    within_budget(during)
    # Whatever Redis holds now, it is the same answer as the backend gave.
    assert [r.content for r in again] == [r.content for r in during]


async def test_flapping_redis(stack: FaultStack) -> None:
    """Redis flapping between up and reset: every request answered, hits always right."""
    async with aiohttp.ClientSession() as session:
        first = await ask_many(session, stack.url, "flap", **GREEDY)
        stack.redis.flap(up_s=0.3, down_s=0.3)
        during = [r for _ in range(3) for r in await ask_many(session, stack.url, "flap", **GREEDY)]
        stack.redis.clear()
        recovery = await _cache_recovers(session, stack.url, "flap back")
        TABLE.append(Row("Redis flapping (0.3 s up / 0.3 s reset)", during, recovery))
    assert {r.status for r in first} == {200}
    assert {r.status for r in during} == {200}
    assert [r for r in during if r.status == 200 and not r.content] == []
    assert {r.cache for r in during if r.status == 200} <= {"hit-exact", "miss", "error", "skipped"}
    expected = [r.content for r in first] * 3
    assert [r.content for r, e in zip(during, expected, strict=True) if r.status == 200] == [
        e for r, e in zip(during, expected, strict=True) if r.status == 200
    ]
    within_budget(during)


async def test_redis_connections_reset(stack: FaultStack) -> None:
    """Redis resetting the gateway's pooled connections costs cache errors, never a 500."""
    async with aiohttp.ClientSession() as session:
        warm = await ask_many(session, stack.url, "reset warm", count=16, **GREEDY)
        stack.redis.reset()
        stack.redis.clear()
        after = await ask_many(session, stack.url, "reset after", count=16, **GREEDY)
        recovery = await _cache_recovers(session, stack.url, "reset back")
        TABLE.append(Row("Redis resets its connections", after, recovery))
    assert {r.status for r in warm} == {200}
    assert {r.status for r in after} == {200}, sorted(r.status for r in after)


async def _cache_recovers(session: aiohttp.ClientSession, url: str, text: str) -> float:
    """Seconds until a fresh prompt is a hit: Redis reads and writes again (bounded)."""
    start = time.monotonic()
    async with asyncio.timeout(RECOVERY_TIMEOUT_S):
        while (await ask(session, url, text, **GREEDY)).cache != "hit-exact":  # noqa: ASYNC110
            await asyncio.sleep(0.1)
    return time.monotonic() - start


async def test_slow_redis(stack: FaultStack) -> None:
    """Redis answering in 200-500 ms: the cache is skipped, every request served within budget."""
    async with aiohttp.ClientSession() as session:
        stack.redis.set_latency(0.2, 0.3)
        during = await ask_many(session, stack.url, "slow redis", **GREEDY)
        stack.redis.clear()
        recovery = await _cache_recovers(session, stack.url, "slow redis back")
        TABLE.append(Row("Redis slow (200-500 ms)", during, recovery))
        again = await ask_many(session, stack.url, "slow redis", **GREEDY)
    assert {r.status for r in during + again} == {200}
    assert {r.cache for r in during} <= {"error", "skipped", "miss"}
    within_budget(during)
    assert max(r.elapsed_s for r in during) < 1.0 + SLACK_S  # never waits on Redis
    assert [r.content for r in again] == [r.content for r in during]
