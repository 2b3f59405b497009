"""An OpenAI-compatible upstream's error object as the gateway's error: by the HTTP status it
came with, or, when it came in-band (with HTTP 200, or in a stream), by the status its `code`
or `type` stands for, so that both ways of sending one error tell the client the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from core.backend_errors import (
    BackendError,
    BackendOverloaded,
    BackendQuotaExhausted,
    BackendRejected,
    UpstreamModelNotFound,
)
from core.digits import ascii_digits
from core.errors import GatewayError

# Statuses that mean "this request is wrong", so its message belongs to the client.
REJECTED = frozenset({400, 404, 413, 422})
# Statuses that mean "no room now": told to the client as the gateway's own overload.
OVERLOADED = frozenset({429, 503})
# OpenAI's code and type for an account whose quota is spent (a 429 too, but no overload).
QUOTA = "insufficient_quota"

# The status an in-band error stands for by its `code`, for OpenAI's codes that say more
# than their type (a model not found is an `invalid_request_error` too)...
_STATUS_OF_CODE = {
    "model_not_found": 404,
    "invalid_api_key": 401,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "server_is_overloaded": 503,
    "slow_down": 503,
}
# ...else by its `type`: OpenAI's, vLLM's (named as the Python SDK names its exceptions), and
# Anthropic's, which proxies in front of Claude relay.
_STATUS_OF_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "requests": 429,
    "tokens": 429,
    "insufficient_quota": 429,
    "server_error": 500,
    "api_error": 500,
    "service_unavailable_error": 503,
    "overloaded_error": 503,
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "UnprocessableEntityError": 422,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "NotImplementedError": 501,
    "ServiceUnavailableError": 503,
}


@dataclass(frozen=True, slots=True)
class UpstreamError:
    """What an upstream error says; `enveloped` when it was an OpenAI-style error."""

    message: str
    param: str | None = None
    code: str = ""
    kind: str = ""
    enveloped: bool = False


def read_body(body: bytes) -> UpstreamError:
    """The fields of an OpenAI, vLLM or FastAPI error body."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body[:500].decode("utf-8", "replace").strip()
        return UpstreamError(text or "(no error message)")
    if not isinstance(data, dict):
        return UpstreamError(str(data)[:500])
    error = read_object(data.get("error", data))  # vLLM before 0.8 had no envelope
    if error is not None:
        return error
    detail = data.get("detail")
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):  # FastAPI 422
        loc = [str(p) for p in detail[0].get("loc", ()) if p != "body"]
        param = ".".join(loc) or None
        message = f"{param}: {detail[0].get('msg', 'invalid')}" if param else str(detail)
        return UpstreamError(message, param, enveloped=True)
    return UpstreamError(str(detail or data)[:500])


def read_object(error: Any) -> UpstreamError | None:
    """The fields of an error object (or a bare message); None when it is neither."""
    if isinstance(error, dict) and error.get("message"):
        param, code, kind = error.get("param"), error.get("code"), error.get("type")
        return UpstreamError(
            str(error["message"]),
            str(param) if param else None,
            # vLLM's code is the HTTP status again, which says nothing the client lacks.
            code if isinstance(code, str) and not ascii_digits(code) else "",
            kind if isinstance(kind, str) else "",
            enveloped=True,
        )
    if isinstance(error, str):
        return UpstreamError(error, enveloped=True)
    return None


def in_band_status(error: Any) -> int:
    """The HTTP status an error object sent in-band stands for: its numeric `code` (vLLM's
    and OpenRouter's are the status), else what its `code` or `type` means, else a failure."""
    if not isinstance(error, dict):
        return 500
    code = error.get("code")
    if isinstance(code, int | str) and ascii_digits(str(code)) and 400 <= int(code) <= 599:
        return int(code)
    kind = error.get("type")
    status = _STATUS_OF_CODE.get(code) if isinstance(code, str) else None
    if status is None and isinstance(kind, str):
        status = _STATUS_OF_TYPE.get(kind)
    return status or 500


def as_gateway_error(
    status: int, error: UpstreamError, retry_after_s: float | None = None, where: str = ""
) -> GatewayError:
    """The error for `error` with `status`: a spent quota (by its code or type, whatever the
    status: no overload, so no Retry-After), the client's own fault (its message, param, code
    and type pass through), a model the upstream lacks, overload (429 or 503, with the
    upstream's Retry-After), or a failure of the backend, retried on another replica where
    another might not repeat it. `where` says how an in-band error came, for the log."""
    if QUOTA in (error.code, error.kind):
        said = f"spent its quota {where}" if where else f"answered HTTP {status}"
        return BackendQuotaExhausted(f"Backend {said}: {QUOTA}: {error.message}")
    if status == 404 and _names_no_model(error):
        return UpstreamModelNotFound(error.message)
    if status in REJECTED:
        return BackendRejected(error.message, param=error.param, code=error.code, kind=error.kind)
    if status in OVERLOADED:
        said = f"overloaded {where}" if where else f"answered HTTP {status}"
        return BackendOverloaded(f"Backend {said}: {error.message}", retry_after_s=retry_after_s)
    said = f"failed {where}" if where else f"answered HTTP {status}"
    retryable = status == 408 or status >= 500
    return BackendError(f"Backend {said}: {error.message}", retryable=retryable)


def _names_no_model(error: UpstreamError) -> bool:
    """A 404 saying the model does not exist: OpenAI's `model_not_found`, or vLLM's
    `NotFoundError` (with `param: "model"` since 0.8, only its words before)."""
    if error.code == "model_not_found" or error.param == "model":
        return True
    return error.kind == "NotFoundError" and "model" in error.message.lower()
