"""Tests for gateway/http_protocol.py: request heads over the limits are 431, nothing else is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import orjson
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from bench.harness.probes import free_port
from gateway.http_protocol import MAX_HEADER_COUNT, BoundedHttpToolsProtocol

LIMIT = 8 * 1024


async def _echo_body_size(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    answer = str(size).encode()
    length = str(len(answer)).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", length)]}
    )
    await send({"type": "http.response.body", "body": answer})


@contextlib.asynccontextmanager
async def _server() -> AsyncIterator[int]:
    config = uvicorn.Config(
        _echo_body_size,
        port=free_port(),
        http=BoundedHttpToolsProtocol,
        h11_max_incomplete_event_size=LIMIT,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(30):
            while not server.started:
                assert not task.done()
                await asyncio.sleep(0.01)
        yield config.port
    finally:
        server.should_exit = True
        await task


async def _exchange(port: int, request: bytes, *, pieces: int = 1) -> bytes:
    """Send `request` in `pieces` writes; everything the server answers until it closes or
    has sent one full response."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        step = max(1, -(-len(request) // pieces))
        for start in range(0, len(request), step):
            writer.write(request[start : start + step])
            await writer.drain()
        async with asyncio.timeout(10):
            head = await reader.readuntil(b"\r\n\r\n")
            length = (
                next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                if b"content-length" in head.lower()
                else None
            )
            body = await reader.readexactly(length) if length is not None else b""
        return head + body
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def _post(headers: bytes, body: bytes) -> bytes:
    return (
        b"POST / HTTP/1.1\r\nHost: t\r\n"
        + headers
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )


async def test_a_head_over_the_byte_limit_is_431_with_the_envelope() -> None:
    """One header past the byte limit, in one write or trickled in pieces, is a 431 whose body
    is the OpenAI error envelope."""
    request = _post(b"X-Big: " + b"a" * (LIMIT + 1) + b"\r\n", b"{}")
    async with _server() as port:
        for pieces in (1, 16):
            answer = await _exchange(port, request, pieces=pieces)
            assert answer.startswith(b"HTTP/1.1 431 ")
            error = orjson.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
            assert error["code"] == "request_header_fields_too_large"


async def test_too_many_headers_is_431() -> None:
    """More than MAX_HEADER_COUNT small headers (well under the byte limit) is a 431."""
    many = b"".join(b"X-%d: v\r\n" % i for i in range(MAX_HEADER_COUNT + 1))
    async with _server() as port:
        answer = await _exchange(port, b"GET / HTTP/1.1\r\nHost: t\r\n" + many + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 431 ")


@pytest.mark.parametrize("pieces", [1, 7, 40])
async def test_bodies_far_over_the_head_limit_are_served(pieces: int) -> None:
    """A body many times the head limit, however it is split, never counts as head."""
    body = b"x" * (LIMIT * 40)
    async with _server() as port:
        answer = await _exchange(port, _post(b"", body), pieces=pieces)
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert answer.endswith(str(len(body)).encode())


async def test_keep_alive_requests_each_get_their_own_head_budget() -> None:
    """Many requests on one connection, each with a head just under the limit, are all served:
    the head count starts again with every request."""
    header = b"X-Pad: " + b"p" * (LIMIT - 200) + b"\r\n"
    async with _server() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(5):
                writer.write(_post(header, b"ab"))
                await writer.drain()
                async with asyncio.timeout(10):
                    head = await reader.readuntil(b"\r\n\r\n")
                    assert head.startswith(b"HTTP/1.1 200 "), head
                    assert await reader.readexactly(1) == b"2"
        finally:
            writer.close()
