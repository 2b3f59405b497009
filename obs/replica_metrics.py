"""Per-replica gauges (in-flight, queued, healthy) and DNS discovery metrics, whose series
are removed when a replica leaves the fleet, in one process and with several workers.

A retired replica's series must disappear, not stay frozen at their last value: one process
removes the label set from the gauge. In multiprocess mode prometheus_client cannot remove a
series (each worker's values live in its memory-mapped file until the worker dies), so a
worker that forgets a replica writes NaN there (a tombstone) and `TombstoneCollector` drops
tombstoned samples per worker before merging the workers: the series is summed (livesum) or
minimised (livemin) over the workers still reporting it, and disappears once every worker
has forgotten it (or died). A replica that comes back overwrites its tombstone.
"""

from __future__ import annotations

import glob
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

ReplicaKey = tuple[str, str]
"""(model label, replica URL)."""

INFLIGHT = "gateway_replica_inflight_requests"
QUEUED = "gateway_replica_queued_requests"
HEALTHY = "gateway_replica_healthy"
PREFIX_READY = "gateway_replica_prefix_ready"
PREFIX_BLOCKS = "gateway_replica_prefix_blocks"
DNS_STALE = "gateway_dns_stale_lookups"
FORGETTABLE = frozenset({INFLIGHT, QUEUED, HEALTHY, PREFIX_READY, PREFIX_BLOCKS, DNS_STALE})
"""The gauges whose series a worker may tombstone."""

DNS_RESULTS = ("resolved", "empty", "failed")


class TombstoneCollector:
    """`MultiProcessCollector` that leaves out the tombstoned (NaN) samples of the
    forgettable gauges before merging the workers' files, and skips files another worker is
    creating at this instant. Relies on the collector's `_read_metrics` /
    `_accumulate_metrics` (prometheus-client is pinned)."""

    def __init__(self, registry: CollectorRegistry, path: str) -> None:
        self._path = path
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        """Nothing: registering must not read the files (a worker starting would crash on a
        file another worker is creating), and the exposition registry holds only this."""
        return []

    def collect(self) -> Iterable[Metric]:
        files = [f for f in glob.glob(os.path.join(self._path, "*.db")) if _begun(f)]
        read: dict[str, Metric] = MultiProcessCollector._read_metrics(files)  # type: ignore[no-untyped-call]
        for name in FORGETTABLE & read.keys():
            metric = read[name]
            metric.samples = [s for s in metric.samples if not math.isnan(s.value)]
        merged: Iterable[Metric] = MultiProcessCollector._accumulate_metrics(read, True)  # type: ignore[no-untyped-call]
        return merged


def _begun(path: str) -> bool:
    """Whether a worker's file has its header: prometheus-client creates a file empty and
    sizes it a moment later, and reading it in between fails (struct.error). A file only
    grows, so one seen non-empty here stays readable; a deleted one (a dead worker's live
    gauges, swept) is skipped too."""
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def _forget(gauge: Gauge, labels: tuple[str, ...], child: Gauge, multiprocess: bool) -> None:
    if multiprocess:
        child.set(math.nan)  # the tombstone in this worker's file
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "not implemented in multi-process"
            gauge.remove(*labels)
    else:
        gauge.remove(*labels)


@dataclass(frozen=True, slots=True)
class DnsSample:
    """One `+dns` replica set's lookups: cumulative counts and the current stale run."""

    set: str
    resolved: int
    empty: int
    failed: int
    stale_for: int


class ReplicaMetrics:
    """The per-replica and per-replica-set series of one `GatewayMetrics`."""

    def __init__(self, registry: CollectorRegistry, *, multiprocess: bool) -> None:
        self._multiprocess = multiprocess
        replica = ("model", "replica")
        self._inflight = Gauge(
            INFLIGHT,
            "Requests running on each replica (summed over workers)",
            replica,
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._queued = Gauge(
            QUEUED,
            "Requests waiting for each replica (summed over workers)",
            replica,
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._healthy = Gauge(
            HEALTHY,
            "1 if the replica is in rotation: its health probe passes and it is not ejected "
            "as an outlier or as hung (0 if any worker took it out; 0 while a retired replica "
            "finishes its requests)",
            replica,
            multiprocess_mode="livemin",
            registry=registry,
        )
        self._prefix_ready = Gauge(
            PREFIX_READY,
            "1 while prefix-aware routing can use the replica: its KV events are followed and "
            "its block size is known (0 if any worker cannot)",
            replica,
            multiprocess_mode="livemin",
            registry=registry,
        )
        self._prefix_blocks = Gauge(
            PREFIX_BLOCKS,
            "KV-cache blocks the replica's events report it holds (with several workers: the "
            "fewest any worker knows)",
            replica,
            multiprocess_mode="livemin",
            registry=registry,
        )
        self._dns_lookups = Counter(
            "gateway_dns_lookups_total",
            "Lookups of each +dns replica set, by result (resolved, empty: no address or "
            "NXDOMAIN, failed: timeout or resolver error)",
            ("set", "result"),
            registry=registry,
        )
        self._dns_stale = Gauge(
            DNS_STALE,
            "Consecutive lookups of a +dns replica set that found no address while its last "
            "known replicas are kept (0: the last lookup answered; with several workers: the "
            "highest)",
            ("set",),
            multiprocess_mode="livemax",
            registry=registry,
        )
        self._children: dict[ReplicaKey, tuple[Gauge, ...]] = {}
        self._dns_last: dict[tuple[str, str], int] = {}
        self._dns_children: dict[str, Gauge] = {}

    def state(
        self,
        key: ReplicaKey,
        inflight: int,
        queued: int,
        healthy: bool,
        prefix_blocks: int | None = None,
    ) -> None:
        """One replica's sample; `prefix_blocks` is None while prefix routing cannot use it."""
        children = self._children.get(key)
        if children is None:
            children = tuple(gauge.labels(*key) for gauge in self._gauges())
            self._children[key] = children
        children[0].set(inflight)
        children[1].set(queued)
        children[2].set(1 if healthy else 0)
        children[3].set(0 if prefix_blocks is None else 1)
        children[4].set(prefix_blocks or 0)

    def retain(self, keys: Iterable[ReplicaKey]) -> list[ReplicaKey]:
        """Remove the series of every replica not in `keys`; returns those removed."""
        keep = set(keys)
        gone = [key for key in self._children if key not in keep]
        for key in gone:
            children = self._children.pop(key)
            for gauge, child in zip(self._gauges(), children, strict=True):
                _forget(gauge, key, child, self._multiprocess)
        return gone

    def _gauges(self) -> Iterator[Gauge]:
        yield self._inflight
        yield self._queued
        yield self._healthy
        yield self._prefix_ready
        yield self._prefix_blocks

    def dns(self, samples: Iterable[DnsSample]) -> None:
        """Sampled lookups of the `+dns` replica sets (cumulative counts, current run)."""
        for sample in samples:
            for result, total in zip(
                DNS_RESULTS, (sample.resolved, sample.empty, sample.failed), strict=True
            ):
                self._count((sample.set, result), total, self._dns_lookups.labels)
            child = self._dns_children.get(sample.set)
            if child is None:
                child = self._dns_children[sample.set] = self._dns_stale.labels(sample.set)
            child.set(sample.stale_for)

    def _count(self, key: tuple[str, str], total: int, labels: Callable[..., Counter]) -> None:
        last = self._dns_last.get(key, 0)
        added = total - last if total >= last else total
        self._dns_last[key] = total
        if added:
            labels(*key).inc(added)
