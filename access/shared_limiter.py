"""GCRA shared by every gateway replica: one atomic Redis script per request.

The script reads each limit's TAT, decides with Redis's own clock (so replicas with skewed
clocks agree), and charges every limit or none; a second script gives back unused tokens (or
charges what an answer used beyond its reservation, even once the key has expired).

On a Redis Cluster every key a script touches must live in one hash slot. A request is charged
to its API key and, when the tenant has limits too, to its tenant, so all of them carry one
hash tag, which each limit names (`Limit.hash_tag`, so a refund or a debt finds its key from
the limit alone): the tenant's when the request touches the tenant's limits (`gw:rl:{tenant:t}:...`
and `gw:rl:{tenant:t}:key:k:...`), else the key's own (`gw:rl:{key:k}:...`). Refunds, batched
across many callers, are sent as one script per hash tag on a cluster (concurrently), one
script in all on a single Redis.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from access.gcra import Decision, Limit, state_after
from core.breaker import CircuitBreaker
from core.loop_timeout import loop_timeout
from core.redis_client import RedisClient

T = TypeVar("T")

_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local retry, limited = 0, 0
local tats, candidates = {}, {}
for i = 1, #KEYS do
  local interval, period, cost = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1]), tonumber(ARGV[3*i])
  local tat = tonumber(redis.call('GET', KEYS[i])) or now
  if tat < now then tat = now end
  tats[i] = tat
  candidates[i] = tat + cost * interval
  local over = candidates[i] - now - period
  if over > retry and over > 0.001 then retry, limited = over, i end  -- 1 us of rounding slack
end
local out = {limited, tostring(retry), tostring(now)}
for i = 1, #KEYS do
  local tat = tats[i]
  if limited == 0 then
    tat = candidates[i]
    redis.call('SET', KEYS[i], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
  end
  out[#out + 1] = tostring(tat - now)
end
return out
"""

_REFUND = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
for i = 1, #KEYS do
  local stored = tonumber(redis.call('GET', KEYS[i]))
  local tat = stored or now  -- expired (rested): an excess is still charged, from now
  if tat < now then tat = now end
  tat = tat - tonumber(ARGV[2*i]) * tonumber(ARGV[2*i-1])
  if tat > now then
    redis.call('SET', KEYS[i], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
  elseif stored then
    redis.call('DEL', KEYS[i])
  end
end
return 1
"""


class SharedLimiter:
    """GCRA in Redis, behind a circuit breaker: a dead or slow Redis raises
    `DependencyUnavailable` within `timeout_s`, and fast while its circuit is open."""

    def __init__(
        self,
        client: RedisClient,
        breaker: CircuitBreaker,
        timeout_s: float,
        prefix: str = "gw:rl",
    ) -> None:
        self._client = client
        self._breaker = breaker
        self._timeout_s = timeout_s
        self._prefix = prefix
        self._admit = client.register_script(_ADMIT)
        self._refund = client.register_script(_REFUND)
        self._cluster = isinstance(client, RedisCluster)

    @property
    def breaker(self) -> CircuitBreaker:
        return self._breaker

    def _key(self, limit: Limit) -> str:
        tag = limit.hash_tag
        if tag == limit.owner:
            return f"{self._prefix}:{{{tag}}}:{limit.name}"
        return f"{self._prefix}:{{{tag}}}:{limit.owner}:{limit.name}"

    async def admit(self, limits: Sequence[Limit], costs: Sequence[int]) -> Decision:
        keys = [self._key(limit) for limit in limits]
        args: list[Any] = []
        for limit, cost in zip(limits, costs, strict=True):
            args += [f"{limit.interval_s * 1000:.6f}", f"{limit.period_s * 1000:.3f}", cost]
        reply = await self._breaker.call(
            lambda: _reachable(self._admit(keys=keys, args=args)),
            self._timeout_s,
            timer=loop_timeout,
        )
        limited, retry_ms, at_ms, used = int(reply[0]), float(reply[1]), float(reply[2]), reply[3:]
        states = tuple(
            state_after(limit, float(used_ms) / 1000)
            for limit, used_ms in zip(limits, used, strict=True)
        )
        at = at_ms / 1000
        if limited == 0:
            return Decision(True, states, at=at)
        return Decision(False, states, retry_ms / 1000, limits[limited - 1], at)

    async def refund(self, refunds: Sequence[tuple[Limit, int]]) -> None:
        """Give back (or, negative, charge) units on many callers' limits: in one call on a
        single Redis, in one call per hash slot (hash tag) on a cluster."""
        groups: dict[str, tuple[list[str], list[Any]]] = {}
        for limit, units in refunds:
            keys, args = groups.setdefault(limit.hash_tag if self._cluster else "", ([], []))
            keys.append(self._key(limit))
            args += [f"{limit.interval_s * 1000:.6f}", units]
        if not groups:
            return

        async def send() -> None:
            await asyncio.gather(
                *(_reachable(self._refund(keys=k, args=a)) for k, a in groups.values())
            )

        await self._breaker.call(send, self._timeout_s, timer=loop_timeout)

    async def aclose(self) -> None:
        await self._client.aclose()


async def _reachable(call: Awaitable[T]) -> T:
    """A cluster that cannot be reached (or serves no node for a slot) raises
    `RedisClusterException`, which is no `RedisError`: the breaker must see a ConnectionError
    (fail-open to local decisions), not a bug."""
    try:
        return await call
    except RedisClusterException as exc:
        raise ConnectionError(f"Redis Cluster unavailable: {exc}") from exc
