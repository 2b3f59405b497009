"""Decoding OpenAI JSON (answers, stream events, errors) into the backend-neutral types."""

from __future__ import annotations

import base64
import math
import sys
import time
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

from core.answers import (
    Choice,
    ChoiceDelta,
    Completion,
    Embeddings,
    Endpoint,
    StreamChunk,
    Usage,
)
from core.errors import (
    BackendError,
    BackendOverloaded,
    BackendRejected,
    GatewayError,
    UnsupportedParameter,
    UpstreamModelNotFound,
)

# Statuses that mean "this request is wrong", so its message belongs to the client.
_REJECTED = frozenset({400, 404, 413, 422})
# Statuses that mean "no room now": told to the client as the gateway's own overload.
_OVERLOADED = frozenset({429, 503})


def completion(body: bytes, endpoint: Endpoint) -> Completion:
    """A non-streaming chat or text completion."""
    try:
        data = orjson.loads(body)
        choices = []
        for c in data["choices"]:
            reasoning = None
            if endpoint == "chat":
                message = c["message"]
                text, tool_calls = message.get("content") or "", message.get("tool_calls")
                reasoning = _reasoning(message)
            else:
                text, tool_calls = c["text"], None
            finish = c.get("finish_reason") or "stop"
            choices.append(
                Choice(c["index"], text, finish, c.get("logprobs"), tool_calls, reasoning)
            )
        return Completion(choices, usage(data.get("usage")), data.get("system_fingerprint"))
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise malformed(body, exc) from exc


def stream_chunk(payload: bytes, endpoint: Endpoint) -> StreamChunk | None:
    """One SSE event of a stream, or None when it carries nothing (a bare role delta)."""
    try:
        data = orjson.loads(payload)
        deltas = []
        for c in data.get("choices") or ():
            tool_calls, reasoning = None, ""
            if endpoint == "chat":
                delta = c.get("delta") or {}
                text = delta.get("content") or ""
                tool_calls = delta.get("tool_calls")
                reasoning = _reasoning(delta) or ""
            else:
                text = c.get("text") or ""
            finish, logprobs = c.get("finish_reason"), c.get("logprobs")
            if not (text or reasoning or tool_calls) and finish is None and logprobs is None:
                continue
            deltas.append(
                ChoiceDelta(
                    c.get("index", 0),
                    text,
                    finish,
                    logprobs,
                    tool_calls,
                    _token_count(endpoint, text or reasoning, logprobs, tool_calls),
                    reasoning,
                )
            )
        used = data.get("usage")
    except (orjson.JSONDecodeError, TypeError, AttributeError) as exc:
        raise malformed(payload, exc) from exc
    if deltas or used:
        fingerprint = data.get("system_fingerprint")
        if not (fingerprint and isinstance(fingerprint, str)):
            fingerprint = None  # none sent: the gateway's default shows, as in a whole answer
        return StreamChunk(deltas, usage(used) if used else None, 0, fingerprint)
    if data.get("error") is not None:
        raise error_event(data["error"])
    return None


def embeddings(body: bytes, inputs: int, dimensions: int | None = None) -> Embeddings:
    """Vectors in input order; base64 vectors (`encoding_format`) are decoded to floats.

    Clients pair vectors with inputs by position, so an answer that is not exactly one
    embedding for each of the `inputs`, indexed 0 to inputs-1, is a backend failure. Vectors
    of another size than the `dimensions` asked for mean the server ignored it: a 400, as
    when a server refuses it for a model that cannot shorten its embeddings."""
    try:
        data = orjson.loads(body)
        vectors: list[list[float] | None] = [None] * inputs
        items = data["data"]
        if not isinstance(items, list):
            raise TypeError(f"data is a {type(items).__name__}")
        for item in items:
            index = item["index"]
            if type(index) is not int or not 0 <= index < inputs:
                raise _wrong_embeddings(f"an embedding index {index!r}", inputs, body)
            if vectors[index] is not None:
                raise _wrong_embeddings(f"embedding index {index} twice", inputs, body)
            vectors[index] = _vector(item["embedding"])
        if len(items) != inputs:
            raise _wrong_embeddings(f"{len(items)} embeddings", inputs, body)
        usage = int((data.get("usage") or {}).get("prompt_tokens") or 0)
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise malformed(body, exc) from exc
    answered = [v for v in vectors if v is not None]
    if dimensions is not None and any(len(v) != dimensions for v in answered):
        size = next(len(v) for v in answered if len(v) != dimensions)
        raise UnsupportedParameter(
            f"The model server does not support dimensions: asked for {dimensions}, it "
            f"answered {size}-dimensional embeddings.",
            param="dimensions",
        )
    return Embeddings(answered, usage)


