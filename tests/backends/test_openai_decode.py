"""Upstream HTTP errors as the gateway's errors: overload, the client's own faults, a wrong
base URL; against real servers on loopback where the headers matter."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable
from email.utils import formatdate

import orjson
import pytest
from aiohttp import web

from backends import openai_decode as decode
from backends.base import GenerationRequest
from backends.openai_http import OpenAIHTTPBackend
from budgets.deadline import Deadline
from core.backend_errors import (
    BackendError,
    BackendOverloaded,
    BackendQuotaExhausted,
    BackendRejected,
    UpstreamModelNotFound,
)
from core.errors import GatewayError, UnsupportedParameter
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from standin.openai.server import MockOpenAIServer


def _chat(*, stream: bool = False) -> GenerationRequest:
    raw = orjson.dumps({"model": "mock", "messages": [{"role": "user", "content": "hi"}]})
    if stream:
        raw = orjson.dumps({**orjson.loads(raw), "stream": True})
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, "req-1")


@contextlib.asynccontextmanager
async def _backend(url: str) -> AsyncIterator[OpenAIHTTPBackend]:
    backend = OpenAIHTTPBackend(url, model="mock")
    await backend.start()
    try:
        yield backend
    finally:
        await backend.aclose()


@contextlib.asynccontextmanager
async def _answering(status: int, body: bytes, headers: dict[str, str]) -> AsyncIterator[str]:
    """A server whose every chat completion gets this answer; yields its /v1 base URL."""

    async def answer(request: web.Request) -> web.Response:
        return web.Response(
            status=status, body=body, headers=headers, content_type="application/json"
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("status", [429, 503])
async def test_an_overloaded_upstream_is_overloaded(status: int) -> None:
    """An upstream 429 or 503 is a retryable 429 `overloaded` with Retry-After, not a 502,
    before a stream's first chunk too."""
    mock = MockOpenAIServer(error_status=status, error_rate=1.0)
    await mock.start()
    try:
        async with _backend(mock.url) as backend:
            with pytest.raises(BackendOverloaded) as info:
                await backend.complete(_chat(), Deadline.after(30))
            with pytest.raises(BackendOverloaded):
                await anext(backend.stream(_chat(stream=True), Deadline.after(30)))
    finally:
        await mock.stop()
    exc = info.value
    assert (exc.status, exc.code, exc.retryable) == (429, "overloaded", True)
    assert exc.headers()["retry-after"] == "1" and exc.replica == mock.url


QUOTA = {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota",
    "param": None,
    "code": "insufficient_quota",
}


async def test_a_spent_quota_is_not_overload() -> None:
    """OpenAI's 429 `insufficient_quota` is no passing overload: OpenAI's own type and code,
    no Retry-After (the upstream's is not relayed), still tried on another replica (which
    may bill another account), before a stream's first chunk too."""
    body = orjson.dumps({"error": QUOTA})
    async with _answering(429, body, {"Retry-After": "20"}) as url, _backend(url) as backend:
        with pytest.raises(BackendQuotaExhausted) as info:
            await backend.complete(_chat(), Deadline.after(30))
        with pytest.raises(BackendQuotaExhausted):
            await anext(backend.stream(_chat(stream=True), Deadline.after(30)))
    exc = info.value
    assert (exc.status, exc.type, exc.code) == (429, "insufficient_quota", "insufficient_quota")
    assert exc.retryable and "retry-after" not in exc.headers()


@pytest.mark.parametrize(
    "error", [QUOTA, {**QUOTA, "code": None}, {**QUOTA, "type": "rate_limit_error"}]
)
@pytest.mark.parametrize(
    "way", ["completion", "embeddings", "json to a stream", "stream data", "event: error"]
)
def test_an_in_band_spent_quota_is_one(error: dict[str, object], way: str) -> None:
    """Sent with HTTP 200, by its code or its type, a spent quota is one too."""
    assert isinstance(_in_band(way, error), BackendQuotaExhausted)


@pytest.mark.parametrize(
    ("headers", "seconds"), [({"Retry-After": "7"}, "7"), ({"retry-after-ms": "2500"}, "3")]
)
async def test_the_upstreams_retry_after_is_passed_on(
    headers: dict[str, str], seconds: str
) -> None:
    """The client is told to wait as long as the upstream asked."""
    body = b'{"error": {"message": "slow down", "type": "rate_limit_error"}}'
    async with _answering(429, body, headers) as url, _backend(url) as backend:
        with pytest.raises(BackendOverloaded) as info:
            await backend.complete(_chat(), Deadline.after(30))
    assert info.value.headers()["retry-after"] == seconds


