"""The edge of a real gateway process (`gateway serve`, embedded demo model): what its HTTP
protocol answers on its own, with the limits set by its variables, and how it reports that."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.processes import ProcessGroup
from tests.e2e.stack import start_gateway

WAIT_S = 30.0  # generous: a loaded 2-core machine must pass; a hang is what this catches


@dataclass(frozen=True)
class Gateway:
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    log_dir = tmp_path_factory.mktemp("edge")
    with ProcessGroup(log_dir) as group:
        process, port = start_gateway(
            group,
            "embedded",
            {
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"),
                "GATEWAY_HEADER_TIMEOUT_S": "0.5",
                "GATEWAY_LOG_LEVEL": "info",
            },
        )
        yield Gateway(port, Path(process.log_path))


async def _until_closed(port: int, sent: bytes) -> bytes:
    """Send `sent` and nothing more; all the gateway answers before it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(sent)
        async with asyncio.timeout(WAIT_S):
            return await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def _requests(gateway: Gateway, route: str, status: int) -> float:
    """gateway_request_duration_seconds_count for `route` and `status`, over every model."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{gateway.url}/metrics") as response,
    ):
        text = await response.text()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "gateway_request_duration_seconds_count"
        and sample.labels["route"] == route
        and sample.labels["status"] == str(status)
    )


async def _logged(gateway: Gateway, request_id: str) -> dict[str, object]:
    """The access-log line of `request_id`, once the gateway wrote it (polled)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            text = await asyncio.to_thread(gateway.log_path.read_text)
            for line in text.splitlines():
                if request_id in line and line.startswith("{"):
                    entry: dict[str, object] = orjson.loads(line)
                    if entry.get("logger") == "gateway.access":
                        return entry
            await asyncio.sleep(0.05)


def _request_id(answer: bytes) -> str:
    head = answer.split(b"\r\n\r\n", 1)[0].decode()
    return next(line.split(": ", 1)[1] for line in head.split("\r\n") if line.startswith("x-re"))


async def test_an_idle_connection_is_closed_after_the_head_timeout(gateway: Gateway) -> None:
    """GATEWAY_HEADER_TIMEOUT_S reaches the server: a silent connection is closed."""
    assert await _until_closed(gateway.port, b"") == b""


async def test_an_unfinished_head_is_408_after_the_head_timeout(gateway: Gateway) -> None:
    """A head that stops half way is answered 408 in the envelope once the timeout passes,
    logged and counted under the route `other`."""
    before = await _requests(gateway, "other", 408)
    answer = await _until_closed(gateway.port, b"POST /v1/chat/completions HTTP/1.1\r\nX-")
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"code":"request_timeout"' in answer
    entry = await _logged(gateway, _request_id(answer))
    assert (entry["route"], entry["status"], entry["error"]) == ("other", 408, "request_timeout")
    assert await _requests(gateway, "other", 408) == before + 1


async def test_a_head_over_the_limit_is_logged_and_counted(gateway: Gateway) -> None:
    """A 431 the protocol answers is one access-log line and one count, like any answer."""
    before = await _requests(gateway, "other", 431)
    big = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"
    answer = await _until_closed(gateway.port, big)
    assert answer.startswith(b"HTTP/1.1 431 "), answer
    entry = await _logged(gateway, _request_id(answer))
    assert (entry["route"], entry["status"]) == ("other", 431)
    assert await _requests(gateway, "other", 431) == before + 1


async def test_an_unknown_path_is_logged_and_counted(gateway: Gateway) -> None:
    """GET /nope is a 404 in the envelope, logged and counted under `other`."""
    before = await _requests(gateway, "other", 404)
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{gateway.url}/v1/files") as response,
    ):
        assert response.status == 404
        request_id = response.headers["x-request-id"]
    entry = await _logged(gateway, request_id)
    assert (entry["route"], entry["status"], entry["method"]) == ("other", 404, "GET")
    assert await _requests(gateway, "other", 404) == before + 1


@pytest.mark.parametrize("host", [b"", b"Host: \r\n", b"Host: a\r\nHost: b\r\n"])
async def test_a_request_without_one_host_is_400(gateway: Gateway, host: bytes) -> None:
    """No Host, an empty one or two: 400 invalid_host_header, before any route is tried."""
    answer = await _until_closed(gateway.port, b"GET /v1/models HTTP/1.1\r\n" + host + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer
    assert b'"code":"invalid_host_header"' in answer


async def _answered_early(
    port: int, head: bytes, first: bytes
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    """Send `head` and the first part of its body; the whole answer (head and body), with
    the connection still open for the test to go on."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head + first)
    async with asyncio.timeout(WAIT_S):
        answer = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in answer.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        answer += await reader.readexactly(length)
    return answer, reader, writer


async def _ends(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """Whether the gateway ends the connection within WAIT_S: after the end of its stream
    it is closed once a byte sent to it is answered with a reset (a write then fails)."""
    try:
        async with asyncio.timeout(WAIT_S):
            while await reader.read(65536):
                pass
            while True:
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(0.5)  # the probe's pace, not a wait for anything
    except TimeoutError:
        return False
    except ConnectionError:
        return True


def _chat_head(content_type: bytes, framing: bytes) -> bytes:
    return b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n%s\r\n\r\n" % (
        content_type,
        framing,
    )


@pytest.mark.parametrize(
    ("head", "status"),
    [
        (_chat_head(b"application/json", b"Content-Length: 300"), 408),
        (_chat_head(b"application/json", b"Content-Length: 100000000"), 413),
        (_chat_head(b"text/plain", b"Content-Length: 300"), 415),
    ],
)
async def test_an_early_answer_ends_the_connection_once_the_body_stops(
    gateway: Gateway, head: bytes, status: int
) -> None:
    """An answer given before the body was all read (the parse budget ran out, a body over
    the limit, a wrong content type) says `Connection: close`; the client then finishes
    its body and falls silent, and the connection is ended (it was held for good)."""
    answer, reader, writer = await _answered_early(gateway.port, head, b'{"model": ')
    try:
        assert answer.startswith(b"HTTP/1.1 %d " % status), answer
        assert b"\r\nconnection: close\r\n" in answer.lower()
        writer.write(b"x" * 290)
        assert await _ends(reader, writer)
    finally:
        writer.close()


async def test_an_endless_body_after_a_413_is_cut(gateway: Gateway) -> None:
    """A chunked body that never ends is refused 413 at the limit, and the connection is
    ended after a bounded amount more, not read and dropped for as long as the client
    sends."""
    chunk = b"%x\r\n%s\r\n" % (65536, b"a" * 65536)
    answer, _, writer = await _answered_early(
        gateway.port, _chat_head(b"application/json", b"Transfer-Encoding: chunked"), chunk * 65
    )
    assert answer.startswith(b"HTTP/1.1 413 "), answer
    sent = 0
    try:
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(WAIT_S):
                while sent < 1 << 30:
                    writer.write(chunk)
                    await writer.drain()
                    sent += len(chunk)
    finally:
        writer.close()
    # Past the limit: the gateway's bound on what it drops, plus the sockets' buffers.
    assert sent < 64 << 20, f"{sent >> 20} MiB sent after the 413 and the connection open"
