"""Prometheus metrics of the gateway, correct with one or several uvicorn workers.

One worker: each `GatewayMetrics` owns a private registry (tests build several). Several
workers: PROMETHEUS_MULTIPROC_DIR (see `obs.multiproc.prepare_multiprocess`) makes every
worker write memory-mapped files there and `render` merges all workers' files, so any worker
answers GET /metrics for the whole process group.

Gauges in multiprocess mode: in-flight, queued, write-back depth and the Redis circuit
one-hot gauge use `livesum` (the sum over live workers: each worker has its own fleet
counters, queue and breaker, so e.g. `gateway_redis_circuit_state{state="open"}` is the
number of workers whose breaker is open); `gateway_replica_healthy` uses `livemin` (0 as soon
as any live worker has ejected the replica). Dead workers' live gauges are swept when a
worker starts (`sweep_dead_processes`). A retired replica's series are removed, with several
workers too (`obs.replica_metrics`).

Hot-path methods look up cached label children in a dict and call `observe`/`inc`; the
label set of every metric is small and known (routes, stages, cache kinds), except models:
pass `models=` (the configured names) so a client cannot grow the label set, others become
`other`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from typing import Literal

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
    values,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from obs.metric_batches import CounterBatch, HistogramBatch
from obs.multiproc import ENV_VAR, sweep_dead_processes
from obs.replica_metrics import DnsSample, ReplicaKey, ReplicaMetrics, TombstoneCollector
from obs.sampled_metrics import SampledMetrics

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
OTHER_MODEL = "other"
NO_MODEL = "none"  # refused before the body named a model (e.g. invalid JSON)

# Whole requests: from an in-process cache hit (~0.3 ms) to a long batch generation (the
# batch class's default budget is 1800 s, the interactive one's 300 s).
REQUEST_BUCKETS = (
    *(0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
    *(1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0),
)
# Stages: 0.1 ms (an in-process cache lookup) to 1800 s (a batch request's whole backend call;
# its queue wait and first token may each take 600 s).
STAGE_BUCKETS = (
    *(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05),
    *(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0),
)
# Time to first token: 5 ms (a replayed hit) to 600 s (the batch class's default first-token
# budget; the interactive one's is 30 s).
TTFT_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5),
    *(0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0),
)
# Time per output token: 1 ms (small model, big GPU) to 1 s (overloaded).
TPOT_BUCKETS = (
    *(0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03),
    *(0.05, 0.075, 0.1, 0.25, 0.5, 1.0),
)

# `semantic_shadow`: shadow mode's lookups, which are measured and never served.
CacheKind = Literal["exact", "semantic", "semantic_shadow"]
CacheResult = Literal["hit", "miss", "error", "skipped"]


class GatewayMetrics:
    """All gateway metrics; build once per process (per app), after the CLI prepared the mode."""

    def __init__(self, *, models: Collection[str] | None = None) -> None:
        self.multiprocess_dir = os.environ.get(ENV_VAR) or None
        if self.multiprocess_dir is not None:
            if values.ValueClass is values.MutexValue:
                raise RuntimeError(
                    f"{ENV_VAR} was set after prometheus_client was imported in this process; "
                    "set it before the workers start (obs.multiproc.prepare_multiprocess)"
                )
            sweep_dead_processes(self.multiprocess_dir)
        disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series
        self._models = frozenset(models) if models is not None else None
        self.registry = registry = CollectorRegistry(auto_describe=True)

        self._request = Histogram(
            "gateway_request_duration_seconds",
            "Request duration from receipt to the last byte, by route, model and cache result",
            ("route", "model", "cache", "status"),
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self._ttft = Histogram(
            "gateway_time_to_first_token_seconds",
            "Time from receipt to the first generated token sent",
            ("model",),
            buckets=TTFT_BUCKETS,
            registry=registry,
        )
        self._tpot = Histogram(
            "gateway_time_per_output_token_seconds",
            "Generation time after the first token divided by the further output tokens",
            ("model",),
            buckets=TPOT_BUCKETS,
            registry=registry,
        )
        self._stage = Histogram(
            "gateway_stage_duration_seconds",
            "Duration of each pipeline stage",
            ("stage",),
            buckets=STAGE_BUCKETS,
            registry=registry,
        )
        self._cache = Counter(
            "gateway_cache_lookups_total",
            "Cache lookups by kind (exact, semantic, semantic_shadow: never served) and result "
            "(hit, miss, error, skipped)",
            ("kind", "result"),
            registry=registry,
        )
        self._overruns = Counter(
            "gateway_budget_overruns_total",
            "Requests whose budget ran out, by the stage it ran out in",
            ("stage",),
            registry=registry,
        )
        self._shed = Counter(
            "gateway_shed_requests_total",
            "Requests refused by admission control, by reason and priority",
            ("reason", "priority"),
            registry=registry,
        )
        self._stream_errors = Counter(
            "gateway_stream_errors_total",
            "Streams that ended with an error event after their first byte (their status stays"
            " 200), by route, model and error code",
            ("route", "model", "code"),
            registry=registry,
        )
        self._tokens = Counter(
            "gateway_tokens_total",
            "Prompt tokens a backend read (type=input), tokens it generated (type=output), and"
            " answer tokens served without generating them: cache hits, coalesced callers"
            " (type=cached_output)",
            ("model", "type"),
            registry=registry,
        )
        self.replicas = ReplicaMetrics(registry, multiprocess=self.multiprocess_dir is not None)
        self.sampled = SampledMetrics(registry)

        self._batches: list[HistogramBatch | CounterBatch] = []
        self._request_children: dict[tuple[str, str, str, int], HistogramBatch] = {}
        self._ttft_children: dict[str, HistogramBatch] = {}
        self._tpot_children: dict[str, HistogramBatch] = {}
        self._stage_children: dict[str, HistogramBatch] = {}
        self._cache_children: dict[tuple[str, str], CounterBatch] = {}
        self._overrun_children: dict[tuple[str, ...], CounterBatch] = {}
        self._shed_children: dict[tuple[str, ...], CounterBatch] = {}
        self._stream_error_children: dict[tuple[str, ...], CounterBatch] = {}
        self._token_children: dict[str, tuple[CounterBatch, CounterBatch, CounterBatch]] = {}

        if self.multiprocess_dir is not None:
            self._exposed = CollectorRegistry(auto_describe=True)
            TombstoneCollector(self._exposed, self.multiprocess_dir)
        else:
            self._exposed = registry

    def request(self, route: str, model: str, cache: str, status: int, duration_s: float) -> None:
        """One finished request (`cache` is the X-Cache value: hit-exact, miss, bypass, ...)."""
        model = self._model(model)
        key = (route, model, cache, status)
        child = self._request_children.get(key)
        if child is None:
            child = self._histogram(self._request.labels(route, model, cache, str(status)))
            self._request_children[key] = child
        child.observe(duration_s)

    def ttft(self, model: str, seconds: float) -> None:
        """Time to first token of one response."""
        model = self._model(model)
        child = self._ttft_children.get(model)
        if child is None:
            child = self._ttft_children[model] = self._histogram(self._ttft.labels(model))
        child.observe(seconds)

    def time_per_output_token(self, model: str, seconds: float) -> None:
        """Mean time between output tokens of one response."""
        model = self._model(model)
        child = self._tpot_children.get(model)
        if child is None:
            child = self._tpot_children[model] = self._histogram(self._tpot.labels(model))
        child.observe(seconds)

    def stage(self, stage: str, seconds: float) -> None:
        """Duration of one pipeline stage (names in `obs.attributes.STAGES`)."""
        child = self._stage_children.get(stage)
        if child is None:
            child = self._stage_children[stage] = self._histogram(self._stage.labels(stage))
        child.observe(seconds)

    def cache_lookup(self, kind: CacheKind, result: CacheResult) -> None:
        """One exact, semantic or shadow-mode semantic cache lookup and its outcome."""
        key = (kind, result)
        child = self._cache_children.get(key)
        if child is None:
            child = self._cache_children[key] = self._counter(self._cache.labels(kind, result))
        child.inc()

    def budget_overrun(self, stage: str) -> None:
        """A request's budget ran out during `stage`."""
        self._inc(self._overrun_children, self._overruns, stage)

    def shed(self, reason: str, priority: str) -> None:
        """Admission control refused a request."""
        self._inc(self._shed_children, self._shed, reason, priority)

    def stream_error(self, route: str, model: str, code: str) -> None:
        """A stream ended with an error event (`code`) after its first byte."""
        self._inc(self._stream_error_children, self._stream_errors, route, self._model(model), code)

    def _inc(
        self, children: dict[tuple[str, ...], CounterBatch], metric: Counter, *key: str
    ) -> None:
        child = children.get(key)
        if child is None:
            child = children[key] = self._counter(metric.labels(*key))
        child.inc()

    def tokens(self, model: str, input: int, output: int) -> None:
        """Prompt and generated tokens of one response a backend generated."""
        children = self._token_counters(model)
        if input:
            children[0].inc(input)
        if output:
            children[1].inc(output)

    def cached_tokens(self, model: str, output: int) -> None:
        """Answer tokens of one response served without generating them (a cache hit, or a
        caller that joined an identical request's backend call)."""
        if output:
            self._token_counters(model)[2].inc(output)

    def _token_counters(self, model: str) -> tuple[CounterBatch, CounterBatch, CounterBatch]:
        model = self._model(model)
        children = self._token_children.get(model)
        if children is None:
            children = (
                self._counter(self._tokens.labels(model, "input")),
                self._counter(self._tokens.labels(model, "output")),
                self._counter(self._tokens.labels(model, "cached_output")),
            )
            self._token_children[model] = children
        return children

    def replica_state(
        self,
        model: str,
        replica_url: str,
        inflight: int,
        queued: int,
        healthy: bool,
        prefix_blocks: int | None = None,
    ) -> None:
        """Sampled load and health of one replica (call periodically from each worker), and
        the blocks its prefix index holds (None: prefix routing cannot use it)."""
        key = (self._model(model), replica_url)
        self.replicas.state(key, inflight, queued, healthy, prefix_blocks)

    def retain_replicas(self, replicas: Iterable[tuple[str, str]]) -> list[ReplicaKey]:
        """After sampling every (model, replica URL) the fleet holds: remove the series of
        the replicas sampled before that are gone (retired and closed); returns them."""
        return self.replicas.retain((self._model(model), url) for model, url in replicas)

    def replica_ejections(self, totals: Mapping[tuple[str, str], int]) -> None:
        """Sampled ejections from routing so far, by (model, reason) (`backends.outliers`)."""
        merged: dict[tuple[str, str], int] = {}
        for (model, reason), total in totals.items():
            key = (self._model(model), reason)
            merged[key] = merged.get(key, 0) + total
        self.sampled.replica_ejections(merged)

    def dns(self, samples: Iterable[DnsSample]) -> None:
        """Sampled lookups of the `+dns` replica sets."""
        self.replicas.dns(samples)

    def flush(self) -> None:
        """Hand the observations added up since the last flush to prometheus-client (call
        about once a second; `render` flushes this process first)."""
        for batch in self._batches:
            batch.flush()

    def render(self) -> tuple[bytes, str]:
        """The text exposition (all workers' values in multiprocess mode) and its content type.

        Other workers' observations show once their periodic flush ran (within a second)."""
        self.flush()
        return generate_latest(self._exposed), CONTENT_TYPE

    def _histogram(self, child: Histogram) -> HistogramBatch:
        batch = HistogramBatch(child, child._upper_bounds)
        self._batches.append(batch)
        return batch

    def _counter(self, child: Counter) -> CounterBatch:
        batch = CounterBatch(child)
        self._batches.append(batch)
        return batch

    def _model(self, model: str) -> str:
        models = self._models
        if models is None or model in models or model == NO_MODEL:
            return model
        return OTHER_MODEL
