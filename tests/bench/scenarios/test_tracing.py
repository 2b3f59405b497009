"""`python -m bench --scenario tracing`: the modes' environment, the span sink, the comparison
with tracing off, the summary, and one quick run end to end."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBasedTraceIdRatio, Sampler

from bench.config import GATEWAY_ENV_DEFAULTS
from bench.config import Mode as Api
from bench.load.stats import LoadResult, Summary
from bench.scenarios.tracing.modes import MODE_BY_NAME, ModeName, gateway_env
from bench.scenarios.tracing.run import rotated
from bench.scenarios.tracing.stats import (
    PhaseKey,
    PhaseResult,
    Row,
    Versus,
    baseline_of,
    merge,
    overlap,
    summary_lines,
    value_range,
)
from bench.servers.otlp_sink import SinkTotals, SpanCount, SpanCounter, handle, trace_server
from obs.tracing import Tracing
from obs.tracing_config import tracing_config
from tests.bench.quick_run import run_quick_bench

ENDPOINT = "http://127.0.0.1:4317"


def _env(
    mode: ModeName, base: dict[str, str] | None = None, inherited: tuple[str, ...] = ()
) -> dict[str, str]:
    return gateway_env(MODE_BY_NAME[mode], base or {}, inherited, ENDPOINT)


def _description(sampler: Sampler) -> str:
    return sampler.get_description()


def test_mode_environments_configure_the_gateway_as_named() -> None:
    """off and access_log parse to no tracing, always_on to ALWAYS_ON, default to the 0.1
    ratio; the caches are forced off and only access_log logs at info."""
    assert tracing_config(_env("off")) is None
    assert tracing_config(_env("access_log")) is None
    always = tracing_config(_env("always_on"))
    assert always is not None and always.sampler is ALWAYS_ON
    assert always.otlp is not None and always.otlp.endpoint == ENDPOINT
    default = tracing_config(_env("default"))
    assert default is not None
    sampler: Sampler = default.sampler
    assert isinstance(sampler, ParentBasedTraceIdRatio) and "0.1" in _description(sampler)
    assert "OTEL_TRACES_SAMPLER" not in _env("default")
    for mode in MODE_BY_NAME:
        env = _env(mode, {"GATEWAY_CACHE": "on", "GATEWAY_GRPC_CHANNELS": "4"})
        assert env.items() >= {**GATEWAY_ENV_DEFAULTS, "GATEWAY_GRPC_CHANNELS": "4"}.items()
        assert env["GATEWAY_LOG_LEVEL"] == ("info" if mode == "access_log" else "warning")


def test_inherited_otel_variables_cannot_change_a_mode() -> None:
    """OTEL_* inherited from the shell are blanked; --gateway-env cannot move the default
    sampler or turn tracing on in an off mode."""
    inherited = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_SAMPLER", "PATH")
    base = {"OTEL_TRACES_SAMPLER": "always_off", "OTEL_TRACES_SAMPLER_ARG": "0.5"}
    off = _env("off", base, inherited)
    assert off["OTEL_EXPORTER_OTLP_ENDPOINT"] == "" and "PATH" not in off
    assert tracing_config(off) is None
    default = _env("default", base, inherited)
    assert default["OTEL_TRACES_SAMPLER"] == default["OTEL_TRACES_SAMPLER_ARG"] == ""
    config = tracing_config(default)
    assert config is not None and "0.1" in _description(config.sampler)


def _request(*spans: tuple[int, bool]) -> ExportTraceServiceRequest:
    """An Export request with one span per (start ns, is root)."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for start, root in spans:
        span = scope.spans.add(name="s", start_time_unix_nano=start)
        if not root:
            span.parent_span_id = b"\x01" * 8
    return request


