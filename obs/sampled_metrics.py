"""The gauges and counters the periodic sampler sets from other objects' state: the Redis
circuit breakers, the write-back queue, the semantic error bound and index, the semantic
cache's encoders, the rate limiter, the replicas ejected from routing, the event loop, and
what each model's replicas disagree on. Each sample carries cumulative totals; a counter
advances by the difference."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

CIRCUIT_STATES = ("closed", "open", "half_open")


def added(total: int, last: int) -> int:
    """How far a cumulative total moved since the last sample; a total below the last one
    means a new source object (a restarted queue or bound), counted from zero."""
    return total - last if total >= last else total


class SampledMetrics:
    """Sampled dependency and worker state, registered on the gateway's registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._circuit = Gauge(
            "gateway_redis_circuit_state",
            "Redis circuit breaker state, one-hot over closed/open/half_open "
            "(with several workers: the number of workers in that state)",
            ("name", "state"),
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._wb_depth = Gauge(
            "gateway_writeback_queue_depth",
            "Cache writes waiting in the write-back queue",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._wb_dropped = Counter(
            "gateway_writeback_dropped_total",
            "Cache writes dropped because the write-back queue was full",
            registry=registry,
        )
        self._wb_failed = Counter(
            "gateway_writeback_failed_total", "Cache writes that failed", registry=registry
        )
        self._logs_dropped = Counter(
            "gateway_log_records_dropped_total",
            "Log records dropped because stderr fell too far behind (the writer's queue was full)",
            registry=registry,
        )
        self._judged = Counter(
            "gateway_semantic_judgements_total",
            "Semantic matches judged against the fresh answer, by outcome (correct, wrong)",
            ("outcome",),
            registry=registry,
        )
        self._error_rate = Gauge(
            "gateway_semantic_error_rate",
            "Observed wrong-hit rate of judged semantic matches (with several workers: the "
            "highest)",
            multiprocess_mode="livemax",
            registry=registry,
        )
        self._error_upper = Gauge(
            "gateway_semantic_error_rate_upper",
            "95% Wilson upper bound of the semantic wrong-hit rate (with several workers: the "
            "highest)",
            multiprocess_mode="livemax",
            registry=registry,
        )
        self._index_mismatch = Gauge(
            "gateway_semantic_index_mismatch",
            "1 while the semantic index in Redis under the gateway's name has another schema: "
            "refused, semantic lookups fail (with several workers: the highest)",
            multiprocess_mode="livemax",
            registry=registry,
        )
        self._disagree = Gauge(
            "gateway_model_replicas_disagree",
            "1 while a model's replicas report different values of `fact` (name: the served "
            "model name; tokenizer: the tokenizer or chat template; context: the context "
            "length) (with several workers: the highest)",
            ("model", "fact"),
            multiprocess_mode="livemax",
            registry=registry,
        )
        self._tasks = Gauge(
            "gateway_event_loop_tasks",
            "asyncio tasks alive in the worker's event loop (with several workers: one series "
            "per live worker, by pid)",
            multiprocess_mode="liveall",
            registry=registry,
        )
        self._rate_limited = Counter(
            "gateway_rate_limited_total",
            "Requests refused with 429 by an API key's request or token limit",
            ("unit",),
            registry=registry,
        )
        self._limit_local = Counter(
            "gateway_rate_limit_local_decisions_total",
            "Rate-limit decisions taken by one replica alone because Redis was unreachable",
            registry=registry,
        )
        self._encoder_counters = {
            "texts": Counter(
                "gateway_encoder_texts_total",
                "Texts the semantic cache's encoders embedded, by encoder (embedder-onnx, "
                "clause-judge-onnx, ...)",
                ("encoder",),
                registry=registry,
            ),
            "batches": Counter(
                "gateway_encoder_batches_total",
                "Batches the semantic cache's encoders ran, by encoder",
                ("encoder",),
                registry=registry,
            ),
            "failures": Counter(
                "gateway_encoder_failed_batches_total",
                "Encoder batches that failed (their lookups became cache errors), by encoder",
                ("encoder",),
                registry=registry,
            ),
            "cancelled": Counter(
                "gateway_encoder_cancelled_texts_total",
                "Texts dropped before their batch because the request gave up, by encoder",
                ("encoder",),
                registry=registry,
            ),
            "refused": Counter(
                "gateway_encoder_refused_texts_total",
                "Texts refused because the encoder's queue was full (overload), by encoder",
                ("encoder",),
                registry=registry,
            ),
        }
        self._encoder_queued = Gauge(
            "gateway_encoder_queued_texts",
            "Texts waiting for an encoder, by encoder (with several workers: their sum)",
            ("encoder",),
            multiprocess_mode="livesum",
            registry=registry,
        )
        self._ejections = Counter(
            "gateway_replica_ejections_total",
            "Replicas taken out of routing by the calls they served, by model and reason "
            "(failures: too many in a row; hung: no answer to a probe; unreachable: until its "
            "health probe passes); summed over workers",
            ("model", "reason"),
            registry=registry,
        )
        self._ejections_last: dict[tuple[str, str], int] = {}
        self._circuit_last: dict[str, str] = {}
        self._wb_last = (0, 0)
        self._logs_dropped_last = 0
        self._judged_last = (0, 0)
        self._limits_last: dict[str, int] = {}
        self._encoder_last: dict[tuple[str, str], int] = {}

    def redis_circuit(self, name: str, state: str) -> None:
        """Sampled breaker state: one of closed, open, half_open (one-hot gauge)."""
        if state not in CIRCUIT_STATES:
            raise ValueError(f"circuit state must be one of {CIRCUIT_STATES}, got {state!r}")
        if self._circuit_last.get(name) == state:
            return
        self._circuit_last[name] = state
        for candidate in CIRCUIT_STATES:
            self._circuit.labels(name, candidate).set(1 if candidate == state else 0)

    def writeback(self, depth: int, dropped_total: int, failed_total: int) -> None:
        """Sampled write-back queue: its depth and its cumulative drop and failure counts."""
        self._wb_depth.set(depth)
        last_dropped, last_failed = self._wb_last
        if dropped := added(dropped_total, last_dropped):
            self._wb_dropped.inc(dropped)
        if failed := added(failed_total, last_failed):
            self._wb_failed.inc(failed)
        self._wb_last = (dropped_total, failed_total)

    def log_records(self, dropped_total: int) -> None:
        """Sampled log writer: its cumulative count of dropped records."""
        if dropped := added(dropped_total, self._logs_dropped_last):
            self._logs_dropped.inc(dropped)
        self._logs_dropped_last = dropped_total

    def semantic_error(
        self, correct_total: int, wrong_total: int, rate: float, upper: float
    ) -> None:
        """Sampled error bound: cumulative judgements, the wrong-hit rate and its upper bound."""
        self._error_rate.set(rate)
        self._error_upper.set(upper)
        last_correct, last_wrong = self._judged_last
        if correct := added(correct_total, last_correct):
            self._judged.labels("correct").inc(correct)
        if wrong := added(wrong_total, last_wrong):
            self._judged.labels("wrong").inc(wrong)
        self._judged_last = (correct_total, wrong_total)

    def semantic_index(self, *, refused: bool) -> None:
        """Sampled semantic index: whether the one in Redis is refused (another schema)."""
        self._index_mismatch.set(1 if refused else 0)

    def model_disagreement(
        self, model: str, facts: Iterable[str], disagreeing: Collection[str]
    ) -> None:
        """Sampled: which of `facts` `model`'s replicas disagree on (`disagreeing`)."""
        for fact in facts:
            self._disagree.labels(model, fact).set(1 if fact in disagreeing else 0)

    def event_loop_tasks(self, count: int) -> None:
        """Sampled number of asyncio tasks alive in this worker (a leak shows as a climb)."""
        self._tasks.set(count)

    def rate_limits(self, refused_totals: Mapping[str, int], local_total: int) -> None:
        """Sampled rate limiter: cumulative refusals per unit and local decisions."""
        for unit, total in (*refused_totals.items(), ("local", local_total)):
            more = added(total, self._limits_last.get(unit, 0))
            self._limits_last[unit] = total
            if not more:
                continue
            if unit == "local":
                self._limit_local.inc(more)
            else:
                self._rate_limited.labels(unit).inc(more)

    def replica_ejections(self, totals: Mapping[tuple[str, str], int]) -> None:
        """Sampled ejections from routing: cumulative totals by (model, reason)."""
        for key, total in totals.items():
            more = added(total, self._ejections_last.get(key, 0))
            self._ejections_last[key] = total
            if more:
                self._ejections.labels(*key).inc(more)

    def encoder(self, name: str, totals: Mapping[str, int], queued: int) -> None:
        """Sampled encoder `name`: cumulative `totals` by kind (texts, batches, failures,
        cancelled, refused) and the texts queued now."""
        for kind, total in totals.items():
            more = added(total, self._encoder_last.get((name, kind), 0))
            self._encoder_last[name, kind] = total
            if more:
                self._encoder_counters[kind].labels(name).inc(more)
        self._encoder_queued.labels(name).set(queued)
