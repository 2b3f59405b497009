"""Tests for gateway/http_protocol.py: request heads over the limits are 431, heads that do not
arrive in time 408, connections over the cap 503; nothing else is refused."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from bench.harness.probes import free_port
from gateway.http_protocol import MAX_HEADER_COUNT, BoundedHttpToolsProtocol, EdgeConfig
from obs.request_record import RequestRecord
from obs.tracing import Tracing

LIMIT = 8 * 1024
WAIT_S = 20.0  # a generous bound on anything the server should do soon: a hang fails


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
async def _server(
    app: Any = _echo_body_size, lifespan: str = "off", **edge: Any
) -> AsyncIterator[int]:
    config = EdgeConfig(
        app,
        port=free_port(),
        http=BoundedHttpToolsProtocol,
        h11_max_incomplete_event_size=LIMIT,
        log_level="warning",
        lifespan=lifespan,
        **edge,
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


async def _trickle(writer: asyncio.StreamWriter, piece: bytes = b"a") -> None:
    """Send `piece` every 50 ms, as a slow-loris client does, until the server hangs up."""
    with contextlib.suppress(ConnectionError):
        while True:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0.05)


def _error_code(answer: bytes) -> str:
    code: str = orjson.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"]
    return code


async def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout() -> None:
    """A connection that never sends a byte is closed, unanswered, once the head timeout
    has passed (uvicorn alone keeps it open for good)."""
    async with _server(head_timeout_s=0.2) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            async with asyncio.timeout(WAIT_S):
                assert await reader.read() == b""
        finally:
            writer.close()


async def test_a_trickled_head_is_408_once_the_head_timeout_passes() -> None:
    """A head that keeps arriving a byte at a time, never whole, is a 408 in the envelope
    with a request id, then the connection is closed."""
    async with _server(head_timeout_s=0.3) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: t\r\nX-Pad: ")
        trickle = asyncio.create_task(_trickle(writer))
        try:
            async with asyncio.timeout(WAIT_S):
                answer = await reader.read()
        finally:
            trickle.cancel()
            writer.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"\r\nx-request-id: " in answer and b"\r\nconnection: close\r\n" in answer
    assert _error_code(answer) == "request_timeout"


async def test_a_kept_alive_connection_gets_the_same_deadline_for_its_next_head() -> None:
    """After an answer, the first bytes of a next head that never completes start the head
    timeout again (uvicorn's keep-alive timeout stops at the first byte): 408."""
    async with _server(head_timeout_s=0.3) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(_post(b"", b"ab"))
            async with asyncio.timeout(WAIT_S):
                assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
                assert await reader.readexactly(1) == b"2"
                writer.write(b"GET / HTTP/1.1\r\nHost")
                answer = await reader.read()
        finally:
            writer.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer


async def test_an_answer_slower_than_the_head_timeout_is_not_cut() -> None:
    """The head timeout covers only the head: an answer that takes many timeouts to come is
    delivered, and the connection then serves its next request."""
    release = asyncio.Event()

    async def slow(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/slow":
            await release.wait()
        await _echo_body_size(scope, receive, send)

    async with _server(slow, head_timeout_s=0.1) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n")
            await asyncio.sleep(0.5)  # five head timeouts pass while the answer is awaited
            release.set()
            async with asyncio.timeout(WAIT_S):
                assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
                assert await reader.readexactly(1) == b"0"
                writer.write(_post(b"", b"abc"))
                assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
                assert await reader.readexactly(1) == b"3"
        finally:
            writer.close()


async def _served_connection(port: int) -> asyncio.StreamWriter:
    """A connection that has been answered once (so the server surely counts it), kept open;
    tried again while earlier connections still fill the cap (they close asynchronously)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(_post(b"", b""))
            head = await reader.readuntil(b"\r\n\r\n")
            if head.startswith(b"HTTP/1.1 200 "):
                await reader.readexactly(1)
                return writer
            assert head.startswith(b"HTTP/1.1 503 "), head
            writer.close()
            await asyncio.sleep(0.05)


async def test_connections_over_the_cap_are_answered_503_at_once() -> None:
    """With the cap's worth of connections open, one more is answered 503 with Retry-After
    before it sends anything, and closed; once one closes, a new connection is served."""
    async with _server(max_connections=2, timeout_keep_alive=120) as port:
        held = [await _served_connection(port) for _ in range(2)]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            async with asyncio.timeout(WAIT_S):
                answer = await reader.read()
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 503 "), answer
        assert b"\r\nretry-after: 1\r\n" in answer
        assert _error_code(answer) == "too_many_connections"

        held.pop().close()
        async with asyncio.timeout(WAIT_S):
            while True:  # the server notices the close on its next loop turn: poll
                answer = await _exchange(port, _post(b"", b"ab"))
                if not answer.startswith(b"HTTP/1.1 503 "):
                    break
                await asyncio.sleep(0.05)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        for writer in held:
            writer.close()


@dataclass
class StubObserver:
    """Keeps the records it is handed, and wakes a waiting test on each."""

    tracing: Tracing = field(default_factory=Tracing.disabled)
    finished: list[tuple[RequestRecord, int]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def finish(self, record: RequestRecord, status: int, ended: float) -> None:
        self.finished.append((record, status))
        self.changed.set()

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(WAIT_S):
            while len(self.finished) < count:
                self.changed.clear()
                await self.changed.wait()


def _observed(observer: StubObserver) -> Any:
    """The echo app with `observer` in its lifespan state, where the gateway keeps its own."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await receive()
            scope["state"]["observer"] = observer
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await _echo_body_size(scope, receive, send)

    return app


def _request_id(answer: bytes) -> str:
    head = answer.split(b"\r\n\r\n", 1)[0].decode()
    return next(line.split(": ", 1)[1] for line in head.split("\r\n") if line.startswith("x-re"))


async def test_every_refusal_is_reported_under_the_route_other() -> None:
    """A 431, a parser 400, a 408 and a 503 each reach the app's observer once, as `other`,
    with their status, error code and the request id the client was given."""
    observer = StubObserver()
    app = _observed(observer)
    answers = []
    async with _server(app, "on", head_timeout_s=0.3, max_connections=1) as port:
        big = _post(b"X-Big: " + b"a" * (LIMIT + 1) + b"\r\n", b"{}")
        answers.append(await _exchange(port, big))
        answers.append(await _exchange(port, b"NOT HTTP AT ALL\r\n\r\n"))
        answers.append(await _until_closed(port, b"GET / HTTP/1.1\r\nHo"))
        writer = await _served_connection(port)
        try:
            answers.append(await _until_closed(port, b""))
        finally:
            writer.close()
        await observer.wait_for(4)
    assert [a.split(b" ", 2)[1] for a in answers] == [b"431", b"400", b"408", b"503"]
    reported = [(r.route, status, r.error, r.request_id) for r, status in observer.finished]
    assert reported[:3] == [
        ("other", 431, "request_header_fields_too_large", _request_id(answers[0])),
        ("other", 400, "invalid_http_request", _request_id(answers[1])),
        ("other", 408, "request_timeout", _request_id(answers[2])),
    ]
    # Between them, any 503s the held connection's own tries met while the others closed.
    assert {entry[:3] for entry in reported[3:]} == {("other", 503, "too_many_connections")}
    assert reported[-1][3] == _request_id(answers[3])


async def _until_closed(port: int, sent: bytes) -> bytes:
    """Send `sent` and nothing more; all the server answers before it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(sent)
        async with asyncio.timeout(WAIT_S):
            return await reader.read()
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", 200),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: \r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nhost: a\r\n\r\n", 400),
        (b"GET / HTTP/1.0\r\n\r\n", 200),
        (b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    ],
)
async def test_host_must_be_one_and_not_empty(head: bytes, status: int) -> None:
    """RFC 9112 §3.2: an HTTP/1.1 request without Host, or any request with an empty Host or
    two, is a 400 in the envelope; HTTP/1.0 may leave Host out."""
    async with _server() as port:
        answer = await _until_closed(
            port, head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        )
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer
    if status == 400:
        assert _error_code(answer) == "invalid_host_header"


async def test_each_request_of_a_connection_is_checked_for_host() -> None:
    """A kept-alive connection's second request without Host is refused like a first one."""
    async with _server() as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            async with asyncio.timeout(WAIT_S):
                assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200 ")
                await reader.readexactly(1)
                writer.write(b"GET / HTTP/1.1\r\n\r\n")
                answer = await reader.read()
        finally:
            writer.close()
    assert answer.startswith(b"HTTP/1.1 400 ") and _error_code(answer) == "invalid_host_header"
