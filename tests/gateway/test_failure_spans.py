"""Spans of requests that fail tell so: an error status and `error.type` on the SERVER span and
on the CLIENT span of the backend call that failed, after a stream's first byte too; a client
that left is named in `error.type` without an error status; a retried attempt fails its own
span."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from backends.base import GenerationRequest
from backends.openai_http import OpenAIHTTPBackend
from backends.replica import Replica
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets
from budgets.settings import BudgetSettings
from core.answers import Completion, StreamChunk
from core.backend_errors import BackendError
from gateway.app import create_app
from gateway.settings import Settings
from obs.attributes import (
    ATTR_REPLICA,
    ERROR_TYPE,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    HTTP_RESPONSE_STATUS_CODE,
)
from obs.logs import ACCESS_LOGGER
from standin.openai.server import MockOpenAIServer
from tests.gateway.test_observability import AccessLog, SpanTree, SpanWatch, memory_tracing
from tests.support.asgi_server import serving
from tests.support.fake_backend import FakeBackend

ROUTE = "/v1/chat/completions"
STALLS = ClassBudgets(total_s=30.0, ttft_s=10.0, admission_s=5.0, stall_s=0.3)


@dataclass
class Served:
    url: str
    spans: SpanWatch

    async def post(self, payload: dict[str, Any]) -> tuple[int, str, bytes]:
        """Status, request id and body of one chat request."""
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.url}{ROUTE}", json=payload) as response,
        ):
            return response.status, response.headers["x-request-id"], await response.read()

    async def failed(self, request_id: str) -> tuple[ReadableSpan, ReadableSpan]:
        """The request's SERVER span and its one CLIENT span, once reported."""
        tree = await self.spans.tree(request_id)
        (client,) = _clients(tree)
        return tree.root, client


@pytest.fixture
def access_log() -> Iterator[AccessLog]:
    logger = logging.getLogger(ACCESS_LOGGER)
    handler, level = AccessLog(), logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
async def upstream() -> AsyncIterator[MockOpenAIServer]:
    server = MockOpenAIServer(output_tokens=5)
    await server.start()
    yield server
    await server.stop()


@contextlib.asynccontextmanager
async def _serve(
    replicas: Sequence[Replica], budgets: BudgetSettings | None = None
) -> AsyncIterator[Served]:
    """A traced gateway over `replicas`."""
    tracing, watch = memory_tracing()
    settings = Settings(budgets=budgets or BudgetSettings())
    async with serving(create_app(settings, replicas, tracing)) as url:
        yield Served(url, watch)


def _chat(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text}], **extra}


def _clients(tree: SpanTree) -> list[ReadableSpan]:
    return [s for s in tree.spans if s.kind is SpanKind.CLIENT]


def _attrs(span: ReadableSpan) -> Mapping[str, Any]:
    return span.attributes or {}


def _request_id(log: AccessLog) -> str:
    """The id of the one request the log has a line of."""
    (line,) = log.records
    return str(line.__dict__["request_id"])


def _failed_with(span: ReadableSpan, error: str) -> bool:
    return span.status.status_code is StatusCode.ERROR and _attrs(span).get(ERROR_TYPE) == error


# ------------------------------------------------------------- an OpenAI-compatible upstream


@pytest.mark.parametrize("fault", ["stream_error_after", "drop_after"])
async def test_a_stream_cut_after_its_first_byte_fails_both_spans(
    upstream: MockOpenAIServer, access_log: AccessLog, fault: str
) -> None:
    """An upstream error event mid-stream, or its connection lost: the 200 was sent, but the
    server span and the backend call's span are errors naming the code the log names."""
    setattr(upstream, fault, 2)
    backend = OpenAIHTTPBackend(upstream.url, model="m")
    async with _serve([Replica("m", backend)]) as gw:
        status, request_id, body = await gw.post(_chat(stream=True))
        assert status == 200 and b'"error"' in body
        server, client = await gw.failed(request_id)
        line = await access_log.line(request_id)

    assert getattr(line, "error", None) == "backend_error"
    assert _failed_with(server, "backend_error")
    assert _attrs(server)[HTTP_RESPONSE_STATUS_CODE] == 200
    assert _failed_with(client, "backend_error")
    assert _attrs(client)[ATTR_REPLICA] == upstream.url


@pytest.mark.parametrize("stream", [False, True])
async def test_an_upstream_http_error_fails_the_client_span(
    upstream: MockOpenAIServer, stream: bool
) -> None:
    """An upstream 502 (before any byte): the client's 502 fails the server span, and the
    backend call's span fails too, with the gateway's code for it."""
    upstream.error_status, upstream.error_rate = 502, 1.0
    backend = OpenAIHTTPBackend(upstream.url, model="m")
    async with _serve([Replica("m", backend)]) as gw:
        status, request_id, _ = await gw.post(_chat(stream=stream))
        assert status == 502
        server, client = await gw.failed(request_id)

    assert _failed_with(server, "502")
    assert _failed_with(client, "backend_error")


# --------------------------------------------------------------------- the gateway's budgets


