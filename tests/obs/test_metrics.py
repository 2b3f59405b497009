from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from budgets.settings import BudgetSettings
from obs.metrics import (
    CONTENT_TYPE,
    REQUEST_BUCKETS,
    STAGE_BUCKETS,
    TTFT_BUCKETS,
    GatewayMetrics,
)
from obs.multiproc import ENV_VAR

ROUTE = "/v1/chat/completions"
ROOT = Path(__file__).resolve().parents[2]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(autouse=True)
def _single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def parse(body: bytes) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, metric: str, /, **labels: str) -> float:
    return samples[(metric, frozenset(labels.items()))]


def _labelled(samples: Samples, metric: str) -> Iterator[tuple[tuple[str, dict[str, str]], float]]:
    """Every series of `metric`, with its labels as a dict."""
    for (name, labels), v in samples.items():
        if name == metric:
            yield (name, dict(labels)), v


def test_render_after_known_traffic() -> None:
    """/metrics parsed with the Prometheus text parser shows exactly the recorded traffic."""
    metrics = GatewayMetrics(models=["sim"])
    for _ in range(3):
        metrics.request(ROUTE, "sim", "miss", 200, 0.02)
    metrics.request(ROUTE, "sim", "hit-exact", 200, 0.0004)
    metrics.ttft("sim", 0.2)
    metrics.time_per_output_token("sim", 0.012)
    metrics.stage("exact_cache", 0.0003)
    metrics.stage("backend", 1.5)
    metrics.stage("backend", 0.5)
    metrics.cache_lookup("exact", "hit")
    metrics.cache_lookup("exact", "miss")
    metrics.cache_lookup("exact", "miss")
    metrics.cache_lookup("semantic", "skipped")
    metrics.budget_overrun("backend")
    metrics.shed("queue_full", "low")
    metrics.shed("queue_full", "low")
    metrics.tokens("sim", 12, 30)
    metrics.tokens("sim", 3, 0)

    body, content_type = metrics.render()
    assert content_type == CONTENT_TYPE
    assert content_type.startswith("text/plain; version=0.0.4")
    s = parse(body)
    miss = {"route": ROUTE, "model": "sim", "cache": "miss", "status": "200"}
    assert value(s, "gateway_request_duration_seconds_count", **miss) == 3
    assert value(s, "gateway_request_duration_seconds_sum", **miss) == pytest.approx(0.06)
    assert value(s, "gateway_request_duration_seconds_bucket", **miss, le="0.01") == 0
    assert value(s, "gateway_request_duration_seconds_bucket", **miss, le="0.025") == 3
    hit = {**miss, "cache": "hit-exact"}
    assert value(s, "gateway_request_duration_seconds_bucket", **hit, le="0.00025") == 0
    assert value(s, "gateway_request_duration_seconds_bucket", **hit, le="0.0005") == 1
    assert value(s, "gateway_time_to_first_token_seconds_count", model="sim") == 1
    assert value(s, "gateway_time_to_first_token_seconds_bucket", model="sim", le="0.25") == 1
    assert value(s, "gateway_time_to_first_token_seconds_bucket", model="sim", le="0.15") == 0
    assert value(s, "gateway_time_per_output_token_seconds_sum", model="sim") == 0.012
    assert value(s, "gateway_stage_duration_seconds_count", stage="backend") == 2
    assert value(s, "gateway_stage_duration_seconds_sum", stage="backend") == 2.0
    assert value(s, "gateway_stage_duration_seconds_bucket", stage="exact_cache", le="0.0005") == 1
    assert value(s, "gateway_cache_lookups_total", kind="exact", result="hit") == 1
    assert value(s, "gateway_cache_lookups_total", kind="exact", result="miss") == 2
    assert value(s, "gateway_cache_lookups_total", kind="semantic", result="skipped") == 1
    assert value(s, "gateway_budget_overruns_total", stage="backend") == 1
    assert value(s, "gateway_shed_requests_total", reason="queue_full", priority="low") == 2
    assert value(s, "gateway_tokens_total", model="sim", type="input") == 15
    assert value(s, "gateway_tokens_total", model="sim", type="output") == 30
    assert not any(name.endswith("_created") for name, _ in s)


