"""HTTP endpoints: body limits and content types, then hand-off to the pipeline."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from access.caller import Caller
from access.registry import KeyRegistry
from backends.fleet import Fleet
from budgets.request_budget import RequestBudget
from core.backend_errors import NoHealthyBackend
from core.digits import ascii_digits
from core.errors import (
    GatewayError,
    ModelNotFound,
    PayloadTooLarge,
    RouteNotFound,
    UnsupportedMediaType,
)
from gateway.client_watch import ClientWatch
from gateway.drain import DRAIN, ShuttingDown
from gateway.model_access import visible_models
from gateway.observing import RECORD_SCOPE_KEY
from gateway.openapi import openapi_json
from gateway.pipeline import Pipeline
from gateway.request_headers import as_sent, relevant_headers, trace_id_of
from gateway.request_id import new_request_id
from gateway.responses.service import ResponsesService
from obs.observer import Observer
from obs.request_record import RequestRecord

_JSON = "application/json"


class BodyTimeout(GatewayError):
    """The body did not arrive within the parse budget (a trickling, slow-loris upload)."""

    status = 408
    type = "invalid_request_error"
    code = "request_timeout"


async def read_json_body(request: Request, limit: int, timeout_s: float | None = None) -> bytes:
    """The raw body, refused with 415/413 before any parsing, and with 408 when it has not
    all arrived within `timeout_s` (the endpoints give what is left of the parse budget, so a
    body trickling in byte by byte cannot hold a connection and a task for long)."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != _JSON:
        raise UnsupportedMediaType(
            f"Content-Type must be {_JSON}, got {as_sent(content_type) or 'nothing'!r}."
        )
    encoding = request.headers.get("content-encoding", "identity")
    if encoding.strip().lower() != "identity":
        raise UnsupportedMediaType(
            f"Content-Encoding {as_sent(encoding)!r} is not supported; send the body uncompressed."
        )
    declared = request.headers.get("content-length")
    if declared is not None and ascii_digits(declared) and int(declared) > limit:
        raise PayloadTooLarge(f"Request body exceeds the limit of {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(f"Request body exceeds the limit of {limit} bytes.")
                chunks.append(chunk)
    except TimeoutError:
        raise BodyTimeout("The request body did not arrive in time.") from None
    watch = ClientWatch.of(request.scope)
    if watch is not None:  # `receive` is free now: a client leaving from here on is seen
        watch.arm()
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _parse_time_left(request: Request, budget: RequestBudget) -> float:
    """Seconds left of the parse budget (GATEWAY_BUDGET_PARSE_MS) since the request arrived."""
    parse_s: float = _pipeline(request)._budgets.parse_s  # the budget `Pipeline` checks
    return max(0.0, parse_s - budget.timeline.elapsed())


def _pipeline(request: Request) -> Pipeline:
    pipeline: Pipeline = request.state.pipeline
    return pipeline


def _record(request: Request) -> RequestRecord:
    """The request's record in the ASGI scope, where error responses find it."""
    scope = request.scope
    record: RequestRecord | None = scope.get(RECORD_SCOPE_KEY)
    if record is None:  # not observed (an app built without the observing middleware)
        record = scope[RECORD_SCOPE_KEY] = RequestRecord(
            request.method, scope["path"], time.monotonic(), 0, request_id=new_request_id()
        )
    return record


def _caller(request: Request, headers: dict[str, str], record: RequestRecord) -> Caller:
    """Who is calling, or 401 before any other work."""
    record.begin(record.request_id, trace_id_of(headers.get("traceparent")))
    registry: KeyRegistry = request.state.access
    caller = registry.caller(headers.get("authorization"))
    record.note_caller(caller.tenant, caller.key_id)
    return caller


Answer = Callable[
    [bytes, dict[str, str], RequestBudget, RequestRecord, Caller], Awaitable[Response]
]
"""What answers a generation request once its caller, budget and body are known."""


async def _generation(request: Request, answer: Answer) -> Response:
    """The headers the gateway acts on, the caller and the request's budget (all noted on
    the request's record), the body, then `answer`. An error answering a known caller
    carries its key's rate-limit headers, as every answer to it does."""
    record = _record(request)
    headers = relevant_headers(request.scope["headers"])
    caller = _caller(request, headers, record)
    pipeline = _pipeline(request)
    try:
        budget = pipeline.begin(headers, record.started, caller)
        record.note_budget(budget.timeline, budget.priority, budget.total.at)
        raw = await read_json_body(
            request, request.state.max_body_bytes, _parse_time_left(request, budget)
        )
        return await answer(raw, headers, budget, record, caller)
    except GatewayError as exc:
        await pipeline.describe_limits(exc, caller)
        raise


async def chat_completions(request: Request) -> Response:
    return await _generation(request, functools.partial(_pipeline(request).generate, "chat"))


async def completions(request: Request) -> Response:
    pipeline = _pipeline(request)
    return await _generation(request, functools.partial(pipeline.generate, "completion"))


async def embeddings(request: Request) -> Response:
    return await _generation(request, _pipeline(request).embed)


async def create_response(request: Request) -> Response:
    return await _generation(request, _responses(request).create)


async def retrieve_response(request: Request) -> Response:
    caller = _caller(request, relevant_headers(request.scope["headers"]), _record(request))
    return await _responses(request).retrieve(
        caller.tenant, request.path_params["response_id"], request.query_params
    )


async def list_input_items(request: Request) -> Response:
    caller = _caller(request, relevant_headers(request.scope["headers"]), _record(request))
    return await _responses(request).input_items(
        caller.tenant, request.path_params["response_id"], request.query_params
    )


async def delete_response(request: Request) -> Response:
    caller = _caller(request, relevant_headers(request.scope["headers"]), _record(request))
    return await _responses(request).delete(caller.tenant, request.path_params["response_id"])


def _responses(request: Request) -> ResponsesService:
    service: ResponsesService = request.state.responses
    return service


_MODELS_CREATED = int(time.time())
"""`created` of every listed model: when this process started serving it, stable across calls."""


def _visible_models(request: Request) -> list[str]:
    """The models this caller may use (a key limited to some never learns of the others):
    `model_access.visible_models`."""
    caller = _caller(request, relevant_headers(request.scope["headers"]), _record(request))
    fleet: Fleet = request.state.fleet
    return visible_models(caller, fleet)


def _model_object(name: str) -> dict[str, str | int]:
    return {"id": name, "object": "model", "created": _MODELS_CREATED, "owned_by": "llm-gateway"}


async def list_models(request: Request) -> Response:
    data = [_model_object(name) for name in _visible_models(request)]
    return Response(orjson.dumps({"object": "list", "data": data}), media_type=_JSON)


async def retrieve_model(request: Request) -> Response:
    """One model, as listed; a model this caller may not use is as absent as an unknown one.
    `/v1/models/` (an empty id) is no route, as any other trailing slash."""
    name: str = request.path_params["model"]
    if not name:
        raise RouteNotFound(f"No route {request.url.path}.")
    if name not in _visible_models(request):
        raise ModelNotFound(name)
    return Response(orjson.dumps(_model_object(name)), media_type=_JSON)


async def healthz(request: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type=_JSON)


async def metrics(request: Request) -> Response:
    observer: Observer = request.state.observer
    body, content_type = observer.metrics.render()
    return Response(body, headers={"content-type": content_type})


async def readyz(request: Request) -> Response:
    if DRAIN.draining:  # SIGTERM: out of the endpoints at once, still serving meanwhile
        raise ShuttingDown("The gateway is shutting down.")
    fleet: Fleet = request.state.fleet
    if not fleet.ready():
        raise NoHealthyBackend("No model has a healthy backend.")
    return Response(b'{"status":"ready"}', media_type=_JSON)


ROUTES = [
    Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    Route("/v1/completions", completions, methods=["POST"]),
    Route("/v1/embeddings", embeddings, methods=["POST"]),
    Route("/v1/responses", create_response, methods=["POST"]),
    Route("/v1/responses/{response_id}", retrieve_response, methods=["GET"]),
    Route("/v1/responses/{response_id}", delete_response, methods=["DELETE"]),
    Route("/v1/responses/{response_id}/input_items", list_input_items, methods=["GET"]),
    Route("/v1/models", list_models, methods=["GET"]),
    Route("/v1/models/{model:path}", retrieve_model, methods=["GET"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
    Route("/metrics", metrics, methods=["GET"]),
    Route("/openapi.json", openapi_json, methods=["GET"]),
]

# Served by `HotRoutes` ahead of Starlette (listed in ROUTES too, for the other methods' 405).
GENERATION_ROUTES = {
    "/v1/chat/completions": chat_completions,
    "/v1/completions": completions,
    "/v1/embeddings": embeddings,
    "/v1/responses": create_response,
}
