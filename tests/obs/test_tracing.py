from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Sampler
from opentelemetry.trace import INVALID_SPAN, SpanKind, StatusCode

from obs.attributes import (
    ATTR_CACHE_RESULT,
    ATTR_REPLICA,
    EVENT_FIRST_TOKEN,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    SPAN_ADMISSION,
)
from obs.tracing import Tracing, end_server_span, inject, record_error, trace_ids
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver

ROUTE = "/v1/chat/completions"
CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01".encode()
TRACEPARENT_RE = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with otlp_receiver() as started:
        yield started


def memory_tracing(sampler: Sampler = DEFAULT_ON) -> tuple[Tracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Tracing(provider), exporter


def finished(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_otlp_exporter_delivers_server_and_child_span(receiver: OtlpReceiver) -> None:
    """The real OTLP/gRPC exporter, configured only by OTEL_* variables, reaches a receiver."""
    tracing = Tracing.from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_SERVICE_NAME": "gateway-under-test",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=team-a",
        }
    )
    assert tracing.enabled
    try:
        server = tracing.start_server_span(ROUTE, "POST", [(b"traceparent", TRACEPARENT)])
        server.set_attribute(ATTR_CACHE_RESULT, "miss")
        child = tracing.start_span(
            SPAN_ADMISSION, server, SpanKind.CLIENT, {GEN_AI_REQUEST_MODEL: "sim"}
        )
        child.add_event(EVENT_FIRST_TOKEN)
        child.set_attribute(GEN_AI_USAGE_OUTPUT_TOKENS, 7)
        child.set_attribute(ATTR_REPLICA, "grpc://10.0.0.5:50051")
        child.end()
        end_server_span(server, 200)
    finally:
        tracing.shutdown()

    spans = {span.name: span for span in receiver.wait_for(2)}
    received_server, received_child = spans[f"POST {ROUTE}"], spans[SPAN_ADMISSION]
    assert received_server.trace_id == received_child.trace_id == CLIENT_TRACE
    assert received_server.parent_span_id == CLIENT_SPAN
    assert received_child.parent_span_id == received_server.span_id
    assert received_server.kind == ProtoSpan.SPAN_KIND_SERVER
    assert received_child.kind == ProtoSpan.SPAN_KIND_CLIENT
    assert received_server.attributes == {
        "http.request.method": "POST",
        "http.route": ROUTE,
        "url.path": ROUTE,
        "http.response.status_code": 200,
        ATTR_CACHE_RESULT: "miss",
    }
    assert received_child.attributes == {
        GEN_AI_REQUEST_MODEL: "sim",
        GEN_AI_USAGE_OUTPUT_TOKENS: 7,
        ATTR_REPLICA: "grpc://10.0.0.5:50051",
    }
    assert received_child.events == (EVENT_FIRST_TOKEN,)
    assert received_server.resource["service.name"] == "gateway-under-test"
    assert received_server.resource["deployment.environment"] == "test"
    assert received_server.scope == "llm-gateway"
    assert receiver.metadata[0]["x-tenant"] == "team-a"


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_SERVICE_NAME": "gw", "OTEL_TRACES_SAMPLER": "always_on"},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
    ],
)
def test_disabled_without_an_exporter(env: dict[str, str]) -> None:
    """Without an exporter or endpoint (or with it switched off) tracing is off and inert."""
    tracing = Tracing.from_env(env)
    assert not tracing.enabled
    assert tracing.tracer is None
    span = tracing.start_server_span(ROUTE, "POST", [(b"traceparent", TRACEPARENT)])
    assert span is INVALID_SPAN
    assert tracing.start_span("x", span) is INVALID_SPAN
    assert inject(span) == {}
    tracing.shutdown()


def test_client_traceparent_becomes_the_parent() -> None:
    """W3C traceparent/tracestate in the raw ASGI headers make the server span a child."""
    tracing, exporter = memory_tracing()
    headers = [
        (b"content-type", b"application/json"),
        (b"traceparent", TRACEPARENT),
        (b"tracestate", b"vendor=opaque"),
    ]
    span = tracing.start_server_span(ROUTE, "POST", headers)
    span.end()
    (exported,) = exporter.get_finished_spans()
    assert exported.parent is not None and exported.parent.is_remote
    assert f"{exported.parent.span_id:016x}" == CLIENT_SPAN
    assert f"{exported.context.trace_id:032x}" == CLIENT_TRACE
    assert exported.kind is SpanKind.SERVER
    assert inject(span)["tracestate"] == "vendor=opaque"


