"""Decoding OpenAI JSON (answers, stream events, errors) into the backend-neutral types."""

from __future__ import annotations

import base64
import math
import sys
import time
from array import array
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import orjson

from backends import openai_errors as errors
from backends import split_text, upstream_calls
from backends.split_text import Halves
from backends.upstream_calls import CallFragments
from core.answers import (
    Choice,
    ChoiceDelta,
    Completion,
    Embeddings,
    Endpoint,
    StreamChunk,
    Usage,
)
from core.backend_errors import BackendError
from core.digits import ascii_digits
from core.errors import GatewayError, UnsupportedParameter


def completion(body: bytes, endpoint: Endpoint) -> Completion:
    """A non-streaming chat or text completion."""
    try:
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            data = split_text.read_cut(body, exc)
        choices = []
        for c in data["choices"]:
            reasoning = None
            if endpoint == "chat":
                message = c["message"]
                text = message.get("content") or ""
                tool_calls = upstream_calls.whole_calls(message.get("tool_calls"))
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


def stream_chunk(
    payload: bytes,
    endpoint: Endpoint,
    halves: Halves | None = None,
    calls: CallFragments | None = None,
) -> StreamChunk | None:
    """One SSE event of a stream, or None when it carries nothing (a bare role delta). With
    `halves` (the stream's), a character the upstream cut between events is put together;
    with `calls` (the stream's), tool-call fragments are made canonical
    (`backends.upstream_calls`)."""
    try:
        try:
            data, cut = orjson.loads(payload), False
        except orjson.JSONDecodeError as exc:
            data, cut = split_text.read_cut(payload, exc, streamed=halves is not None), True
        joiner = halves if halves is not None and (cut or halves.holding) else None
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
            if joiner is not None:
                index, last = c.get("index", 0), finish is not None
                text = joiner.join(index, "text", text, last)
                reasoning = joiner.join(index, "reasoning", reasoning, last)
                if tool_calls:
                    _join_arguments(joiner, index, tool_calls, last)
            if tool_calls and calls is not None:
                tool_calls = calls.fragments(c.get("index", 0), tool_calls)
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
    if (error := _error_object(data)) is not None:
        raise error_event(error)
    return None


def _join_arguments(joiner: Halves, index: int, tool_calls: Any, last: bool) -> None:
    """Each tool call's `arguments` fragment joined to what its call's last fragment cut off
    (in place: the event's JSON was decoded for this chunk alone)."""
    for call in tool_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(part := function.get("arguments"), str):
            field = f"arguments/{call.get('index', 0)}"
            function["arguments"] = joiner.join(index, field, part, last)


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
    """The error for an upstream answer with a status other than 200."""
    error = errors.read_body(body)
    if status == 404 and not error.enveloped:
        # Not an OpenAI error but a server's bare 404: the base URL names no such endpoint.
        return BackendError(f"Backend has no such endpoint (HTTP 404): {error.message}")
    return errors.as_gateway_error(status, error, retry_after_s)


def error_event(error: Any, where: str = "mid-stream") -> GatewayError:
    """The error for an error object an upstream sent in the middle of a stream (vLLM sends
    these), or `where` else an answer belonged: what the same error would have been with
    the HTTP status its code or type stands for."""
    fields = errors.read_object(error) or errors.UpstreamError(str(error)[:500])
    return errors.as_gateway_error(errors.in_band_status(error), fields, where=where)


def error_in_place(body: bytes, what: str) -> GatewayError | None:
    """The error an upstream sent with HTTP 200 where `what` belonged (an `{"error": ...}`
    body), or None when the body holds no such error."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = _error_object(data) if isinstance(data, dict) else None
    if error is None:
        return None
    return error_event(error, f"with an error in place of {what}")


def _error_object(data: dict[str, Any]) -> Any:
    """The error object of a decoded answer or event, or None: its `error`, or itself where
    it is one (vLLM before 0.8 sent `{"object": "error", "message": ...}`)."""
    error = data.get("error")
    if error is None and data.get("object") == "error":
        return data
    return error


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
        if ascii_digits(value.strip()):
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