def test_state_gauges() -> None:
    """Replica load/health, the Redis circuit (one-hot) and write-back depth are set."""
    metrics = GatewayMetrics()
    metrics.replica_state("sim", "grpc://a:1", inflight=4, queued=2, healthy=True)
    metrics.replica_state("sim", "grpc://b:1", inflight=0, queued=0, healthy=False)
    metrics.replica_state("sim", "grpc://a:1", inflight=3, queued=1, healthy=True)
    metrics.sampled.redis_circuit("exact", "closed")
    metrics.sampled.redis_circuit("exact", "open")
    metrics.sampled.writeback(depth=5, dropped_total=0, failed_total=0)
    metrics.sampled.event_loop_tasks(17)
    s = parse(metrics.render()[0])
    a = {"model": "sim", "replica": "grpc://a:1"}
    b = {"model": "sim", "replica": "grpc://b:1"}
    assert value(s, "gateway_replica_inflight_requests", **a) == 3
    assert value(s, "gateway_replica_queued_requests", **a) == 1
    assert value(s, "gateway_replica_healthy", **a) == 1
    assert value(s, "gateway_replica_healthy", **b) == 0
    assert value(s, "gateway_redis_circuit_state", name="exact", state="open") == 1
    assert value(s, "gateway_redis_circuit_state", name="exact", state="closed") == 0
    assert value(s, "gateway_redis_circuit_state", name="exact", state="half_open") == 0
    assert value(s, "gateway_writeback_queue_depth") == 5
    assert value(s, "gateway_event_loop_tasks") == 17
    with pytest.raises(ValueError, match="circuit state"):
        metrics.sampled.redis_circuit("exact", "ajar")


def test_writeback_cumulative_totals_become_counter_increments() -> None:
    """Sampled cumulative drop/failure totals add their deltas; a lower total is a new queue."""
    metrics = GatewayMetrics()
    metrics.sampled.writeback(depth=5, dropped_total=2, failed_total=0)
    metrics.sampled.writeback(depth=1, dropped_total=7, failed_total=1)
    metrics.sampled.writeback(depth=1, dropped_total=7, failed_total=1)
    metrics.sampled.writeback(depth=0, dropped_total=3, failed_total=1)
    s = parse(metrics.render()[0])
    assert value(s, "gateway_writeback_dropped_total") == 10
    assert value(s, "gateway_writeback_failed_total") == 1
    assert value(s, "gateway_writeback_queue_depth") == 0


def test_dropped_log_records_become_counter_increments() -> None:
    """The log writer's sampled drop total adds its delta; a new handler counts from zero."""
    metrics = GatewayMetrics()
    metrics.sampled.log_records(dropped_total=4)
    metrics.sampled.log_records(dropped_total=9)
    metrics.sampled.log_records(dropped_total=2)
    s = parse(metrics.render()[0])
    assert value(s, "gateway_log_records_dropped_total") == 11


def test_rate_limit_totals_become_counter_increments() -> None:
    """Sampled refusal and local-decision totals add their deltas per unit."""
    metrics = GatewayMetrics()
    metrics.sampled.rate_limits({"requests": 2, "tokens": 0}, local_total=1)
    metrics.sampled.rate_limits({"requests": 5, "tokens": 1}, local_total=1)
    s = parse(metrics.render()[0])
    assert value(s, "gateway_rate_limited_total", unit="requests") == 5
    assert value(s, "gateway_rate_limited_total", unit="tokens") == 1
    assert value(s, "gateway_rate_limit_local_decisions_total") == 1


def test_unknown_models_share_one_label() -> None:
    """With `models` given, a client-chosen model name cannot add label values."""
    metrics = GatewayMetrics(models=["sim"])
    metrics.request(ROUTE, "made-up-1", "miss", 404, 0.001)
    metrics.request(ROUTE, "made-up-2", "miss", 404, 0.001)
    metrics.ttft("made-up-3", 0.1)
    s = parse(metrics.render()[0])
    labels = {"route": ROUTE, "model": "other", "cache": "miss", "status": "404"}
    assert value(s, "gateway_request_duration_seconds_count", **labels) == 2
    assert value(s, "gateway_time_to_first_token_seconds_count", model="other") == 1
    assert {dict(sample_labels).get("model") for _, sample_labels in s} == {None, "other"}


def test_streams_cut_after_their_first_byte_are_counted_by_code() -> None:
    """A stream error keeps its request's 200; it is counted by route, model and code, and a
    client-chosen model name adds no label value."""
    metrics = GatewayMetrics(models=["sim"])
    metrics.stream_error(ROUTE, "sim", "backend_error")
    metrics.stream_error(ROUTE, "sim", "backend_error")
    metrics.stream_error(ROUTE, "made-up", "deadline_exceeded")
    s = parse(metrics.render()[0])
    errors = "gateway_stream_errors_total"
    assert value(s, errors, route=ROUTE, model="sim", code="backend_error") == 2
    assert value(s, errors, route=ROUTE, model="other", code="deadline_exceeded") == 1