async def test_a_stream_stalled_after_its_first_byte_fails_both_spans() -> None:
    """The stall budget ending a stream after its first byte is a deadline on both spans."""
    backend = FakeBackend(url="grpc://10.0.0.5:50051", stall_after=1)
    budgets = BudgetSettings(classes={**BudgetSettings().classes, "interactive": STALLS})
    async with _serve([Replica("m", backend)], budgets) as gw:
        status, request_id, body = await gw.post(_chat(stream=True))
        assert status == 200 and b"deadline_exceeded" in body
        server, client = await gw.failed(request_id)

    assert _failed_with(server, "deadline_exceeded")
    assert _failed_with(client, "deadline_exceeded")


# ------------------------------------------------------------------------- clients that leave


async def _send(
    url: str, payload: dict[str, Any]
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """`payload` sent over a raw connection, whose client can leave at any moment."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    raw = orjson.dumps(payload)
    head = (
        f"POST {ROUTE} HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n"
        f"content-length: {len(raw)}\r\n\r\n"
    )
    writer.write(head.encode() + raw)
    await writer.drain()
    return reader, writer


async def _leave(writer: asyncio.StreamWriter) -> None:
    writer.close()
    await writer.wait_closed()


async def test_a_client_leaving_mid_stream_is_named_not_failed(access_log: AccessLog) -> None:
    """A client that leaves mid-stream: both spans say `client_closed_request` in error.type,
    with no error status (it is not the gateway's or the backend's failure)."""
    backend = FakeBackend(url="grpc://10.0.0.5:50051", stall_after=1)
    async with _serve([Replica("m", backend)]) as gw:
        reader, writer = await _send(gw.url, _chat(stream=True))
        await reader.readuntil(b"data: ")  # the first chunk was sent, then the stream stalls
        await _leave(writer)
        await access_log.wait_count(1)
        server, client = await gw.failed(_request_id(access_log))

    for span in (server, client):
        assert _attrs(span)[ERROR_TYPE] == "client_closed_request"
        assert span.status.status_code is StatusCode.UNSET
    assert _attrs(server)[HTTP_RESPONSE_STATUS_CODE] == 200


async def test_a_client_leaving_a_whole_answer_is_named_not_failed(
    access_log: AccessLog,
) -> None:
    """A client that leaves while its whole answer is generated: a 499 on the server span, and
    both spans name the client's leaving without an error status."""
    backend = FakeBackend(url="grpc://10.0.0.5:50051", hold=asyncio.Event())
    async with _serve([Replica("m", backend)]) as gw:
        _, writer = await _send(gw.url, _chat("hold the answer"))
        await backend.wait_held(1)
        await _leave(writer)
        await access_log.wait_count(1)
        server, client = await gw.failed(_request_id(access_log))

    for span in (server, client):
        assert _attrs(span)[ERROR_TYPE] == "client_closed_request"
        assert span.status.status_code is StatusCode.UNSET
    assert _attrs(server)[HTTP_RESPONSE_STATUS_CODE] == 499


# ------------------------------------------------------------------------------------ retries


@dataclass
class FailsFirst(FakeBackend):
    """Fails the first call made to any backend sharing `budget` (one failure in all)."""

    budget: list[int] | None = None

    def _spend(self) -> None:
        assert self.budget is not None
        if self.budget[0] > 0:
            self.budget[0] -= 1
            raise BackendError("boom")

    async def complete(self, request: GenerationRequest, deadline: Deadline) -> Completion:
        self._spend()
        return await super().complete(request, deadline)

    async def stream(
        self, request: GenerationRequest, deadline: Deadline
    ) -> AsyncGenerator[StreamChunk, None]:
        self._spend()
        async for chunk in super().stream(request, deadline):
            yield chunk


@pytest.mark.parametrize("stream", [False, True])
async def test_a_retried_attempt_fails_its_own_span(stream: bool) -> None:
    """A call that failed and was retried on another replica: its span is an error on its
    own replica, without the answer's tokens; the retry's span and the server span are fine."""
    budget = [1]
    backends = [FailsFirst(url=f"grpc://10.0.0.{n}:50051", budget=budget) for n in (1, 2)]
    async with _serve([Replica("m", b) for b in backends]) as gw:
        status, request_id, _ = await gw.post(_chat(stream=stream))
        assert status == 200
        tree = await gw.spans.tree(request_id)

    first, retry = sorted(_clients(tree), key=lambda span: span.start_time or 0)
    assert _failed_with(first, "backend_error")
    assert GEN_AI_USAGE_OUTPUT_TOKENS not in _attrs(first)
    assert retry.status.status_code is StatusCode.UNSET and ERROR_TYPE not in _attrs(retry)
    assert _attrs(retry)[GEN_AI_USAGE_OUTPUT_TOKENS] == 3
    assert {_attrs(first)[ATTR_REPLICA], _attrs(retry)[ATTR_REPLICA]} == {b.url for b in backends}
    assert tree.root.status.status_code is StatusCode.UNSET
    assert ERROR_TYPE not in _attrs(tree.root)
