"""Turns a finished request's record into Prometheus samples, OpenTelemetry spans and the one
info log line. Runs once per request, after its last byte; nothing here is on the path to
the client's first byte."""

from __future__ import annotations

import logging
from collections.abc import Callable

from opentelemetry.trace import Span, SpanKind

from budgets.timeline import Stage
from obs.access_log import AccessLog
from obs.attributes import (
    ATTR_BUDGET_EXCEEDED,
    ATTR_BUDGET_REMAINING_MS,
    ATTR_CACHE_RESULT,
    ATTR_CACHE_SHADOW,
    ATTR_KEY_ID,
    ATTR_PRIORITY,
    ATTR_REPLICA,
    ATTR_REQUEST_ID,
    ATTR_SEMANTIC_SIMILARITY,
    ATTR_SEMANTIC_THRESHOLD,
    ATTR_SHED_REASON,
    ATTR_TENANT,
    ATTR_WRITEBACK_RESULT,
    EVENT_FIRST_TOKEN,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_SYSTEM,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    SERVER_ADDRESS,
    SERVER_PORT,
    SPAN_WRITEBACK,
    STAGE_ADMISSION,
    STAGE_BACKEND,
    STAGE_SEMANTIC_CACHE,
    STAGE_SPANS,
    STAGE_STREAM,
    STAGE_TTFT,
    backend_span_name,
    gen_ai_provider,
    server_endpoint,
)
from obs.logs import ACCESS_LOGGER
from obs.metrics import NO_MODEL, GatewayMetrics
from obs.request_record import RequestRecord
from obs.tracing import Tracing, end_server_span, mark_failed, trace_ids


