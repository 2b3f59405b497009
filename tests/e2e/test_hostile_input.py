"""Hostile input against a real gateway process: every malformed body is a fast 4xx with the
OpenAI error envelope, never a 5xx or a hang, and the gateway stays healthy afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import aiohttp
import orjson
import pytest

from tests.e2e.stack import Stack

# Generous bounds: a loaded 2-core machine must still pass; a hang is what they catch.
REQUEST_TIMEOUT_S = 20.0

# The field that carries the prompt on each endpoint, and a well-formed value for it.
ENDPOINTS: dict[str, tuple[str, str]] = {
    "/v1/chat/completions": ("messages", '[{"role":"user","content":"hi"}]'),
    "/v1/completions": ("prompt", '"hi"'),
    "/v1/embeddings": ("input", '"hi"'),
    "/v1/responses": ("input", '"hi"'),
}


def _body(path: str, value: str, extra: str = "") -> bytes:
    """A request body for `path` with `value` (raw JSON text) as its prompt field."""
    field, _ = ENDPOINTS[path]
    return f'{{"model":"sim","{field}":{value}{extra}}}'.encode("utf-8", "surrogatepass")


def _hostile(path: str) -> dict[str, bytes]:
    """Every hostile body for one endpoint, by name."""
    _, good = ENDPOINTS[path]
    depth = 100_000
    many: Any
    if path == "/v1/chat/completions":
        many = [{"role": "user", "content": "a"}] * 50_000
    elif path == "/v1/completions":
        many = [1] * 400_000
    elif path == "/v1/embeddings":
        many = ["a"] * 50_000
    else:
        many = [{"role": "user", "content": "a"}] * 50_000
    return {
        "invalid_utf8": _body(path, good, ',"user":"').removesuffix(b"}") + b'\xff\xfe\xc3("}',
        "invalid_utf8_in_key": _body(path, good, ',"').removesuffix(b"}") + b'\xff":1}',
        "lone_surrogate_escape": _body(path, good, ',"user":"\\ud800"'),
        "lone_low_surrogate_escape": _body(path, good, ',"user":"\\udfff"'),
        "raw_surrogate_bytes": _body(path, good, ',"user":"\ud800"'),
        "deep_nesting_array": _body(path, "[" * depth + "]" * depth),
        "deep_nesting_object": _body(path, '{"a":' * depth + "1" + "}" * depth),
        "deep_nesting_valid_depth": _body(path, "[" * 200 + "]" * 200),
        "huge_integer": _body(path, good, ',"max_tokens":' + "9" * 400),
        "huge_float": _body(path, good, ',"temperature":1e400'),
        "huge_negative_float": _body(path, good, ',"temperature":-1e400'),
        "huge_seed": _body(path, good, ',"seed":18446744073709551616'),
        "nan": _body(path, good, ',"temperature":NaN'),
        "infinity": _body(path, good, ',"temperature":Infinity'),
        "negative_infinity": _body(path, good, ',"top_p":-Infinity'),
        "nan_in_prompt": _body(path, "NaN"),
        "huge_integer_in_prompt": _body(path, "[" + "9" * 40 + "]"),
        "very_many_small_messages": _body(path, orjson.dumps(many).decode()),
        "not_an_object": b"[1,2,3]",
        "empty": b"",
        "nul_bytes": b"\x00" * 64,
        "truncated": _body(path, good)[:-3],
        "duplicate_model_keys": b'{"model":"sim","model":"' + b"x" * 100_000 + b'"}',
        "wrong_types": _body(path, "{}", ',"stream":"yes","n":[]'),
    }


CASES = [(path, name) for path in ENDPOINTS for name in _hostile(path)]


async def _post(
    session: aiohttp.ClientSession, url: str, body: bytes
) -> tuple[int, dict[str, Any]]:
    async with asyncio.timeout(REQUEST_TIMEOUT_S):
        async with session.post(
            url, data=body, headers={"content-type": "application/json"}
        ) as response:
            raw = await response.read()
    return response.status, orjson.loads(raw)


def _assert_envelope(body: dict[str, Any]) -> None:
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str)
    assert error["param"] is None or isinstance(error["param"], str)
    assert error["code"] is None or isinstance(error["code"], str)


async def _healthy(stack: Stack) -> None:
    async with (
        aiohttp.ClientSession() as session,
        asyncio.timeout(REQUEST_TIMEOUT_S),
        session.get(f"{stack.base_url}/healthz") as response,
    ):
        assert response.status == 200


@pytest.mark.parametrize(("path", "name"), CASES)
async def test_hostile_body_is_4xx_envelope(stack: Stack, path: str, name: str) -> None:
    """Each hostile body is a 4xx with the OpenAI error envelope, and /healthz still answers."""
    body = _hostile(path)[name]
    async with aiohttp.ClientSession() as session:
        status, answer = await _post(session, stack.base_url + path, body)
    if name == "deep_nesting_valid_depth":
        assert status in (400, 404), answer  # well-formed JSON of a wrong shape
    assert 400 <= status < 500, (status, answer)
    _assert_envelope(answer)
    await _healthy(stack)


async def _raw_exchange(port: int, head: bytes, trickle: bytes, gap_s: float) -> bytes:
    """Send `head` then `trickle` one byte every `gap_s` until the server answers; the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answer = asyncio.create_task(reader.read(65536))
    try:
        writer.write(head)
        await writer.drain()
        for i in range(len(trickle)):
            if answer.done():  # answered (or closed) before the body was all sent
                break
            writer.write(trickle[i : i + 1])
            try:
                await writer.drain()
            except ConnectionError:
                break
            await asyncio.sleep(gap_s)
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            received = await answer
            head, _, body = received.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:  # the head and body may come in separate segments
                more = await reader.read(65536)
                if not more:
                    break
                body += more
            return head + b"\r\n\r\n" + body
    finally:
        answer.cancel()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