@pytest.mark.parametrize(
    "traceparent",
    [
        b"garbage",
        b"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        b"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ],
)
def test_invalid_traceparent_starts_a_new_trace(traceparent: bytes) -> None:
    """A malformed or invalid traceparent is ignored: the server span is a root."""
    tracing, exporter = memory_tracing()
    tracing.start_server_span(ROUTE, "POST", [(b"traceparent", traceparent)]).end()
    (exported,) = exporter.get_finished_spans()
    assert exported.parent is None
    assert f"{exported.context.trace_id:032x}" != CLIENT_TRACE


def test_inject_names_the_child_span() -> None:
    """inject() gives a valid traceparent carrying the child's trace and span ids."""
    tracing, _ = memory_tracing()
    server = tracing.start_server_span(ROUTE, "POST", [])
    child = tracing.start_span(SPAN_ADMISSION, server, SpanKind.CLIENT)
    headers = tracing.inject(child)
    match = TRACEPARENT_RE.fullmatch(headers["traceparent"])
    assert match is not None
    context = child.get_span_context()
    assert match.group(1) == f"{context.trace_id:032x}"
    assert match.group(2) == f"{context.span_id:016x}"
    assert int(match.group(3), 16) & 0x01  # sampled
    assert "tracestate" not in headers
    assert trace_ids(child) == (match.group(1), match.group(2))


def test_injected_headers_round_trip_to_a_downstream_server_span() -> None:
    """A backend that extracts our injected headers continues the same trace under our span."""
    tracing, exporter = memory_tracing()
    server = tracing.start_server_span(ROUTE, "POST", [])
    child = tracing.start_span(SPAN_ADMISSION, server, SpanKind.CLIENT)
    raw = [(k.encode(), v.encode()) for k, v in tracing.inject(child).items()]
    downstream = tracing.start_server_span("/generate", "POST", raw)
    downstream.end()
    (exported,) = exporter.get_finished_spans()
    assert exported.parent is not None
    assert exported.parent.span_id == child.get_span_context().span_id
    assert exported.context.trace_id == server.get_span_context().trace_id


def test_always_off_sampler_records_and_exports_nothing(receiver: OtlpReceiver) -> None:
    """OTEL_TRACES_SAMPLER=always_off: spans do not record and nothing reaches the receiver."""
    tracing = Tracing.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_TRACES_SAMPLER": "always_off"}
    )
    try:
        server = tracing.start_server_span(ROUTE, "POST", [])
        child = tracing.start_span(SPAN_ADMISSION, server)
        assert not server.is_recording()
        assert not child.is_recording()
        assert int(inject(child)["traceparent"][-2:], 16) & 0x01 == 0  # not sampled
        child.end()
        server.end()
    finally:
        tracing.shutdown()  # flushes synchronously: anything queued would be exported now
    assert receiver.spans == []


def test_default_sampler_follows_an_unsampled_client() -> None:
    """The default (parent-based) sampler does not record a trace the client did not sample."""
    tracing = Tracing.from_env({"OTEL_TRACES_EXPORTER": "console"})
    try:
        unsampled = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-00".encode()
        span = tracing.start_server_span(ROUTE, "POST", [(b"traceparent", unsampled)])
        assert not span.is_recording()
        assert f"{span.get_span_context().trace_id:032x}" == CLIENT_TRACE
        span.end()
    finally:
        tracing.shutdown()


def test_ratio_sampler_from_env() -> None:
    """OTEL_TRACES_SAMPLER=traceidratio with OTEL_TRACES_SAMPLER_ARG=0 samples nothing."""
    tracing = Tracing.from_env(
        {
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_TRACES_SAMPLER": "traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0",
        }
    )
    try:
        span = tracing.start_server_span(ROUTE, "POST", [(b"traceparent", TRACEPARENT)])
        assert not span.is_recording()
        span.end()
    finally:
        tracing.shutdown()


def test_console_exporter_writes_spans(capfd: pytest.CaptureFixture[str]) -> None:
    """OTEL_TRACES_EXPORTER=console prints finished spans (for debugging) on shutdown at latest."""
    tracing = Tracing.from_env(
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "always_on"}
    )
    assert tracing.enabled
    tracing.start_server_span(ROUTE, "GET", []).end()
    tracing.shutdown()
    assert f"GET {ROUTE}" in capfd.readouterr().out