class Observer:
    """Everything a request reports once it is over."""

    def __init__(
        self,
        metrics: GatewayMetrics,
        tracing: Tracing,
        semantic_threshold: float | None = None,
    ) -> None:
        self.metrics = metrics
        self.tracing = tracing
        self._threshold = semantic_threshold
        self.access_log = AccessLog(logging.getLogger(ACCESS_LOGGER))

    def finish(self, record: RequestRecord, status: int, ended: float) -> None:
        duration = ended - record.started
        self._metrics(record, status, duration, ended)
        span = record.span
        if span is not None and span.is_recording():
            self._spans(record, span, status, ended)
        self._log_line(record, status, duration)

    def _metrics(self, record: RequestRecord, status: int, duration: float, ended: float) -> None:
        metrics = self.metrics
        model = record.model or NO_MODEL
        metrics.request(record.route, model, record.cache or "none", status, duration)
        if record.error is not None and status < 400:
            metrics.stream_error(record.route, model, record.error)
        timeline = record.timeline
        if timeline is not None:
            for stage in timeline.stages:
                metrics.stage(stage.name, stage.duration)
            first = timeline.first_token_at
            if first is not None:
                metrics.ttft(model, first - record.started)
                end = record.stream_ended_at
                if end is not None:
                    metrics.stage(STAGE_STREAM, end - first)
                    if record.output_tokens is not None and record.output_tokens > 1:
                        tpot = (end - first) / (record.output_tokens - 1)
                        metrics.time_per_output_token(model, tpot)
        for stage in record.substages:
            metrics.stage(stage.name, stage.duration)
        for kind, result in record.cache_lookups:
            metrics.cache_lookup(kind, result)
        for stage_name in record.overruns:
            metrics.budget_overrun(stage_name)
        if record.shed is not None:
            metrics.shed(record.shed, record.priority or "none")
        tokens = record.counted_tokens()
        if tokens is not None:
            if record.reused:  # no backend read its prompt or generated its answer for it
                metrics.cached_tokens(model, tokens[1])
            else:
                metrics.tokens(model, *tokens)

    def _spans(self, record: RequestRecord, root: Span, status: int, ended: float) -> None:
        """Stage spans are built after the fact from the timeline: exact start and end times,
        no tracing work while the request was being served."""
        tracing = self.tracing
        at = record.wall_ns
        timeline = record.timeline
        model = record.model or ""
        backend_name = backend_span_name(record.operation or "chat", model)
        semantic_span: Span | None = None
        if timeline is not None:
            calls = [s for s in timeline.stages if s.name in _BACKEND_CALLS]
            for stage in timeline.stages:
                if stage.name in _BACKEND_CALLS:
                    last = stage is calls[-1]
                    self._backend_span(record, root, stage, backend_name, ended, last)
                    continue
                span = tracing.start_span(
                    _stage_span_name(stage.name), root, start_time_ns=at(stage.start)
                )
                if stage.name == STAGE_ADMISSION and stage.replica is not None:
                    span.set_attribute(ATTR_REPLICA, stage.replica)
                if stage.name in record.overruns:
                    span.set_attribute(ATTR_BUDGET_EXCEEDED, True)
                span.end(at(stage.start + stage.duration))
                if stage.name == STAGE_SEMANTIC_CACHE:
                    semantic_span = span
        parent = semantic_span or root
        for stage in record.substages:
            child = tracing.start_span(
                _stage_span_name(stage.name), parent, start_time_ns=at(stage.start)
            )
            child.end(at(stage.start + stage.duration))
        self._root_attributes(record, root)
        _set_budget_left(root, record, ended)
        end_server_span(root, status, at(ended), cut_short=record.cut_short())

    def _backend_span(
        self, record: RequestRecord, root: Span, stage: Stage, name: str, ended: float, last: bool
    ) -> None:
        """One backend call. Before the `last` one, each failed and was retried (on its
        own replica); the last brought the answer, failed, or was cut short after (a stream
        that broke, a client that left), and only it carries the answer's tokens."""
        at = record.wall_ns
        timeline = record.timeline
        assert timeline is not None
        span = self.tracing.start_span(name, root, SpanKind.CLIENT, start_time_ns=at(stage.start))
        _set_budget_left(span, record, stage.start)
        if record.model:
            span.set_attribute(GEN_AI_REQUEST_MODEL, record.model)
        replica = stage.replica
        if replica is not None:
            span.set_attribute(ATTR_REPLICA, replica)
            provider = gen_ai_provider(replica)
            if provider is not None:
                span.set_attribute(GEN_AI_PROVIDER_NAME, provider)
                span.set_attribute(GEN_AI_SYSTEM, provider)
            endpoint = server_endpoint(replica)
            if endpoint is not None:
                span.set_attribute(SERVER_ADDRESS, endpoint[0])
                span.set_attribute(SERVER_PORT, endpoint[1])
        end = stage.start + stage.duration
        if last:
            first = timeline.first_token_at
            if first is not None and stage.name == STAGE_TTFT:  # a stream, until its end
                span.add_event(EVENT_FIRST_TOKEN, timestamp=at(first))
                end = record.stream_ended_at or ended
            _set_usage(span, record)
        error = stage.error or (record.cut_short() if last else None)
        if error is not None:
            mark_failed(span, error)
        span.end(at(end))

    def _root_attributes(self, record: RequestRecord, root: Span) -> None:
        root.set_attribute(ATTR_REQUEST_ID, record.request_id)
        if record.operation:
            root.set_attribute(GEN_AI_OPERATION_NAME, record.operation)
        if record.model:
            root.set_attribute(GEN_AI_REQUEST_MODEL, record.model)
        if record.priority:
            root.set_attribute(ATTR_PRIORITY, record.priority)
        if record.tenant:
            root.set_attribute(ATTR_TENANT, record.tenant)
        if record.key_id:
            root.set_attribute(ATTR_KEY_ID, record.key_id)
        if record.cache:
            root.set_attribute(ATTR_CACHE_RESULT, record.cache)
        if record.shadow is not None:
            root.set_attribute(ATTR_CACHE_SHADOW, record.shadow)
        if record.similarity is not None:
            root.set_attribute(ATTR_SEMANTIC_SIMILARITY, record.similarity)
            if self._threshold is not None:
                root.set_attribute(ATTR_SEMANTIC_THRESHOLD, self._threshold)
        _set_usage(root, record)
        if record.overruns:
            root.set_attribute(ATTR_BUDGET_EXCEEDED, record.overruns)
        if record.shed is not None:
            root.set_attribute(ATTR_SHED_REASON, record.shed)
        if record.content_in is not None:
            root.set_attribute(GEN_AI_INPUT_MESSAGES, record.content_in)
        if record.content_out is not None:
            root.set_attribute(GEN_AI_OUTPUT_MESSAGES, "".join(record.content_out))

    def _log_line(self, record: RequestRecord, status: int, duration: float) -> None:
        access = self.access_log
        if not access.enabled:
            return
        ids = trace_ids(record.span) if record.span is not None else None
        timeline = record.timeline
        fields: dict[str, object] = {
            "request_id": record.request_id,
            "trace_id": ids[0] if ids is not None else record.client_trace_id,
            "method": record.method,
            "route": record.route,
            "model": record.model,
            "status": status,
            "duration_ms": round(duration * 1000, 3),
            "cache": record.cache,
            "priority": record.priority,
            "tenant": record.tenant,
            "key_id": record.key_id,
            "stream": record.stream,
            "stages": {}
            if timeline is None
            else {s.name: round(s.duration * 1000, 3) for s in timeline.stages},
        }
        if ids is not None:
            fields["span_id"] = ids[1]
        if record.shadow is not None:
            fields["cache_shadow"] = record.shadow
        if record.input_tokens is not None:
            fields["input_tokens"] = record.input_tokens
        if record.output_tokens is not None:
            fields["output_tokens"] = record.output_tokens
        if record.finish_reasons:
            fields["finish_reasons"] = record.finish_reasons
        if timeline is not None and timeline.replica is not None:
            fields["replica"] = timeline.replica
        if record.error is not None:
            fields["error"] = record.error
        if record.overruns:
            fields["budget_exceeded"] = record.overruns
        access.submit(fields)

    def close(self) -> None:
        """Write out queued log lines (shutdown)."""
        self.access_log.close()