def test_span_counter_counts_spans_and_roots_per_window() -> None:
    """Spans and root spans are counted by start time in [start, end) windows, per port."""
    counter = SpanCounter()
    counter.add(_request((100, True), (101, False), (150, False)))
    counter.add(_request((200, True), (205, False)))
    totals = counter.totals()
    assert totals.count == SpanCount(5, 2) and totals.exports == 2 and totals.bytes > 0
    assert counter.windows([(100, 150), (150, 201), (300, 400)]) == [
        SpanCount(2, 1),
        SpanCount(2, 1),
        SpanCount(0, 0),
    ]
    counters = {4317: counter, 4318: SpanCounter()}
    reply = handle(counters, {"op": "windows", "port": 4317, "windows": [[0, 1000]]})
    assert reply == {"windows": [{"spans": 5, "traces": 2}]}
    assert SinkTotals.from_json(handle(counters, {"op": "totals", "port": 4317})) == totals
    other = SinkTotals.from_json(handle(counters, {"op": "totals", "port": 4318}))
    assert other == SinkTotals(SpanCount(0, 0), 0, 0)
    assert handle(counters, {"op": "ports"}) == {"ports": [4317, 4318]}


def test_trace_server_never_shares_its_port() -> None:
    """A second sink cannot bind a port a first one holds (gRPC's SO_REUSEPORT is off), so
    two modes can never count into one server."""
    first, port = trace_server(SpanCounter().add)
    first.start()
    try:
        with pytest.raises(OSError, match=str(port)):
            trace_server(SpanCounter().add, port)
    finally:
        first.stop(grace=None).wait(10)


@pytest.fixture
def sink() -> Iterator[tuple[SpanCounter, str]]:
    """A started counting sink on a free port."""
    counter = SpanCounter()
    server, port = trace_server(counter.add)
    server.start()
    try:
        yield counter, f"http://127.0.0.1:{port}"
    finally:
        server.stop(grace=None).wait(10)


def test_sink_receives_the_gateway_exporter(sink: tuple[SpanCounter, str]) -> None:
    """The gateway's OTLP exporter, configured as the always_on mode, reaches the sink."""
    counter, endpoint = sink
    env = gateway_env(MODE_BY_NAME["always_on"], {}, (), endpoint)
    tracing = Tracing.from_env(env)
    try:
        root = tracing.start_server_span("/v1/chat/completions", "POST", [])
        tracing.start_span("gateway.parse", root).end()
        root.end()
    finally:
        tracing.shutdown()  # exports what is queued before it returns
    assert counter.totals().count == SpanCount(2, 1)


def test_rotation_puts_each_mode_first_in_turn() -> None:
    """Step i starts at mode i (mod the count): every mode gets every position in turn."""
    modes = ["off", "always_on", "default", "access_log"]
    orders = [rotated(modes, step) for step in range(4)]
    assert [order[0] for order in orders] == modes
    assert all(sorted(order) == sorted(modes) for order in orders)
    assert rotated(modes, 5) == orders[1] and rotated([], 3) == []


def _phase(
    mode: ModeName,
    rps: float,
    p99_ms: float,
    cpu_us: float,
    api: Api = "non-stream",
    concurrency: int = 1,
    spans: int = 0,
    traces: int = 0,
    round_index: int = 0,
) -> PhaseResult:
    """A phase of 100 requests in 1 s measured at `rps`, with the given p99 and CPU/request."""
    latency = Summary(100, 0.001, 0.001, 0.002, p99_ms / 1000, 0.05)
    result = LoadResult(
        ok=round(rps),
        errors=0,
        error_samples=(),
        elapsed_s=1.0,
        latency=latency,
        ttft=Summary.of([]),
        itl=Summary.of([]),
        events_per_request=0.0,
        client_cpu_s=0.1,
    )
    return PhaseResult(
        key=PhaseKey(mode, api, concurrency),
        round=round_index,
        result=result,
        phase_requests=100,
        wall_s=1.0,
        gateway_cpu_s=cpu_us * 100 / 1e6,
        sink_cpu_s=0.0,
        idle_gateways_cpu_s=0.0,
        client_core_busy=math.nan,
        window_ns=(0, 1),
        spans=spans,
        traces=traces,
    )


