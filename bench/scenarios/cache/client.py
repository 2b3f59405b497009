"""The cache scenario's client, in this process on the client core: aiohttp closed loops that
note each answer's X-Cache, and wrk counting X-Cache for peak throughput."""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bench.config import BenchConfig
from bench.harness import interrupts
from bench.load import wrk
from bench.load.closed_loop import LoopBounds, drive
from bench.load.stats import Summary
from bench.scenarios.cache.results import Measured

_HEADERS = {"content-type": "application/json"}
_WARM_TRIES = 200
_WARM_BUDGET_S = 15.0


@dataclass(frozen=True, slots=True)
class Reply:
    status: int  # 0: no answer
    xcache: str
    latency: float


async def post(session: aiohttp.ClientSession, url: str, body: bytes) -> Reply:
    start = time.perf_counter()
    try:
        async with session.post(url, data=body, headers=_HEADERS) as response:
            await response.read()
            xcache = response.headers.get("x-cache", "none")
            return Reply(response.status, xcache, time.perf_counter() - start)
    except (TimeoutError, aiohttp.ClientError):
        return Reply(0, "none", math.nan)


def _session(config: BenchConfig, connections: int = 100) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(total=config.request_timeout_s)
    connector = aiohttp.TCPConnector(limit=connections, force_close=False)
    return aiohttp.ClientSession(connector=connector, timeout=timeout)


async def closed_loop(
    config: BenchConfig,
    m: Measured,
    url: str,
    body_of: Callable[[int], bytes],
    accept: frozenset[str] | None,
    warmup_s: float,
    max_requests: int,
) -> Measured:
    """`m.concurrency` workers for the run's duration; latency of the 200s whose X-Cache is in
    `accept` (any when None)."""
    bounds = LoopBounds(
        m.concurrency, warmup_s, config.duration_s, max_requests, min_requests=0,
        request_timeout_s=config.request_timeout_s,
    )  # fmt: skip
    async with _session(config, m.concurrency) as session:
        run = await drive(lambda i: post(session, url, body_of(i)), bounds)
    answered = [r for r in run.measured if r.status == 200]
    counted = [r.latency for r in answered if accept is None or r.xcache in accept]
    m.requests, m.errors = len(answered), len(run.measured) - len(answered)
    m.elapsed_s = run.measured_s
    m.xcache = dict(Counter(r.xcache for r in answered))
    m.counted, m.latency = len(counted), Summary.of(counted)
    return m


async def semantic_lookups(config: BenchConfig, metrics_url: str) -> Counter[str]:
    """The gateway's semantic lookups so far by result, from its `/metrics`; empty when they
    could not be read."""
    async with _session(config, 1) as session:
        try:
            async with session.get(metrics_url) as response:
                return semantic_counts(await response.text())
        except (TimeoutError, aiohttp.ClientError):
            return Counter()


def semantic_counts(exposition: str) -> Counter[str]:
    """`gateway_cache_lookups_total` of kind `semantic` by result, from a Prometheus text
    exposition."""
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(exposition):
        if family.name == "gateway_cache_lookups":
            for sample in family.samples:
                if sample.name.endswith("_total") and sample.labels.get("kind") == "semantic":
                    counts[sample.labels["result"]] += int(sample.value)
    return counts


async def warm(config: BenchConfig, url: str, body: bytes, want: str = "hit-exact") -> str:
    """Send `body` until it is answered with X-Cache `want` (bounded); the last value."""
    reply = Reply(0, "none", math.nan)
    deadline = time.monotonic() + _WARM_BUDGET_S
    async with _session(config) as session:
        for _ in range(_WARM_TRIES):
            interrupts.check()
            reply = await post(session, url, body)
            if (reply.status, reply.xcache) == (200, want) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.02)
    return reply.xcache


async def until_looked_up(config: BenchConfig, url: str, bodies: Iterable[bytes]) -> str:
    """Send new prompts (`bodies`, one each) until one is answered `miss`, both cache stages
    run within their budgets (bounded); the last X-Cache. A stage slow at start (the first
    embedding, the vector index created) is skipped until a probe fits it, once a second, so
    a check right after start-up could see `skipped` on every prompt."""
    value = "none"
    deadline = time.monotonic() + _WARM_BUDGET_S
    async with _session(config) as session:
        for body in itertools.islice(bodies, _WARM_TRIES):
            interrupts.check()
            reply = await post(session, url, body)
            value = reply.xcache if reply.status == 200 else f"status {reply.status}"
            if value == "miss" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
    return value


async def once(config: BenchConfig, url: str, body: bytes) -> str:
    """The X-Cache of one answer (or `status N`)."""
    async with _session(config) as session:
        reply = await post(session, url, body)
    return reply.xcache if reply.status == 200 else f"status {reply.status}"


def run_wrk(config: BenchConfig, m: Measured, url: str, body: bytes) -> Measured:
    """wrk (1 thread) for max throughput, counting every response's X-Cache value."""
    assert config.wrk is not None
    seconds = max(1, round(config.duration_s))
    spec = wrk.WrkRun(url, body, m.concurrency, seconds, config.request_timeout_s, "x-cache")
    result, counts = wrk.run(config.wrk, spec, config.out_dir, config.client_cpu)
    m.requests, m.errors = result.ok + result.errors, result.errors
    m.elapsed_s, m.latency, m.xcache = result.elapsed_s, result.latency, counts
    m.counted = counts.get("hit-exact", 0)
    return m