@pytest.mark.parametrize(
    ("headers", "seconds", "ms"),
    [
        ({"Retry-After": "86400"}, "300", "300000"),
        ({"retry-after-ms": "86400000"}, "300", "300000"),
        ({"retry-after-ms": "-5000", "Retry-After": "abc"}, "1", "1000"),
        ({"retry-after-ms": "-5000", "Retry-After": "3"}, "3", "3000"),
        ({"retry-after-ms": "0"}, "1", "1000"),
    ],
)
async def test_the_relayed_retry_after_is_one_the_gateway_honours(
    headers: dict[str, str], seconds: str, ms: str
) -> None:
    """The wait relayed is at most the longest the gateway rests a replica (300 s by
    default), and a wait that is no positive number is the gateway's own 1 s, so
    `Retry-After` and `retry-after-ms` always say the same wait."""
    body = b'{"error": {"message": "slow down", "type": "rate_limit_error"}}'
    async with _answering(429, body, headers) as url, _backend(url) as backend:
        with pytest.raises(BackendOverloaded) as info:
            await backend.complete(_chat(), Deadline.after(30))
    relayed = info.value.headers()
    assert (relayed["retry-after"], relayed["retry-after-ms"]) == (seconds, ms)


def test_retry_after_is_a_positive_wait_up_to_the_longest() -> None:
    """Waits beyond `longest_s` are cut to it; negative, zero, endless or past ones (a date
    gone by) are no wait at all, and the next header is read instead."""
    assert decode.retry_after({"retry-after": "86400"}, 300.0) == 300.0
    assert decode.retry_after({"retry-after-ms": "2500"}, 300.0) == 2.5
    for ms in ("-5000", "0", "nan", "inf", "soon"):
        assert decode.retry_after({"retry-after-ms": ms}) is None
        assert decode.retry_after({"retry-after-ms": ms, "retry-after": "4"}) == 4.0
    assert decode.retry_after({"retry-after": "0"}) is None
    assert decode.retry_after({"retry-after": formatdate(time.time() - 60, usegmt=True)}) is None


def test_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    """`retry-after-ms` wins; `Retry-After` is seconds or an HTTP date; garbage is ignored."""
    assert decode.retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert decode.retry_after({"retry-after": "4"}) == 4.0
    in_a_minute = decode.retry_after({"retry-after": formatdate(time.time() + 60, usegmt=True)})
    assert in_a_minute is not None and 30.0 <= in_a_minute <= 61.0
    assert decode.retry_after({"retry-after": "soon"}) is None
    assert decode.retry_after({}) is None


async def test_an_upstream_4xx_keeps_its_own_code_type_and_param() -> None:
    """The client's fault, as the upstream named it: its code, type and param pass through
    (the gateway's `invalid_value` only when it gave no code)."""
    mock = MockOpenAIServer(error_status=400, error_rate=1.0)
    await mock.start()
    try:
        async with _backend(mock.url) as backend:
            with pytest.raises(BackendRejected) as info:
                await backend.complete(_chat(), Deadline.after(30))
    finally:
        await mock.stop()
    assert (info.value.status, info.value.code) == (400, "mock_injected_error")
    assert info.value.type == "invalid_request_error"
    error = decode.status_error(
        422, b'{"error": {"message": "no", "type": "BadRequestError", "param": "n", "code": 422}}'
    )
    assert isinstance(error, BackendRejected)
    assert (error.code, error.type, error.param) == ("invalid_value", "BadRequestError", "n")


@pytest.mark.parametrize("body", [b'{"detail": "Not Found"}', b"404: Not Found"])
async def test_a_missing_endpoint_is_a_backend_error(body: bytes) -> None:
    """A bare 404 (no OpenAI error: the base URL names no such endpoint) is the gateway's
    502, not the client's 400; a 404 in an OpenAI error is still the client's."""
    async with _answering(404, body, {}) as url, _backend(url) as backend:
        with pytest.raises(BackendError) as info:
            await backend.complete(_chat(), Deadline.after(30))
    assert info.value.status == 502 and not isinstance(info.value, BackendRejected)
    missing = b'{"error": {"message": "no such model", "code": "model_not_found"}}'
    rejected = decode.status_error(404, missing)
    assert isinstance(rejected, BackendRejected) and rejected.code == "model_not_found"