def _row(rows: list[Row], mode: ModeName, api: Api = "non-stream", c: int = 1) -> Row:
    return next(r for r in rows if r.key == PhaseKey(mode, api, c))


def test_rows_take_medians_of_rounds_and_sum_the_counts() -> None:
    """Rounds of one phase merge into a row: median rates and percentiles, summed spans,
    the lowest and highest round; rows come by api, concurrency, then mode."""
    rows = merge(
        [
            _phase("always_on", 900, 3.0, 500, spans=400, traces=100, round_index=0),
            _phase("default", 900, 3.0, 500, api="stream"),
            _phase("off", 1000, 2.0, 400, concurrency=32),
            _phase("off", 1000, 2.0, 400),
            _phase("always_on", 700, 9.0, 700, spans=400, traces=100, round_index=1),
            _phase("always_on", 800, 4.0, 600, spans=400, traces=100, round_index=2),
        ]
    )
    assert [r.key.label for r in rows] == [
        "off non-stream c=1",
        "always_on non-stream c=1",
        "off non-stream c=32",
        "default stream c=1",
    ]
    always = rows[1]
    assert (always.rounds, always.rps, always.p99_s) == (3, 800, 0.004)
    assert always.cpu_us == pytest.approx(600)
    assert always.rps_range == (700, 900)
    assert always.cpu_range == pytest.approx((500, 700))
    assert always.gateway_busy == pytest.approx(0.06)
    assert (always.phase_requests, always.spans, always.traces) == (300, 1200, 300)
    assert always.spans_per_request == 4.0 and always.traced_fraction == 1.0
    with pytest.raises(ValueError, match="exactly one phase"):
        Row.of([_phase("off", 1, 1, 1), _phase("default", 1, 1, 1)])


def test_versus_compares_with_tracing_off_at_the_same_point() -> None:
    """Throughput ratio, added p99 and added CPU against off at the same api and c; NaN
    without a baseline or with a baseline that measured nothing."""
    rows = merge(
        [
            _phase("off", 1000, 2.0, 400),
            _phase("off", 500, 5.0, 800, concurrency=32),
            _phase("always_on", 800, 2.5, 550),
            _phase("always_on", 400, 8.0, 1000, concurrency=32),
            _phase("default", 900, 2.0, 420, api="stream"),
        ]
    )
    always_32 = _row(rows, "always_on", c=32)
    assert baseline_of(rows, always_32) is _row(rows, "off", c=32)
    always_1 = _row(rows, "always_on")
    v = Versus.of(always_1, baseline_of(rows, always_1))
    assert v.rps_ratio == pytest.approx(0.8)
    assert v.added_p99_s == pytest.approx(0.0005)
    assert v.added_cpu_us == pytest.approx(150)
    assert v.cpu_ratio == pytest.approx(1.375)
    assert Versus.of(always_32, _row(rows, "off", c=32)).rps_ratio == pytest.approx(0.8)
    stream = _row(rows, "default", api="stream")
    orphan = Versus.of(stream, baseline_of(rows, stream))
    assert math.isnan(orphan.rps_ratio) and math.isnan(orphan.added_p99_s)
    idle = Row.of([_phase("off", 0, 2.0, 400)])
    assert math.isnan(Versus.of(always_1, idle).rps_ratio)


def test_ranges_overlap_when_they_share_a_value() -> None:
    """Touching or nested ranges overlap; disjoint or missing ones do not."""
    assert overlap((1.0, 2.0), (2.0, 3.0)) and overlap((1.0, 5.0), (2.0, 3.0))
    assert not overlap((1.0, 2.0), (2.5, 3.0))
    assert not overlap((math.nan, math.nan), (1.0, 2.0))


def test_value_range_formats_one_value_or_a_range() -> None:
    """Equal-looking values print once, others as a range; NaNs are left out."""
    assert value_range([0.801, 0.799], ".2f") == "0.80"
    assert value_range([0.9, math.nan, 0.7], ".2f") == "0.70 to 0.90"
    assert value_range([0.5, -0.25], ".2f", signed=True) == "-0.25 to +0.50"
    assert value_range([math.nan], ".2f") == "-"


