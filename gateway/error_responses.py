"""Every error as an OpenAI envelope with its status, the request's id and `Server-Timing`,
noted on the request's record: the exception handlers of the Starlette app and the hot
routes both answer through here."""

from __future__ import annotations

import logging
import time

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from core.backend_errors import BackendError
from core.errors import (
    DeadlineExceeded,
    DeadlineTooShort,
    GatewayError,
    MethodNotAllowed,
    Overloaded,
    RouteNotFound,
)
from gateway.answer_stamp import server_timing
from gateway.observing import RECORD_SCOPE_KEY
from obs.request_record import RequestRecord

log = logging.getLogger("gateway")


def error_response(exc: GatewayError, request: Request | None = None) -> Response:
    headers = exc.headers()
    if exc.caller_headers:
        headers = {**exc.caller_headers, **headers}
    record: RequestRecord | None = None if request is None else request.scope.get(RECORD_SCOPE_KEY)
    if record is not None:
        _note_error(record, exc.status, exc)
        if record.request_id:
            headers["x-request-id"] = record.request_id
        if record.cache is not None:  # failed after the cache stage: say what it did
            headers["x-cache"] = record.cache
        headers["server-timing"] = server_timing(record, time.monotonic())
    return Response(
        exc.to_json(), status_code=exc.status, media_type="application/json", headers=headers
    )


def _note_error(record: RequestRecord, status: int, exc: GatewayError) -> None:
    if isinstance(exc, BackendError):  # the client is told less than this
        log.warning(
            "request %s: replica %s: %s", record.request_id, exc.replica or "-", exc.message
        )
    record.note_failure(
        exc.code or exc.type,
        status=status,
        overrun=exc.stage if isinstance(exc, DeadlineExceeded) else None,
        shed=exc.code if isinstance(exc, Overloaded | DeadlineTooShort) else None,
    )


async def gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return error_response(exc, request)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        message = f"Method {request.method} not allowed here."
        response = error_response(MethodNotAllowed(message), request)
        response.headers.update(exc.headers or {})  # Allow: the methods the route takes
        return response
    if exc.status_code == 404:
        return error_response(RouteNotFound(f"No route {request.url.path}."), request)
    error = GatewayError(str(exc.detail))
    record: RequestRecord | None = request.scope.get(RECORD_SCOPE_KEY)
    if record is not None:
        _note_error(record, exc.status_code, error)
    return Response(error.to_json(), status_code=exc.status_code, media_type="application/json")


async def unexpected_error(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s", request.url.path, exc_info=exc)
    return error_response(GatewayError("The gateway failed unexpectedly."), request)