def test_tokens_served_without_generating_them_are_not_generated_tokens() -> None:
    """Answers served from the cache (or a coalesced call) count as type=cached_output only:
    neither their prompt nor their answer adds to what backends read and generated."""
    metrics = GatewayMetrics()
    metrics.tokens("sim", 12, 30)
    metrics.cached_tokens("sim", 30)
    metrics.cached_tokens("sim", 0)
    s = parse(metrics.render()[0])
    tokens = "gateway_tokens_total"
    assert value(s, tokens, model="sim", type="input") == 12
    assert value(s, tokens, model="sim", type="output") == 30
    assert value(s, tokens, model="sim", type="cached_output") == 30


def test_batch_budgets_land_in_finite_buckets() -> None:
    """A batch request near its default budgets (1800 s whole, 600 s to the first token, as
    long in a stage) is told apart from a longer one: neither lands only in +Inf."""
    assert REQUEST_BUCKETS[-1] >= max(c.total_s for c in BudgetSettings().classes.values())
    assert TTFT_BUCKETS[-1] >= max(c.ttft_s for c in BudgetSettings().classes.values())
    assert STAGE_BUCKETS[-1] >= REQUEST_BUCKETS[-1]
    metrics = GatewayMetrics()
    metrics.request(ROUTE, "sim", "miss", 200, 1500.0)
    metrics.ttft("sim", 500.0)
    metrics.stage("backend", 1500.0)
    s = parse(metrics.render()[0])
    labels = {"route": ROUTE, "model": "sim", "cache": "miss", "status": "200"}
    request = "gateway_request_duration_seconds_bucket"
    assert value(s, request, **labels, le="300.0") == 0
    assert value(s, request, **labels, le="1800.0") == 1
    ttft = "gateway_time_to_first_token_seconds_bucket"
    assert value(s, ttft, model="sim", le="60.0") == 0
    assert value(s, ttft, model="sim", le="600.0") == 1
    assert value(s, "gateway_stage_duration_seconds_bucket", stage="backend", le="1800.0") == 1


def test_instances_are_independent() -> None:
    """Each instance owns a private registry (no duplicate-registration errors, no sharing)."""
    first, second = GatewayMetrics(), GatewayMetrics()
    first.budget_overrun("backend")
    assert ("gateway_budget_overruns_total", frozenset({("stage", "backend")})) in parse(
        first.render()[0]
    )
    assert not any(name == "gateway_budget_overruns_total" for name, _ in parse(second.render()[0]))


def test_multiprocess_variable_set_too_late_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Setting PROMETHEUS_MULTIPROC_DIR after prometheus_client was imported is an error."""
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(RuntimeError, match=ENV_VAR):
        GatewayMetrics()


RECORDER = """
import sys
from obs.metrics import GatewayMetrics

inflight, circuit = int(sys.argv[1]), sys.argv[2]
metrics = GatewayMetrics(models=["sim"])
for _ in range(5):
    metrics.request("/v1/chat/completions", "sim", "miss", 200, 0.02)
    metrics.stage("backend", 0.01)
metrics.cache_lookup("exact", "hit")
metrics.tokens("sim", 10, 20)
metrics.replica_state("sim", "grpc://a:1", inflight=inflight, queued=1, healthy=inflight < 3)
metrics.sampled.redis_circuit("exact", circuit)
metrics.sampled.writeback(depth=2, dropped_total=3, failed_total=1)
metrics.sampled.event_loop_tasks(inflight * 10)
metrics.flush()  # a worker's sampler does this once a second
print("ready", flush=True)
sys.stdin.readline()
"""
RENDERER = """
import sys
from obs.metrics import GatewayMetrics