def test_child_spans_leave_the_current_context_alone() -> None:
    """Spans are passed explicitly: starting them never changes the contextvars current span."""
    tracing, exporter = memory_tracing()
    server = tracing.start_server_span(ROUTE, "POST", [])
    tracing.start_span("a", server).end()
    assert trace.get_current_span() is INVALID_SPAN
    server.end()
    spans = finished(exporter)
    assert spans["a"].parent is not None
    assert spans["a"].parent.span_id == server.get_span_context().span_id


def test_start_time_is_honoured() -> None:
    """A span can start at an instant measured earlier (e.g. the request's arrival)."""
    tracing, exporter = memory_tracing()
    server = tracing.start_server_span(ROUTE, "POST", [], start_time_ns=1_000)
    tracing.start_span("stage", server, start_time_ns=2_000).end(3_000)
    server.end(4_000)
    spans = finished(exporter)
    assert spans[f"POST {ROUTE}"].start_time == 1_000
    assert (spans["stage"].start_time, spans["stage"].end_time) == (2_000, 3_000)


@pytest.mark.parametrize(("status", "error"), [(200, False), (404, False), (503, True)])
def test_server_span_status(status: int, error: bool) -> None:
    """A 5xx marks the server span as an error (with error.type); a 4xx does not."""
    tracing, exporter = memory_tracing()
    end_server_span(tracing.start_server_span(ROUTE, "POST", []), status)
    (exported,) = exporter.get_finished_spans()
    assert exported.attributes is not None
    assert exported.attributes["http.response.status_code"] == status
    assert exported.status.is_ok is not error
    assert ("error.type" in exported.attributes) is error


@pytest.mark.parametrize(
    ("status", "cut_short", "error_type", "failed"),
    [
        (200, "backend_error", "backend_error", True),  # a stream's error event
        (200, "client_closed_request", "client_closed_request", False),  # left mid-stream
        (499, "client_closed_request", "client_closed_request", False),  # left before
        (502, None, "502", True),
        (429, None, None, False),
    ],
)
def test_server_span_of_an_answer_cut_short(
    status: int, cut_short: str | None, error_type: str | None, failed: bool
) -> None:
    """A failure after the status was sent is an error naming its code; a client that left is
    named in error.type without an error status."""
    tracing, exporter = memory_tracing()
    server = tracing.start_server_span(ROUTE, "POST", [])
    end_server_span(server, status, cut_short=cut_short)
    (exported,) = exporter.get_finished_spans()
    assert exported.attributes is not None
    assert exported.attributes.get("error.type") == error_type
    assert (exported.status.status_code is StatusCode.ERROR) is failed


def test_record_error_keeps_only_the_exception_type() -> None:
    """record_error() names the exception type; its message (maybe user text) is not kept."""
    tracing, exporter = memory_tracing()
    span = tracing.start_span("stage", tracing.start_server_span(ROUTE, "POST", []))
    record_error(span, ValueError("the user's secret prompt"))
    span.end()
    (exported,) = exporter.get_finished_spans()
    assert exported.attributes == {"error.type": "ValueError"}
    assert "secret" not in (exported.status.description or "")
    assert exported.status.status_code is StatusCode.ERROR


@pytest.mark.parametrize(("value", "expected"), [(None, False), ("false", False), ("true", True)])
def test_record_content_flag(value: str | None, expected: bool) -> None:
    """GATEWAY_TRACE_CONTENT (default false) is the only switch for prompt/answer text."""
    env = {} if value is None else {"GATEWAY_TRACE_CONTENT": value}
    assert Tracing.from_env(env).record_content is expected


def test_shutdown_waits_for_a_stuck_exporter_no_longer_than_its_bound() -> None:
    """A collector that never answers holds the SDK's shutdown for up to 30 s; the gateway's
    waits its own bound (a stage of the drain) and leaves the export thread behind."""
    import threading

    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    release = threading.Event()

    class Stuck(SpanExporter):
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            release.wait()

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Stuck()))
    try:
        Tracing(provider).shutdown(timeout_s=0.05)  # returns: the thread is still stuck
        assert not release.is_set()
        assert any(t.name == "otel-shutdown" for t in threading.enumerate())
    finally:
        release.set()