def _wrong_embeddings(what: str, inputs: int, body: bytes) -> BackendError:
    return BackendError(
        f"Backend answered {what} for {inputs} inputs: {body[:200]!r}", retryable=False
    )


def usage(data: Any) -> Usage:
    if not data:
        return Usage()
    details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=data.get("prompt_tokens") or 0,
        completion_tokens=data.get("completion_tokens") or 0,
        cached_tokens=details.get("cached_tokens") or 0,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )


def _reasoning(message: Any) -> str | None:
    """Thinking text, under vLLM's new name or its old one."""
    reasoning = message.get("reasoning")
    if reasoning is None:
        reasoning = message.get("reasoning_content")
    return reasoning if isinstance(reasoning, str) else None


def status_error(status: int, body: bytes, retry_after_s: float | None = None) -> GatewayError:
    """The error for an upstream answer with a status other than 200: the client's own fault
    (its message, param, code and type pass through), overload (429 or 503, with the
    upstream's Retry-After), or a failure of the backend."""
    error = _error(body)
    if status == 404 and not error.enveloped:
        # Not an OpenAI error but a server's bare 404: the base URL names no such endpoint.
        return BackendError(f"Backend has no such endpoint (HTTP 404): {error.message}")
    if status == 404 and _names_no_model(error):
        return UpstreamModelNotFound(error.message)
    if status in _REJECTED:
        return BackendRejected(error.message, param=error.param, code=error.code, kind=error.kind)
    if status in _OVERLOADED:
        message = f"Backend answered HTTP {status}: {error.message}"
        return BackendOverloaded(message, retry_after_s=retry_after_s)
    retryable = status == 408 or status >= 500
    return BackendError(f"Backend answered HTTP {status}: {error.message}", retryable=retryable)


def _names_no_model(error: _Error) -> bool:
    """A 404 saying the model does not exist: OpenAI's `model_not_found`, or vLLM's
    `NotFoundError` (with `param: "model"` since 0.8, only its words before)."""
    if error.code == "model_not_found" or error.param == "model":
        return True
    return error.kind == "NotFoundError" and "model" in error.message.lower()


def error_event(error: Any, where: str = "mid-stream") -> GatewayError:
    """The error for an `{"error": ...}` an upstream sent in the middle of a stream (vLLM
    sends these), or `where` else an answer belonged."""
    fields = _error(orjson.dumps({"error": error}))
    code = error.get("code") if isinstance(error, dict) else None
    status = int(code) if isinstance(code, int | str) and str(code).isdigit() else 500
    if status in _REJECTED:
        return BackendRejected(fields.message, param=fields.param, kind=fields.kind)
    if status in _OVERLOADED:
        message = f"Backend overloaded {where}: {fields.message}"
        return BackendOverloaded(message)
    return BackendError(f"Backend failed {where}: {fields.message}", retryable=True)


