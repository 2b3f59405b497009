"""The ASGI layer that observes every request: opens its record (and, for the API, its server
span) on arrival and hands it to the Observer once the response is written, so each answer
is one access-log line and one count. The status comes from the record, which the error
handlers set; answers without an error are 200."""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Receive, Scope, Send

from budgets.deadline import Clock
from gateway.request_id import new_request_id
from obs.observer import Observer
from obs.request_record import RequestRecord

log = logging.getLogger("gateway.observing")

RECORD_SCOPE_KEY = "gateway.record"
# How long a request's report waits for its shadow-mode semantic lookup after the last byte;
# the lookup's own embedding and Redis calls are bounded by GATEWAY_SEMANTIC_TIMEOUT_MS.
SHADOW_WAIT_S = 5.0
API_ROUTES = frozenset(
    {"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/models"}
)
# Paths with an id, observed under their route template: the id (a client's) never becomes a
# metric label or a span name. (prefix, suffix, template), the first that fits counts.
TEMPLATED_ROUTES = (
    ("/v1/responses/", "/input_items", "/v1/responses/{response_id}/input_items"),
    ("/v1/responses/", "", "/v1/responses/{response_id}"),
    ("/v1/models/", "", "/v1/models/{model}"),
)
# Probes, metrics and the API description: logged and counted, never traced.
PLAIN_ROUTES = frozenset({"/healthz", "/readyz", "/metrics", "/openapi.json"})
OTHER_ROUTE = "other"
"""Every other path (an unknown route), and what the HTTP protocol refuses before routing: a
client's path never becomes a metric label."""


def observed_route(path: str) -> str:
    """The route a request to `path` is observed under: an API route (an id replaced by its
    template's name), a probe, /metrics, /openapi.json, or `other`."""
    if path in API_ROUTES or path in PLAIN_ROUTES:
        return path
    for prefix, suffix, template in TEMPLATED_ROUTES:
        if (
            path.startswith(prefix)
            and path.endswith(suffix)
            and len(path) > len(prefix) + len(suffix)
        ):
            return template
    return OTHER_ROUTE


def traced(route: str) -> bool:
    """Whether requests on `route` get a server span: the API's, not probes or unknown paths."""
    return route != OTHER_ROUTE and route not in PLAIN_ROUTES


class ObservingMiddleware:
    """Pure ASGI (no task group, `send` untouched); lifespan events pass straight by."""

    def __init__(self, app: ASGIApp, clock: Clock = time.monotonic) -> None:
        self._app = app
        self._clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        observer: Observer | None = None
        if scope["type"] == "http":
            observer = scope.get("state", {}).get("observer")
        if observer is None:
            await self._app(scope, receive, send)
            return
        route = observed_route(scope["path"])
        clock = self._clock
        method, started, wall_ns = scope["method"], clock(), time.time_ns()
        tracing = observer.tracing
        span = None
        if tracing.enabled and traced(route):
            span = tracing.start_server_span(route, method, scope["headers"], wall_ns)
        record = scope[RECORD_SCOPE_KEY] = RequestRecord(
            method, route, started, wall_ns, span, request_id=new_request_id()
        )
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