sys.stdout.write(GatewayMetrics().render()[0].decode())
"""


@pytest.fixture
def multiproc_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, ENV_VAR: str(tmp_path), "PYTHONPATH": str(ROOT)}


def render_in_subprocess(env: dict[str, str]) -> Samples:
    done = subprocess.run(
        [sys.executable, "-c", RENDERER],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        check=True,
    )
    return parse(done.stdout)


def test_multiprocess_render_sums_all_workers(multiproc_env: dict[str, str]) -> None:
    """Two worker processes record into one directory; any process renders the sum."""
    recorders = [
        subprocess.Popen(
            [sys.executable, "-c", RECORDER, inflight, circuit],
            env=multiproc_env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for inflight, circuit in (("2", "closed"), ("5", "open"))
    ]
    try:
        for recorder in recorders:
            assert recorder.stdout is not None
            assert recorder.stdout.readline().strip() == "ready"
        s = render_in_subprocess(multiproc_env)
    finally:
        for recorder in recorders:
            recorder.communicate("\n", timeout=60)
    labels = {"route": ROUTE, "model": "sim", "cache": "miss", "status": "200"}
    assert value(s, "gateway_request_duration_seconds_count", **labels) == 10
    assert value(s, "gateway_request_duration_seconds_bucket", **labels, le="0.025") == 10
    assert value(s, "gateway_stage_duration_seconds_sum", stage="backend") == pytest.approx(0.1)
    assert value(s, "gateway_cache_lookups_total", kind="exact", result="hit") == 2
    assert value(s, "gateway_tokens_total", model="sim", type="output") == 40
    replica = {"model": "sim", "replica": "grpc://a:1"}
    assert value(s, "gateway_replica_inflight_requests", **replica) == 7  # livesum
    assert value(s, "gateway_replica_queued_requests", **replica) == 2
    assert value(s, "gateway_replica_healthy", **replica) == 0  # livemin: one worker ejected it
    assert value(s, "gateway_redis_circuit_state", name="exact", state="open") == 1
    assert value(s, "gateway_redis_circuit_state", name="exact", state="closed") == 1
    assert value(s, "gateway_writeback_queue_depth") == 4
    assert value(s, "gateway_writeback_dropped_total") == 6
    assert value(s, "gateway_writeback_failed_total") == 2
    tasks = {labels["pid"]: v for (_, labels), v in _labelled(s, "gateway_event_loop_tasks")}
    # liveall: one series per live worker (the rendering process has its own, unset).
    assert [tasks[str(r.pid)] for r in recorders] == [20, 50]

    # The workers exited: their counters remain, their live gauges are swept.
    after = render_in_subprocess(multiproc_env)
    assert value(after, "gateway_request_duration_seconds_count", **labels) == 10
    assert ("gateway_replica_inflight_requests", frozenset(replica.items())) not in after
    assert value(after, "gateway_writeback_queue_depth") == 0
    gone = {labels["pid"] for (_, labels), _v in _labelled(after, "gateway_event_loop_tasks")}
    assert gone.isdisjoint(str(r.pid) for r in recorders)


def test_observations_reach_prometheus_on_flush() -> None:
    """Observations are added up in the process and handed over on flush or render."""
    metrics = GatewayMetrics(models=["sim"])
    for seconds in (0.0001, 0.0003, 0.07, 0.07, 400.0):
        metrics.stage("backend", seconds)
    metrics.cache_lookup("semantic", "skipped")
    s = parse(metrics.render()[0])
    assert value(s, "gateway_stage_duration_seconds_count", stage="backend") == 5
    assert value(s, "gateway_stage_duration_seconds_bucket", stage="backend", le="0.0001") == 1
    assert value(s, "gateway_stage_duration_seconds_bucket", stage="backend", le="0.0005") == 2
    assert value(s, "gateway_stage_duration_seconds_bucket", stage="backend", le="0.1") == 4
    assert value(s, "gateway_stage_duration_seconds_bucket", stage="backend", le="+Inf") == 5
    assert value(s, "gateway_stage_duration_seconds_sum", stage="backend") == pytest.approx(
        400.1404
    )
    assert value(s, "gateway_cache_lookups_total", kind="semantic", result="skipped") == 1
    metrics.flush()  # nothing pending: nothing changes
    assert parse(metrics.render()[0]) == s


def test_semantic_error_bound_metrics() -> None:
    """Sampled judgement totals add their deltas by outcome; rate and upper bound are gauges."""
    metrics = GatewayMetrics()
    metrics.sampled.semantic_error(correct_total=9, wrong_total=1, rate=0.1, upper=0.4)
    metrics.sampled.semantic_error(correct_total=19, wrong_total=1, rate=0.05, upper=0.24)
    s = parse(metrics.render()[0])
    assert value(s, "gateway_semantic_judgements_total", outcome="correct") == 19
    assert value(s, "gateway_semantic_judgements_total", outcome="wrong") == 1
    assert value(s, "gateway_semantic_error_rate") == 0.05
    assert value(s, "gateway_semantic_error_rate_upper") == 0.24


def test_model_replicas_disagree_gauge() -> None:
    """One series per model and fact: 1 for the facts its replicas disagree on, else 0."""
    metrics = GatewayMetrics()
    metrics.sampled.model_disagreement("llama", ("name", "context"), {"name"})
    s = parse(metrics.render()[0])
    assert value(s, "gateway_model_replicas_disagree", model="llama", fact="name") == 1
    assert value(s, "gateway_model_replicas_disagree", model="llama", fact="context") == 0


def test_semantic_index_mismatch_gauge() -> None:
    """The gauge is 1 while the semantic index in Redis is refused, 0 once it is used."""
    metrics = GatewayMetrics()
    metrics.sampled.semantic_index(refused=True)
    assert value(parse(metrics.render()[0]), "gateway_semantic_index_mismatch") == 1
    metrics.sampled.semantic_index(refused=False)
    assert value(parse(metrics.render()[0]), "gateway_semantic_index_mismatch") == 0