def error_in_place(body: bytes, what: str) -> GatewayError | None:
    """The error an upstream sent with HTTP 200 where `what` belonged (an `{"error": ...}`
    body), or None when the body holds no such error."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or data.get("error") is None:
        return None
    return error_event(data["error"], f"with an error in place of {what}")


def json_in_place_of_stream(body: bytes) -> GatewayError:
    """The error for a JSON answer to a stream request: the upstream's own error when the body
    is one, else a backend failure quoting it."""
    return error_in_place(body, "a stream") or BackendError(
        f"Backend answered a stream request with JSON, not events: {body[:200]!r}",
        retryable=False,
    )


def typed_error_event(payload: bytes) -> GatewayError:
    """The error for an event typed `event: error`: its data is an `{"error": ...}` envelope,
    the error object itself, or a bare message."""
    try:
        data = orjson.loads(payload)
    except orjson.JSONDecodeError:
        data = payload[:500].decode("utf-8", "replace")
    if isinstance(data, dict) and data.get("error") is not None:
        data = data["error"]
    if not isinstance(data, dict):
        data = {"message": str(data) or "(no error message)"}
    return error_event(data)


def retry_after(headers: Mapping[str, str], longest_s: float = math.inf) -> float | None:
    """Seconds an upstream asks to wait, at most `longest_s` (the longest the gateway itself
    rests a replica, so a client is never told to stay away longer): `retry-after-ms`
    (OpenAI's), else `Retry-After` in seconds or as an HTTP date. None when it sent neither,
    or no positive wait (negative, zero, a date past, garbage): the caller's default holds."""
    seconds = _ms(headers.get("retry-after-ms"))
    if seconds is None:
        seconds = _retry_after_s(headers.get("retry-after"))
    return None if seconds is None else min(seconds, longest_s)


def _ms(value: str | None) -> float | None:
    try:
        seconds = float(value) / 1000 if value is not None else math.nan
    except ValueError:
        return None
    return seconds if 0 < seconds < math.inf else None


def _retry_after_s(value: str | None) -> float | None:
    """RFC 9110's delay in whole seconds, or an HTTP date."""
    if value is None:
        return None
    try:
        if value.strip().isdigit():
            seconds = float(value)
        else:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
    except (ValueError, TypeError, OverflowError):
        return None
    return seconds if 0 < seconds < math.inf else None


def malformed(body: bytes, exc: Exception) -> GatewayError:
    """The error for an answer that does not decode: the upstream's own error when it sent one
    in its place, else a backend failure quoting the answer."""
    return error_in_place(body, "an answer") or BackendError(
        f"Backend sent a malformed answer ({type(exc).__name__}: {exc}): {body[:200]!r}",
        retryable=False,
    )


@dataclass(frozen=True, slots=True)
class _Error:
    """What an upstream error body says; `enveloped` when it was an OpenAI-style error."""

    message: str
    param: str | None = None
    code: str = ""
    kind: str = ""
    enveloped: bool = False


def _error(body: bytes) -> _Error:
    """The fields of an OpenAI, vLLM or FastAPI error body."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        text = body[:500].decode("utf-8", "replace").strip()
        return _Error(text or "(no error message)")
    if not isinstance(data, dict):
        return _Error(str(data)[:500])
    error = data.get("error", data)  # vLLM before 0.8 put the fields at the top level
    if isinstance(error, dict) and error.get("message"):
        param, code, kind = error.get("param"), error.get("code"), error.get("type")
        return _Error(
            str(error["message"]),
            str(param) if param else None,
            # vLLM's code is the HTTP status again, which says nothing the client lacks.
            code if isinstance(code, str) and not code.isdigit() else "",
            kind if isinstance(kind, str) else "",
            enveloped=True,
        )
    if isinstance(error, str):
        return _Error(error, enveloped=True)
    detail = data.get("detail")
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):  # FastAPI 422
        loc = [str(p) for p in detail[0].get("loc", ()) if p != "body"]
        param = ".".join(loc) or None
        message = f"{param}: {detail[0].get('msg', 'invalid')}" if param else str(detail)
        return _Error(message, param, enveloped=True)
    return _Error(str(detail or data)[:500])


def _vector(value: Any) -> list[float]:
    if isinstance(value, str):
        floats = array("f", base64.b64decode(value))
        if sys.byteorder == "big":
            floats.byteswap()
        return floats.tolist()
    if not isinstance(value, list):
        raise TypeError(f"embedding is a {type(value).__name__}")
    return value


def _token_count(endpoint: Endpoint, text: str, logprobs: Any, tool_calls: Any) -> int:
    """Tokens in one delta: exact with logprobs, else one (servers stream token by token)."""
    if logprobs:
        entries = logprobs.get("content") if endpoint == "chat" else logprobs.get("tokens")
        if entries:
            return len(entries)
    return 1 if text or tool_calls else 0
