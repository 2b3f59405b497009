"""Copies live state (replica load, Redis circuits, write-back queue) into the metrics, and
flushes the per-request observations added up since the last time.

Each worker samples its own state on a timer: with several workers, sampling only when
/metrics is scraped would leave the other workers' values stale.
"""

from __future__ import annotations

import asyncio
import logging

from backends.fleet import Fleet
from cache.layer import CacheLayer
from obs.metrics import GatewayMetrics

log = logging.getLogger("gateway.metrics")

SAMPLE_INTERVAL_S = 1.0


def sample(metrics: GatewayMetrics, fleet: Fleet, cache: CacheLayer) -> None:
    for model in fleet.models:
        for replica in fleet.replicas(model):
            metrics.replica_state(
                model,
                replica.url,
                replica.inflight,
                replica.admission.queued(),
                replica.healthy,
            )
    for breaker in cache.breakers():
        metrics.redis_circuit(breaker.name, breaker.state.value.replace("-", "_"))
    writeback = cache.writeback
    metrics.writeback(writeback.depth, writeback.dropped, writeback.failed)
    metrics.flush()


async def sample_forever(metrics: GatewayMetrics, fleet: Fleet, cache: CacheLayer) -> None:
    while True:
        try:
            sample(metrics, fleet, cache)
        except Exception:  # a sampler must never die
            log.exception("sampling metrics failed")
        await asyncio.sleep(SAMPLE_INTERVAL_S)
