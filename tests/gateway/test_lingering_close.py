"""Tests for gateway/lingering_close.py: an answer given before its request's body had all
arrived says `Connection: close`, reaches the client whole, and the connection then ends
within bounds on silence, time and bytes, whatever the client goes on sending."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from starlette.types import Receive, Scope, Send

from gateway.lingering_close import LINGER_IDLE_S
from tests.support.edge_server import EdgeServer, edge_serving

WAIT_S = 20.0  # a generous bound on anything the server should do soon: a hang fails
HOLD = {"timeout_keep_alive": 120, "head_timeout_s": 60.0}  # neither closes within WAIT_S
ENDLESS_CHUNK = b"%x\r\n%s\r\n" % (65536, b"a" * 65536)
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _early_or_echo(scope: Scope, receive: Receive, send: Send) -> None:
    """`/early` is refused 413 without reading the body, as the gateway's routes refuse a
    body declared over the limit; anything else reads the body and answers its size."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/early":
        status, answer = 413, b"too large"
    else:
        size, more = 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            more = message.get("more_body", False)
        status, answer = 200, str(size).encode()
    headers = [(b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


def _head(path: bytes, length: int | None) -> bytes:
    framing = b"Transfer-Encoding: chunked" if length is None else b"Content-Length: %d" % length
    return b"POST %s HTTP/1.1\r\nHost: t\r\n%s\r\n\r\n" % (path, framing)


async def _answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One whole response: its head (lowercased) and its body."""
    async with asyncio.timeout(WAIT_S):
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        return head, await reader.readexactly(length)


@contextlib.asynccontextmanager
async def _connection(server: EdgeServer, first: bytes) -> AsyncIterator[Streams]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(first)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def test_an_early_answer_says_close_and_ends_once_the_client_falls_silent() -> None:
    """Answered with a third of its body sent, the client finishes the body and goes silent:
    the answer said `Connection: close`, was followed by the end of the server's stream, and
    the connection is closed, though neither the keep-alive nor the head timeout would yet."""
    async with (
        edge_serving(_early_or_echo, **HOLD) as server,
        _connection(server, _head(b"/early", 300) + b"x" * 100) as (reader, writer),
    ):
        head, _ = await _answer(reader)
        assert head.startswith(b"http/1.1 413 ") and b"\r\nconnection: close\r\n" in head
        writer.write(b"x" * 200)
        async with asyncio.timeout(WAIT_S):
            assert await reader.read() == b""
        assert await server.wait_closed(WAIT_S)


async def test_an_endless_body_after_an_early_answer_is_cut_after_bounded_bytes() -> None:
    """A chunked body that never ends, sent as fast as the server reads it: the server ends
    the connection after a bounded amount (the client's writes fail), not when it tires."""
    sent = 0
    async with (
        edge_serving(_early_or_echo, linger_max_bytes=1 << 20, **HOLD) as server,
        _connection(server, _head(b"/early", None)) as (reader, writer),
    ):
        head, _ = await _answer(reader)
        assert head.startswith(b"http/1.1 413 ")
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(WAIT_S):
                while sent < 1 << 30:
                    writer.write(ENDLESS_CHUNK)
                    await writer.drain()
                    sent += len(ENDLESS_CHUNK)
        # The bound on what is read, plus what the two sockets' buffers hold.
        assert sent < 64 << 20, f"{sent >> 20} MiB sent and the connection still open"
        assert await server.wait_closed(WAIT_S)


async def test_a_body_dripping_after_an_early_answer_is_cut_by_the_linger_time() -> None:
    """A client that keeps sending a byte more often than the linger's idle bound is cut
    once the linger time (the head timeout) has passed since the answer."""
    async with (
        edge_serving(_early_or_echo, timeout_keep_alive=120, head_timeout_s=1.0) as server,
        _connection(server, _head(b"/early", 10**9)) as (reader, writer),
    ):
        await _answer(reader)
        closed = asyncio.create_task(server.wait_closed(WAIT_S))
        with contextlib.suppress(ConnectionError):
            while not closed.done():
                writer.write(b"a")
                await writer.drain()
                await asyncio.sleep(LINGER_IDLE_S / 10)  # the drip's pace, not a wait
        assert await closed


async def test_a_client_that_sends_its_whole_body_before_reading_gets_the_answer() -> None:
    """The client writes all of a 2 MiB body, then reads: the answer is there whole, then
    the end of the stream (no reset that would lose the answer)."""
    async with (
        edge_serving(_early_or_echo, **HOLD) as server,
        _connection(server, _head(b"/early", 2 << 20)) as (reader, writer),
    ):
        for _ in range(32):
            writer.write(b"x" * 65536)
            await writer.drain()
        head, body = await _answer(reader)
        assert head.startswith(b"http/1.1 413 ") and body == b"too large"
        async with asyncio.timeout(WAIT_S):
            assert await reader.read() == b""
        assert await server.wait_closed(WAIT_S)


async def test_a_refusal_followed_by_an_endless_stream_is_cut() -> None:
    """The protocol's own refusals linger the same way: a client that goes on sending after
    its 431 is cut after a bounded amount."""
    sent = 0
    big_head = b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 2048
    async with (
        edge_serving(_early_or_echo, h11_max_incomplete_event_size=1024, **HOLD) as server,
        _connection(server, big_head) as (reader, writer),
    ):
        async with asyncio.timeout(WAIT_S):
            assert (await reader.read()).startswith(b"HTTP/1.1 431 ")
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(WAIT_S):
                while sent < 1 << 30:
                    writer.write(b"a" * 65536)
                    await writer.drain()
                    sent += 65536
        assert sent < 64 << 20, f"{sent >> 20} MiB sent and the connection still open"
        assert await server.wait_closed(WAIT_S)


async def test_an_answer_to_a_body_that_arrived_whole_keeps_the_connection() -> None:
    """A body that arrived with its head is read by the server even if the app never reads
    it: the answer keeps the connection, which serves the next request."""
    async with (
        edge_serving(_early_or_echo, **HOLD) as server,
        _connection(server, _head(b"/early", 3) + b"abc") as (reader, writer),
    ):
        head, _ = await _answer(reader)
        assert head.startswith(b"http/1.1 413 ") and b"connection: close" not in head
        writer.write(_head(b"/", 2) + b"ab")
        head, body = await _answer(reader)
        assert head.startswith(b"http/1.1 200 ") and body == b"2"


async def test_bodies_read_whole_keep_their_connection() -> None:
    """Requests whose bodies arrive in pieces and are read whole are answered on one
    kept-alive connection, none with `Connection: close`."""
    async with (
        edge_serving(_early_or_echo, **HOLD) as server,
        _connection(server, b"") as (reader, writer),
    ):
        for size in (1, 70_000, 300_000):
            writer.write(_head(b"/", size))
            for start in range(0, size, 50_000):
                writer.write(b"b" * min(50_000, size - start))
                await writer.drain()
            head, body = await _answer(reader)
            assert head.startswith(b"http/1.1 200 ") and body == str(size).encode()
            assert b"connection: close" not in head
