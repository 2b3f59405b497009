"""The edge of a real gateway process (`gateway serve`, embedded demo model): what its HTTP
protocol answers on its own, with the limits set by its variables."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest

from bench.harness.processes import ProcessGroup
from tests.e2e.stack import start_gateway

WAIT_S = 30.0  # generous: a loaded 2-core machine must pass; a hang is what this catches


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    log_dir = tmp_path_factory.mktemp("edge")
    with ProcessGroup(log_dir) as group:
        _, gateway_port = start_gateway(
            group,
            "embedded",
            {
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"),
                "GATEWAY_HEADER_TIMEOUT_S": "0.5",
            },
        )
        yield gateway_port


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


async def test_an_idle_connection_is_closed_after_the_head_timeout(port: int) -> None:
    """GATEWAY_HEADER_TIMEOUT_S reaches the server: a silent connection is closed."""
    assert await _until_closed(port, b"") == b""


async def test_an_unfinished_head_is_408_after_the_head_timeout(port: int) -> None:
    """A head that stops half way is answered 408 in the envelope once the timeout passes."""
    answer = await _until_closed(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-")
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"code":"request_timeout"' in answer