@pytest.mark.parametrize(
    "body",
    [
        b'{"error": {"message": "The model `up-v1` does not exist.", "type":'
        b' "invalid_request_error", "param": "model", "code": "model_not_found"}}',
        b'{"error": {"message": "The model `up-v1` does not exist.", "type": "NotFoundError",'
        b' "param": "model", "code": 404}}',
        b'{"object": "error", "message": "The model `up-v1` does not exist.", "type":'
        b' "NotFoundError", "param": null, "code": 404}',
    ],
    ids=["openai", "vllm", "old-vllm"],
)
def test_an_upstream_model_not_found_is_a_404_that_hides_the_upstreams_name(body: bytes) -> None:
    """A 404 saying the model does not exist (OpenAI's code, or vLLM's NotFoundError) is a
    404 model_not_found on `model`; the client is not told the name the upstream was sent."""
    error = decode.status_error(404, body)
    assert isinstance(error, UpstreamModelNotFound)
    assert (error.status, error.code, error.param) == (404, "model_not_found", "model")
    assert "up-v1" in error.message and "up-v1" not in error.to_json().decode()


def test_an_upstream_5xx_keeps_the_gateways_code() -> None:
    """A backend failure says `backend_error` whatever code the upstream used."""
    error = decode.status_error(500, b'{"error": {"message": "x", "code": "engine_dead"}}')
    assert (error.status, error.code) == (502, "backend_error")


def _embeddings(*indexes: object) -> bytes:
    data = [
        {"object": "embedding", "index": i, "embedding": [0.5, float(n)]}
        for n, i in enumerate(indexes)
    ]
    return orjson.dumps({"object": "list", "data": data, "usage": {"prompt_tokens": 3}})


def test_embeddings_come_back_in_input_order() -> None:
    """Vectors are put at their own index, whatever order the upstream listed them in."""
    answer = decode.embeddings(_embeddings(2, 0, 1), 3)
    assert answer.vectors == [[0.5, 1.0], [0.5, 2.0], [0.5, 0.0]]
    assert answer.prompt_tokens == 3


@pytest.mark.parametrize(
    ("indexes", "reason"),
    [
        ((0, 1), "2 embeddings for 3 inputs"),
        ((0, 1, 2, 3), "an embedding index 3 for 3 inputs"),
        ((0, 1, 1), "embedding index 1 twice for 3 inputs"),
        ((0, -1, 2), "an embedding index -1 for 3 inputs"),
        ((0, "1", 2), "an embedding index '1' for 3 inputs"),
        ((), "0 embeddings for 3 inputs"),
    ],
)
def test_embeddings_that_do_not_match_the_inputs_are_a_backend_error(
    indexes: tuple[object, ...], reason: str
) -> None:
    """Anything but one embedding per input, indexed 0 to n-1, is a 502 saying what was
    wrong: clients pair vectors with inputs by position."""
    with pytest.raises(BackendError) as info:
        decode.embeddings(_embeddings(*indexes), 3)
    assert reason in info.value.message
    assert info.value.status == 502 and not info.value.retryable


def test_embeddings_of_another_size_than_asked_are_a_400_on_dimensions() -> None:
    """A server that ignored `dimensions` (its vectors are longer) cannot shorten them: the
    client hears `dimensions` is unsupported, not a silently different vector size."""
    assert len(decode.embeddings(_embeddings(0), 1, dimensions=2).vectors[0]) == 2
    with pytest.raises(UnsupportedParameter) as info:
        decode.embeddings(_embeddings(0), 1, dimensions=1)
    assert info.value.param == "dimensions" and "2-dimensional" in info.value.message


def test_an_error_sent_in_place_of_an_answer_is_the_upstreams_own() -> None:
    """An `{"error": ...}` body with HTTP 200 is read as the error it is (the client's fault
    when its code says so), not as a malformed answer; other bodies still are malformed."""
    failed = decode.malformed(b'{"error": {"message": "engine down"}}', KeyError("choices"))
    assert isinstance(failed, BackendError) and failed.retryable
    assert failed.message == "Backend failed with an error in place of an answer: engine down"
    rejected = decode.json_in_place_of_stream(b'{"error": {"message": "no", "code": 400}}')
    assert isinstance(rejected, BackendRejected) and rejected.message == "no"
    odd = decode.json_in_place_of_stream(b'{"id": "x"}')
    assert isinstance(odd, BackendError) and "not events" in odd.message
    assert "malformed" in decode.malformed(b"[1]", TypeError("list")).message