def writeback_trace(
    tracing: Tracing, record: RequestRecord
) -> Callable[[float, float, bool], None] | None:
    """A hook that adds a write-back span under the request's span, when it is traced."""
    span = record.span
    if span is None or not span.is_recording():
        return None

    def trace(started: float, duration: float, ok: bool) -> None:
        child = tracing.start_span(SPAN_WRITEBACK, span, start_time_ns=record.wall_ns(started))
        child.set_attribute(ATTR_WRITEBACK_RESULT, "ok" if ok else "failed")
        child.end(record.wall_ns(started + duration))

    return trace


_BACKEND_CALLS = frozenset({STAGE_TTFT, STAGE_BACKEND})


def _stage_span_name(stage: str) -> str:
    return STAGE_SPANS.get(stage, f"gateway.{stage}")


def _set_budget_left(span: Span, record: RequestRecord, at: float) -> None:
    """What the request's budget had left at `at` (monotonic)."""
    if record.deadline_at is not None:
        span.set_attribute(
            ATTR_BUDGET_REMAINING_MS, round(max(0.0, record.deadline_at - at) * 1000, 3)
        )


def _set_usage(span: Span, record: RequestRecord) -> None:
    """GenAI usage and finish reasons (both the server and the backend span carry them)."""
    if record.input_tokens is not None:
        span.set_attribute(GEN_AI_USAGE_INPUT_TOKENS, record.input_tokens)
    if record.output_tokens is not None:
        span.set_attribute(GEN_AI_USAGE_OUTPUT_TOKENS, record.output_tokens)
    if record.finish_reasons:
        span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, record.finish_reasons)
