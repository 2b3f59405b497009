"""Request tracing with the OpenTelemetry SDK, configured only by the standard OTEL_* variables.

Spans are passed explicitly (never through the contextvars "current span"), so no
attach/detach per stage and spans work across tasks (write-back). Callers check the plain
attribute `tracing.enabled` before anything else; when it is false nothing here runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import (
    INVALID_SPAN,
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    set_span_in_context,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import Attributes

from obs.attributes import (
    ERROR_CLIENT_CLOSED,
    ERROR_TYPE,
    HTTP_REQUEST_METHOD,
    HTTP_RESPONSE_STATUS_CODE,
    HTTP_ROUTE,
    URL_PATH,
)
from obs.tracing_config import build_provider, record_content, tracing_config

INSTRUMENTATION_NAME = "llm-gateway"
_ROOT = Context()  # an empty context: parents are always explicit, never "current"
_PROPAGATOR = TraceContextTextMapPropagator()
_TRACEPARENT = b"traceparent"
_TRACESTATE = b"tracestate"

SHUTDOWN_TIMEOUT_S = 5.0
"""How long shutting tracing down waits for the last spans to be exported."""


class Tracing:
    """The gateway's tracer and the few helpers the request path needs."""

    __slots__ = ("_provider", "_server", "enabled", "record_content", "tracer")

    def __init__(self, provider: TracerProvider | None, *, record_content: bool = False) -> None:
        self._provider = provider
        self.enabled = provider is not None
        self.tracer: Tracer | None = (
            provider.get_tracer(INSTRUMENTATION_NAME) if provider is not None else None
        )
        # Whether prompt and answer text may go into spans and logs (GATEWAY_TRACE_CONTENT).
        self.record_content = record_content
        self._server: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Tracing:
        """Enabled iff OTEL_TRACES_EXPORTER or an OTLP endpoint is set; SettingsError if bad."""
        content = record_content(environ)
        config = tracing_config(environ)  # validate everything before starting a thread
        provider = build_provider(config) if config is not None else None
        return cls(provider, record_content=content)

    @classmethod
    def disabled(cls) -> Tracing:
        """A tracer that does nothing (what `from_env` returns when no OTEL_* is set)."""
        return cls(None)

    def start_server_span(
        self,
        route: str,
        method: str,
        headers: Iterable[tuple[bytes, bytes]],
        start_time_ns: int | None = None,
    ) -> Span:
        """The SERVER span of one request, a child of the client's W3C trace context if any."""
        if self.tracer is None:
            return INVALID_SPAN
        traceparent: str | None = None
        tracestate: str | None = None
        for name, value in headers:
            if name == _TRACEPARENT:
                traceparent = value.decode("latin-1")
            elif name == _TRACESTATE:
                tracestate = value.decode("latin-1")
        context = _ROOT if traceparent is None else _extract(traceparent, tracestate)
        span_name, attributes = self._server_names(route, method)
        return self.tracer.start_span(
            span_name,
            context=context,
            kind=SpanKind.SERVER,
            attributes=attributes,
            start_time=start_time_ns,
        )

    def start_span(
        self,
        name: str,
        parent: Span,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        start_time_ns: int | None = None,
    ) -> Span:
        """A child of `parent`, without touching the current (contextvars) context."""
        if self.tracer is None:
            return INVALID_SPAN
        return self.tracer.start_span(
            name,
            context=set_span_in_context(parent, _ROOT),
            kind=kind,
            attributes=attributes,
            start_time=start_time_ns,
        )

    @staticmethod
    def inject(span: Span) -> dict[str, str]:
        """The W3C headers for the backend call (gRPC metadata / HTTP headers); see `inject`."""
        return inject(span)

    def force_flush(self, timeout_ms: int = 30_000) -> bool:
        """Export what is queued now (tests; shutdown does this too)."""
        return self._provider.force_flush(timeout_ms) if self._provider is not None else True

    def shutdown(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Flush queued spans and stop the export thread, waiting `timeout_s` at most; call
        once on app shutdown. The SDK's own shutdown waits up to 30 s for a collector that
        does not answer: it runs in a daemon thread, left behind past the bound."""
        if self._provider is None:
            return
        closing = threading.Thread(
            target=self._provider.shutdown, name="otel-shutdown", daemon=True
        )
        closing.start()
        closing.join(timeout_s)

    def _server_names(self, route: str, method: str) -> tuple[str, dict[str, str]]:
        key = (route, method)
        names = self._server.get(key)
        if names is None:
            attributes = {HTTP_REQUEST_METHOD: method, HTTP_ROUTE: route, URL_PATH: route}
            names = self._server[key] = (f"{method} {route}", attributes)
        return names


def inject(span: Span) -> dict[str, str]:
    """The W3C headers (`traceparent`, `tracestate`) naming `span` as the remote parent."""
    context = span.get_span_context()
    if not context.is_valid:
        return {}
    ids = f"{context.trace_id:032x}-{context.span_id:016x}"
    headers = {"traceparent": f"00-{ids}-{context.trace_flags:02x}"}
    if context.trace_state:
        headers["tracestate"] = context.trace_state.to_header()
    return headers


def trace_ids(span: Span) -> tuple[str, str] | None:
    """(trace id, span id) in hex for logs, or None for a span that is not valid."""
    context = span.get_span_context()
    if not context.is_valid:
        return None
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


def end_server_span(
    span: Span, status: int, end_time_ns: int | None = None, *, cut_short: str | None = None
) -> None:
    """Record the HTTP status and end the span: a 5xx marks it as an error, a 4xx does not.
    `cut_short` is the error code of an answer that failed after its status was sent (a
    stream's error event) or that its client left (`RequestRecord.cut_short`): see
    `mark_failed`."""
    span.set_attribute(HTTP_RESPONSE_STATUS_CODE, status)
    if status >= 500:
        span.set_attribute(ERROR_TYPE, str(status))
        span.set_status(Status(StatusCode.ERROR))
    elif cut_short is not None:
        mark_failed(span, cut_short)
    span.end(end_time_ns)


def mark_failed(span: Span, error: str) -> None:
    """Name `error` (a low-cardinality code) in `error.type`, with an error status unless it
    says that the client left (`ERROR_CLIENT_CLOSED`), which is not the server's failure."""
    span.set_attribute(ERROR_TYPE, error)
    if error != ERROR_CLIENT_CLOSED:
        span.set_status(Status(StatusCode.ERROR, error))


def record_error(span: Span, exc: BaseException) -> None:
    """Mark `span` failed with the exception's type only (messages may quote user input)."""
    span.set_attribute(ERROR_TYPE, type(exc).__qualname__)
    span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))


def _extract(traceparent: str, tracestate: str | None) -> Context:
    carrier = {"traceparent": traceparent}
    if tracestate is not None:
        carrier["tracestate"] = tracestate
    return _PROPAGATOR.extract(carrier, _ROOT)