@pytest.mark.parametrize("path", list(ENDPOINTS))
async def test_slow_loris_body_cut_by_parse_budget(stack: Stack, path: str) -> None:
    """A body trickling in byte by byte is cut with a 408 envelope once the parse budget (3 s
    on this stack) is spent, long before the whole body could arrive."""
    body = _body(path, ENDPOINTS[path][1]) + b" " * 2000  # ~2000 bytes at 10 ms each: >20 s
    head = (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    started = time.monotonic()
    answer = await _raw_exchange(stack.gateway_port, head, body, 0.01)
    elapsed = time.monotonic() - started
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 408"), answer[:300]
    assert elapsed < 15.0
    envelope = orjson.loads(rest.partition(b"\r\n\r\n")[2])
    _assert_envelope(envelope)
    assert envelope["error"]["code"] == "request_timeout"
    await _healthy(stack)


async def test_slow_loris_headers_do_not_block_others(stack: Stack) -> None:
    """A client trickling its headers does not stop others being answered."""
    _, writer = await asyncio.open_connection("127.0.0.1", stack.gateway_port)
    try:
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")
        await writer.drain()
        await _healthy(stack)
    finally:
        writer.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"x-big": "a" * 100_000},
        {f"x-h{i}": "v" for i in range(300)},
        {"authorization": "Bearer " + "k" * 100_000},
        {"traceparent": "00-" + "f" * 70_000},
    ],
    ids=["one_huge_header", "many_headers", "huge_authorization", "huge_traceparent"],
)
async def test_huge_headers_are_431(stack: Stack, headers: dict[str, str]) -> None:
    """A request head over 64 KiB or with over 256 headers is a 431 with the error envelope,
    and the gateway stays healthy."""
    body = _body("/v1/chat/completions", ENDPOINTS["/v1/chat/completions"][1])
    async with (
        aiohttp.ClientSession(max_line_size=200_000, max_field_size=200_000) as session,
        asyncio.timeout(REQUEST_TIMEOUT_S),
        session.post(
            f"{stack.api_url}/chat/completions",
            data=body,
            headers={"content-type": "application/json", **headers},
        ) as response,
    ):
        assert response.status == 431
        _assert_envelope(await response.json())
    await _healthy(stack)


async def test_many_hostile_requests_at_once_leave_gateway_healthy(stack: Stack) -> None:
    """A burst of hostile bodies on every endpoint at once: all 4xx, then /healthz is 200."""
    async with aiohttp.ClientSession() as session:
        results = await asyncio.gather(
            *(
                _post(session, stack.base_url + path, _hostile(path)[name])
                for path in ENDPOINTS
                for name in ("invalid_utf8", "deep_nesting_array", "nan", "huge_integer")
                for _ in range(5)
            )
        )
    assert all(400 <= status < 500 for status, _ in results), results
    await _healthy(stack)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/completions", {"model": "sim", "prompt": [[-8163345, 592, 11]]}),
        ("/v1/completions", {"model": "sim", "prompt": [5, -1]}),
        ("/v1/completions", {"model": "sim", "prompt": [2**32]}),
        ("/v1/completions", {"model": "mock", "prompt": [2**40]}),
        ("/v1/embeddings", {"model": "sim", "input": [[-392698175226, 4993], [1200]]}),
        ("/v1/embeddings", {"model": "sim", "input": [2**32]}),
        ("/v1/completions", {"model": "sim", "prompt": "x", "top_k": 1125899906842623}),
        ("/v1/completions", {"model": "sim", "prompt": "x", "min_tokens": 2**40}),
        ("/v1/completions", {"model": "sim", "prompt": "x", "logit_bias": {"99999999999": 1}}),
        ("/v1/responses", {"model": "sim", "input": "x", "max_output_tokens": 2**40}),
        (
            "/v1/chat/completions",
            {
                "model": "sim",
                "messages": [{"role": "user", "content": "hi"}],
                "stop_token_ids": [-1],
            },
        ),
    ],
)
async def test_ints_beyond_protobuf_are_400(stack: Stack, path: str, body: Any) -> None:
    """Token ids that cannot be a uint32 and counts beyond int32 (found by schemathesis: each
    once a 500 from the protobuf encoder) are a 400 naming the parameter."""
    async with aiohttp.ClientSession() as session:
        status, answer = await _post(session, stack.base_url + path, orjson.dumps(body))
    assert status == 400, answer
    _assert_envelope(answer)
    assert answer["error"]["param"] in (
        *("prompt", "prompt[0]", "input", "input[0]", "stop_token_ids[0]", "top_k", "min_tokens"),
        *("logit_bias", "max_output_tokens"),
    )
