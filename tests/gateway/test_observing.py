"""The observing middleware: which paths get a record, and under which bounded route."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from opentelemetry.sdk.trace import TracerProvider
from starlette.types import Receive, Scope, Send

from gateway.observing import RECORD_SCOPE_KEY, ObservingMiddleware, observed_route
from obs.observer import Observer
from obs.request_record import RequestRecord
from obs.tracing import Tracing


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/v1/chat/completions", "/v1/chat/completions"),
        ("/v1/responses", "/v1/responses"),
        ("/v1/responses/resp_0123abcd", "/v1/responses/{response_id}"),
        ("/v1/responses/resp_0123abcd/input_items", "/v1/responses/{response_id}/input_items"),
        ("/v1/models", "/v1/models"),
        ("/v1/models/sim", "/v1/models/{model}"),
        ("/v1/models/org/name", "/v1/models/{model}"),
        ("/v1/models/", "other"),
        ("/healthz", "/healthz"),
        ("/metrics", "/metrics"),
        ("/openapi.json", "/openapi.json"),
        ("/nope", "other"),
        ("/v1/files", "other"),
        ("/v1/chat/completions/", "other"),
    ],
)
def test_every_path_is_observed_under_a_bounded_route(path: str, route: str) -> None:
    """Every route is observed under its own name, an id in the path replaced by its
    template's; any other path is `other`, so a client's path never becomes a label."""
    assert observed_route(path) == route


@dataclass
class StubObserver:
    """Keeps the records it is handed."""

    tracing: Tracing = field(default_factory=Tracing.disabled)
    finished: list[RequestRecord] = field(default_factory=list)

    def finish(self, record: RequestRecord, status: int, ended: float) -> None:
        self.finished.append(record)


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def _nothing() -> dict[str, Any]:
    return {"type": "http.request", "body": b""}


async def _drop(message: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("method", "path", "route"),
    [
        ("POST", "/v1/responses", "/v1/responses"),
        ("GET", "/v1/responses/resp_secretid", "/v1/responses/{response_id}"),
        ("DELETE", "/v1/responses/resp_secretid", "/v1/responses/{response_id}"),
        (
            "GET",
            "/v1/responses/resp_secretid/input_items",
            "/v1/responses/{response_id}/input_items",
        ),
        ("GET", "/v1/models/sim", "/v1/models/{model}"),
    ],
)
async def test_responses_and_model_routes_are_reported(method: str, path: str, route: str) -> None:
    """The Responses API and GET /v1/models/{id} reach the observer, labelled by template."""
    observer = StubObserver()
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [],
        "state": {"observer": cast(Observer, observer)},
    }
    await ObservingMiddleware(_answer)(scope, _nothing, _drop)
    (record,) = observer.finished
    assert (record.method, record.route) == (method, route)


@pytest.mark.parametrize(("path", "route"), [("/nope", "other"), ("/healthz", "/healthz")])
async def test_unknown_paths_and_probes_are_reported_untraced(path: str, route: str) -> None:
    """An unknown path and a probe reach the observer too, with no server span."""
    observer = StubObserver(tracing=Tracing(TracerProvider()))
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "headers": [],
        "state": {"observer": cast(Observer, observer)},
    }
    await ObservingMiddleware(_answer)(scope, _nothing, _drop)
    (record,) = observer.finished
    assert record.route == route and record.span is None


async def test_api_routes_get_a_server_span() -> None:
    """An API route is traced when tracing is on."""
    observer = StubObserver(tracing=Tracing(TracerProvider()))
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/models",
        "headers": [],
        "state": {"observer": cast(Observer, observer)},
    }
    await ObservingMiddleware(_answer)(scope, _nothing, _drop)
    (record,) = observer.finished
    assert record.span is not None


async def test_the_report_waits_for_a_shadow_lookup_still_running() -> None:
    """A shadow lookup that ends after the last byte is still in the request's report."""
    observer = StubObserver()
    lookup: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        record: RequestRecord = scope[RECORD_SCOPE_KEY]
        record.note_shadow(lookup, lambda: "miss")
        await _answer(scope, receive, send)
        asyncio.get_running_loop().call_later(0.01, lookup.set_result, None)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/chat/completions",
        "headers": [],
        "state": {"observer": cast(Observer, observer)},
    }
    await ObservingMiddleware(answer)(scope, _nothing, _drop)
    (record,) = observer.finished
    assert record.shadow == "miss" and record.cache_lookups == [("semantic_shadow", "miss")]
