"""The ASGI layer that observes each API request: opens its record (and server span) on
arrival and hands it to the Observer once the response is written. The status comes from
the record, which the error handlers set; answers without an error are 200."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from budgets.deadline import Clock
from obs.observer import Observer
from obs.request_record import RequestRecord

log = logging.getLogger("gateway.observing")

RECORD_SCOPE_KEY = "gateway.record"
# How long a request's report waits for its shadow-mode semantic lookup after the last byte;
# the lookup's own embedding and Redis calls are bounded by GATEWAY_SEMANTIC_TIMEOUT_MS.
SHADOW_WAIT_S = 5.0
OBSERVED_ROUTES = frozenset(
    {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/models"}
)
# Paths with an id, observed under their route template: the id (a client's) never becomes a
# metric label or a span name. (prefix, suffix, template), the first that fits counts.
TEMPLATED_ROUTES = (
    ("/v1/responses/", "/input_items", "/v1/responses/{response_id}/input_items"),
    ("/v1/responses/", "", "/v1/responses/{response_id}"),
    ("/v1/models/", "", "/v1/models/{model}"),
)


def observed_route(path: str) -> str | None:
    """The route a request to `path` is observed under, or None for probes, /metrics and the
    rest of the unobserved paths."""
    if path in OBSERVED_ROUTES:
        return path
    for prefix, suffix, template in TEMPLATED_ROUTES:
        if (
            path.startswith(prefix)
            and path.endswith(suffix)
            and len(path) > len(prefix) + len(suffix)
        ):
            return template
    return None


class ObservingMiddleware:
    """Pure ASGI (no task group, `send` untouched); probes and /metrics pass straight by."""

    def __init__(self, app: ASGIApp, clock: Clock = time.monotonic) -> None:
        self._app = app
        self._clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = observed_route(scope["path"]) if scope["type"] == "http" else None
        if route is None:
            await self._app(scope, receive, send)
            return
        observer: Observer | None = scope.get("state", {}).get("observer")
        if observer is None:
            await self._app(scope, receive, send)
            return
        clock = self._clock
        method, started, wall_ns = scope["method"], clock(), time.time_ns()
        tracing = observer.tracing
        span = None
        if tracing.enabled:
            span = tracing.start_server_span(route, method, scope["headers"], wall_ns)
        record = scope[RECORD_SCOPE_KEY] = RequestRecord(method, route, started, wall_ns, span)
        try:
            await self._app(scope, receive, send)
        except BaseException:
            # Starlette's outer error middleware answers it
            record.note_failure(record.error or "internal_error", status=500)
            raise
        else:
            # The response is written: a shadow lookup still running delays only the report.
            await record.wait_shadow(SHADOW_WAIT_S)
        finally:
            # Every response is written before the app returns (a stream included), so
            # now is its last byte; no wrapper on `send` is needed for that.
            try:
                observer.finish(record, record.status, clock())
            except Exception:  # reporting must never fail a request that was served
                log.exception("observing request %s failed", record.request_id)