_TOP_P = "Invalid 'top_p': must be <= 1"
_OPENAI_400 = {
    "message": _TOP_P,
    "type": "invalid_request_error",
    "param": "top_p",
    "code": "invalid_value",
}
# Error objects as upstreams send them in-band: the status the client gets for each, and
# whether another replica is tried.
IN_BAND_ERRORS = [
    # OpenAI's: a string code or none; the type says the status.
    (_OPENAI_400, 400, False),
    ({"message": "slow down", "type": "rate_limit_error", "param": None, "code": None}, 429, True),
    ({"message": "busy", "type": "server_error", "code": "server_is_overloaded"}, 429, True),
    ({"message": "internal boom", "type": "server_error", "param": None, "code": None}, 502, True),
    # A code of superscript digits is a word, not a status ("⁴⁰⁰" is no 400).
    ({"message": "odd", "type": "server_error", "code": "\u2074\u2070\u2070"}, 502, True),
    (
        {"message": "no model", "type": "invalid_request_error", "code": "model_not_found"},
        404,
        False,
    ),
    (
        {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"},
        502,
        False,
    ),
    # vLLM's: the HTTP status as the code; before 0.8 without the envelope.
    (
        {"message": "bad top_p", "type": "BadRequestError", "param": "top_p", "code": 400},
        400,
        False,
    ),
    ({"object": "error", "message": "bad n", "type": "BadRequestError", "code": 400}, 400, False),
    (
        {"message": "The model `m` does not exist.", "type": "NotFoundError", "code": 404},
        404,
        False,
    ),
    ({"message": "engine dead", "type": "InternalServerError", "code": 500}, 502, True),
    # No code: the type alone says it (vLLM's names; Anthropic's, as some proxies relay them).
    ({"message": "bad top_p", "type": "BadRequestError", "param": "top_p"}, 400, False),
    ({"message": "busy", "type": "overloaded_error"}, 429, True),
    ({"message": "who knows"}, 502, True),
]


def _in_band(way: str, error: dict[str, object]) -> GatewayError:
    """What the decoder of `way` makes of `error` sent with HTTP 200."""
    payload = orjson.dumps(error if error.get("object") == "error" else {"error": error})
    if way == "json to a stream":
        return decode.json_in_place_of_stream(payload)
    if way == "event: error":
        return decode.typed_error_event(payload)
    decoder: Callable[[bytes], object] = {
        "completion": lambda body: decode.completion(body, "completion"),
        "embeddings": lambda body: decode.embeddings(body, 1),
        "stream data": lambda body: decode.stream_chunk(body, "chat"),
    }[way]
    with pytest.raises(GatewayError) as info:
        decoder(payload)
    return info.value


@pytest.mark.parametrize(("error", "status", "retried"), IN_BAND_ERRORS)
@pytest.mark.parametrize(
    "way", ["completion", "embeddings", "json to a stream", "stream data", "event: error"]
)
def test_an_in_band_error_is_classified_by_what_it_says(
    error: dict[str, object], status: int, retried: bool, way: str
) -> None:
    """An error sent with HTTP 200 (for an answer, a stream, or in a stream) is the client's
    400 (its param and code kept), a 404 for a model the upstream lacks, overload's 429 or a
    failure's 502, by its code or its type; a rejection is never tried on another replica."""
    told = _in_band(way, error)
    assert told.status == status, told.message
    assert (isinstance(told, BackendError) and told.retryable) == retried
    if status == 400:
        assert isinstance(told, BackendRejected) and told.message == error["message"]
        code = error.get("code")
        assert (told.param, told.code) == (
            error.get("param"),
            code if isinstance(code, str) else "invalid_value",
        )
    assert isinstance(told, UpstreamModelNotFound) == (status == 404)
    assert isinstance(told, BackendOverloaded) == (status == 429)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, _OPENAI_400),
        (400, {"message": "bad n", "type": "BadRequestError", "param": "n", "code": 400}),
        (404, {"message": "The model `m` does not exist.", "type": "NotFoundError", "code": 404}),
        (429, {"message": "slow down", "type": "rate_limit_error"}),
        (429, QUOTA),
        (500, {"message": "engine dead", "type": "InternalServerError", "code": 500}),
    ],
)
def test_an_in_band_error_tells_what_its_status_would(
    status: int, error: dict[str, object]
) -> None:
    """An error sent with HTTP 200 tells the client what the same error sent with its own
    status does: the same class, status, type, code and param."""
    body = orjson.dumps({"error": error})
    by_status, in_band = decode.status_error(status, body), decode.json_in_place_of_stream(body)
    assert type(in_band) is type(by_status)
    assert (in_band.status, in_band.to_dict()) == (by_status.status, by_status.to_dict())


@pytest.mark.parametrize(
    ("content", "text"),
    [(b"a\xf0\x9f b", "a\ufffd b"), (b"b\\ud83d\\ude00 c\\ud83d", "b\U0001f600 c\ufffd")],
    ids=["utf8-bytes", "utf16-halves"],
)
def test_a_whole_answer_with_a_broken_character_is_mended_not_refused(
    content: bytes, text: str
) -> None:
    """An answer whose text holds bytes that are no UTF-8 or a lone escaped half still
    decodes: a pair is joined, what is broken becomes U+FFFD."""
    body = b'{"choices": [{"index": 0, "message": {"content": "%s"}, "finish_reason": "stop"}]}'
    assert decode.completion(body % content, "chat").choices[0].text == text