def test_summary_lines_give_each_modes_cost_and_export() -> None:
    """One line per mode: ratio and added p99/CPU ranges over every point, and for tracing
    modes the spans per request and the traced share."""
    rows = merge(
        [
            _phase("off", 1000, 2.0, 400),
            _phase("off", 500, 5.0, 800, concurrency=32),
            _phase("always_on", 800, 2.5, 550, spans=400, traces=100),
            _phase("always_on", 400, 8.0, 1000, concurrency=32, spans=400, traces=100),
            _phase("default", 950, 2.1, 420, spans=40, traces=10),
            _phase("access_log", 900, 2.2, 450),
        ]
    )
    lines = summary_lines(rows)
    assert lines == [
        "off: the baseline; 0 spans exported",
        "always_on: throughput 0.80x of tracing off, p99 +0.50 to +3.00 ms, gateway CPU +150"
        " to +200 us/request; 800 spans exported (4.00 per request, 100.0% of requests traced)",
        "default: throughput 0.95x of tracing off, p99 +0.10 ms, gateway CPU +20 us/request;"
        " 40 spans exported (0.40 per request, 10.0% of requests traced)",
        "access_log: throughput 0.90x of tracing off, p99 +0.20 ms, gateway CPU +50 us/request",
    ]


def test_summary_says_where_rounds_overlap_tracing_off() -> None:
    """With several rounds, a mode's line counts the points whose CPU spread meets off's."""
    rows = merge(
        [
            _phase("off", 1000, 2.0, 400, round_index=0),
            _phase("off", 1000, 2.0, 500, round_index=1),
            _phase("off", 1000, 2.0, 400, concurrency=32, round_index=0),
            _phase("off", 1000, 2.0, 500, concurrency=32, round_index=1),
            _phase("access_log", 1000, 2.0, 450, round_index=0),
            _phase("access_log", 1000, 2.0, 550, round_index=1),
            _phase("access_log", 1000, 2.0, 600, concurrency=32, round_index=0),
            _phase("access_log", 1000, 2.0, 700, concurrency=32, round_index=1),
        ]
    )
    assert summary_lines(rows)[1].endswith(
        "(CPU over rounds overlaps tracing off's at 1 of 2 points)"
    )


@pytest.mark.timeout(150)
def test_tracing_quick_run_reports_every_mode_and_its_spans(tmp_path: Path) -> None:
    """A quick run exits 0 and writes the report; always_on exports spans in every phase,
    the default sampler traces some requests but not all, the off modes export none."""
    out = tmp_path / "run"
    run = run_quick_bench(out, "--scenario", "tracing", timeout=140)
    assert "## Summary" in run.report and "| always_on | stream | 4 |" in run.report
    results = json.loads((out / "results.json").read_text())
    rows = results["rows"]
    assert {(r["mode"], r["api"], r["concurrency"]) for r in rows} == {
        (mode, api, c) for mode in MODE_BY_NAME for api in ("non-stream", "stream") for c in (1, 4)
    }
    assert all(r["ok"] > 0 and r["errors"] == 0 for r in rows)
    for row in rows:
        if row["mode"] == "always_on":
            assert row["spans"] > 0 and row["traced_fraction"] == 1.0
        elif row["mode"] in ("off", "access_log"):
            assert row["spans"] == 0
    received = {m["mode"]: m["received"] for m in results["modes"]}
    assert received["off"]["spans"] == received["access_log"]["spans"] == 0
    assert received["always_on"]["spans"] > 0
    default_requests = sum(r["phase_requests"] for r in rows if r["mode"] == "default")
    assert 0 < received["default"]["traces"] < default_requests
    access = {m["mode"]: m["log_lines"] for m in results["modes"]}
    assert access["access_log"] > access["off"]
