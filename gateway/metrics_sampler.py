"""Copies live state (replica load, Redis circuits, write-back queue, rate limits, the
semantic cache's encoders and judgements, the event loop's task count, the log records
dropped) into the metrics, and flushes the per-request observations added up since the last time.

Each worker samples its own state on a timer: with several workers, sampling only when
/metrics is scraped would leave the other workers' values stale.
"""

from __future__ import annotations

import asyncio
import logging
import time

from access.limiter import RateLimiter
from backends.discovery import Discovery
from backends.fleet import Fleet
from backends.pool_agreement import FACTS
from cache.error_bound import BoundEstimate
from cache.layer import CacheLayer
from cache.types import EncoderSample
from obs.logs import dropped_records
from obs.metrics import GatewayMetrics
from obs.replica_metrics import DnsSample

log = logging.getLogger("gateway.metrics")

SAMPLE_INTERVAL_S = 1.0


def sample(
    metrics: GatewayMetrics,
    fleet: Fleet,
    cache: CacheLayer,
    limiter: RateLimiter,
    discovery: Discovery | None = None,
    tasks: int | None = None,
) -> None:
    """One sample of every live gauge; `tasks` is the event loop's task count, when known."""
    if tasks is not None:
        metrics.sampled.event_loop_tasks(tasks)
    sampled: list[tuple[str, str]] = []
    now = time.monotonic()  # the fleet's clock: until when a replica is ejected
    # Retired replicas still finishing requests first: a replica back under the same URL wins.
    for replica in fleet.retiring():
        queued = replica.admission.queued()
        metrics.replica_state(replica.model, replica.url, replica.inflight, queued, False)
        sampled.append((replica.model, replica.url))
    for model in fleet.models:
        for replica in fleet.replicas(model):
            metrics.replica_state(
                model,
                replica.url,
                replica.inflight,
                replica.admission.queued(),
                replica.routable(now),
                len(replica.prefix) if replica.prefix.ready else None,
            )
            sampled.append((model, replica.url))
    metrics.retain_replicas(sampled)  # a closed replica's series go
    metrics.replica_ejections(fleet.outliers.ejected)
    for model in fleet.models:
        metrics.sampled.model_disagreement(
            model, FACTS, fleet.members.agreement.disagreements(model)
        )
    if discovery is not None:
        metrics.dns(
            DnsSample(s.url, stats.resolved, stats.empty, stats.failed, stats.stale_for)
            for s, stats in discovery.stats.items()
        )
    breakers = cache.breakers()
    if limiter.shared is not None:
        breakers.append(limiter.shared.breaker)
    for breaker in breakers:
        metrics.sampled.redis_circuit(breaker.name, breaker.state.value.replace("-", "_"))
    metrics.sampled.rate_limits(limiter.refused, limiter.local_decisions)
    writeback = cache.writeback
    metrics.sampled.writeback(writeback.depth, writeback.dropped, writeback.failed)
    metrics.sampled.log_records(dropped_records())
    semantic = cache.semantic
    if semantic is not None:
        for encoder in semantic.encoders:
            _encoder(metrics, encoder.sample())
        # Every judged match (shadow mode, withheld or audited ones), with or without a bound.
        estimate = BoundEstimate.of(*semantic.stats.judgements())
        metrics.sampled.semantic_error(
            estimate.correct, estimate.wrong, estimate.rate, estimate.upper
        )
        metrics.sampled.semantic_index(refused=semantic.index_mismatch is not None)
    metrics.flush()


def _encoder(metrics: GatewayMetrics, s: EncoderSample) -> None:
    totals = {
        "texts": s.texts, "batches": s.batches, "failures": s.failures,
        "cancelled": s.cancelled, "refused": s.refused,
    }  # fmt: skip
    metrics.sampled.encoder(s.name, totals, s.queued)


async def sample_forever(
    metrics: GatewayMetrics,
    fleet: Fleet,
    cache: CacheLayer,
    limiter: RateLimiter,
    discovery: Discovery | None = None,
) -> None:
    while True:
        try:
            sample(metrics, fleet, cache, limiter, discovery, len(asyncio.all_tasks()))
        except Exception:  # a sampler must never die
            log.exception("sampling metrics failed")
        await asyncio.sleep(SAMPLE_INTERVAL_S)
