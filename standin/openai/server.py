"""A fast OpenAI-compatible mock server for tests and benchmarks.

A bare `asyncio.Protocol` with the `httptools` parser and HTTP/1.1 keep-alive: measured
here at ~4x the request rate of an `aiohttp.web` low-level server, which matters when the
mock is the upstream of a benchmark. Answers are deterministic (`mock_openai_plan`) and
rendered in OpenAI's wire format (`mock_openai_replies`).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Coroutine, Sequence
from typing import Any

import orjson

from standin.openai.http import Connection, Request
from standin.openai.plan import Endpoint, MockRequestError, Plan, error_body, plan
from standin.openai.replies import (
    completion_body,
    embeddings_body,
    models_body,
    stream_error_event,
    stream_steps,
)

_GENERATION: dict[bytes, Endpoint] = {
    b"/v1/chat/completions": "chat",
    b"/v1/completions": "completion",
}
_ROUTES = {
    b"/v1/chat/completions": b"POST",
    b"/v1/completions": b"POST",
    b"/v1/embeddings": b"POST",
    b"/v1/models": b"GET",
    b"/health": b"GET",
}


class MockOpenAIServer:
    """An in-process OpenAI-compatible server; every knob is a public attribute tests may set.

    `models` are listed by `/v1/models`; any other model is accepted too unless
    `strict_models`. `error_status` is injected into `error_rate` of the generation and
    embedding requests, spread evenly (rate 0.25: every fourth). A stream fails after
    `stream_error_after` tokens with an error event, or loses its connection after
    `drop_after` tokens. For assertions: the last POST (`last_request`), the number of
    POSTs (`requests`) and of accepted connections (`connections`), and `disconnects`,
    the requests whose client left before the answer was complete.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Sequence[str] = ("mock",),
        strict_models: bool = False,
        output_tokens: int = 16,
        ttft: float = 0.0,
        itl: float = 0.0,
        error_status: int = 0,
        error_rate: float = 0.0,
        stream_error_after: int | None = None,
        drop_after: int | None = None,
        embedding_dimensions: int = 8,
    ) -> None:
        self.host = host
        self.port = port
        self.models = list(models)
        self.strict_models = strict_models
        self.output_tokens = output_tokens
        self.ttft = ttft
        self.itl = itl
        self.error_status = error_status
        self.error_rate = error_rate
        self.stream_error_after = stream_error_after
        self.drop_after = drop_after
        self.embedding_dimensions = embedding_dimensions
        self.requests = 0
        self.connections = 0
        self.disconnects = 0
        self.last_request: Request | None = None
        self._error_credit = 0.0
        self._ids = itertools.count()
        self._seen_prompts: set[int] = set()
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()
        self._disconnected = asyncio.Event()

    @property
    def url(self) -> str:
        """The OpenAI base URL, `http://host:port/v1`."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def last_headers(self) -> dict[str, str]:
        """The headers of the last generation or embedding request, names lower-cased."""
        return self.last_request.header_dict() if self.last_request else {}

    @property
    def last_body(self) -> bytes:
        return self.last_request.body if self.last_request else b""

    async def start(self) -> int:
        """Listen, and return the port (a free one when constructed with port 0)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._connect,
            self.host,
            self.port,
            reuse_address=True,
            backlog=2048,
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is None:
            return
        self._server.close()
        for connection in list(self._connections):
            connection.abort()
        await self._server.wait_closed()
        self._server = None

    async def wait_for_disconnects(self, count: int) -> None:
        """Return once `disconnects` has reached `count`."""
        while self.disconnects < count:
            self._disconnected.clear()
            await self._disconnected.wait()

    def _connect(self) -> Connection:
        self.connections += 1
        return Connection(self._dispatch, self._connections, self._on_disconnect)

    def _on_disconnect(self) -> None:
        self.disconnects += 1
        self._disconnected.set()

    def _dispatch(self, conn: Connection, req: Request) -> Coroutine[Any, Any, None] | None:
        """Answer `req`, or return the coroutine that will (for delayed or streamed answers)."""
        method = _ROUTES.get(req.path)
        if method is None:
            conn.respond(404, error_body("Not Found", type="invalid_request_error", code="404"))
            return None
        if req.method != method:
            message = "Method Not Allowed"
            conn.respond(405, error_body(message, type="invalid_request_error", code="405"))
            return None
        if req.path == b"/health":
            conn.respond(200, b"", b"text/plain")
            return None
        if req.path == b"/v1/models":
            conn.respond(200, models_body(self.models, int(time.time())))
            return None
        self.requests += 1
        self.last_request = req
        try:
            self._maybe_inject_error()
            body = _json(req.body)
            self._check_model(body)
            if req.path == b"/v1/embeddings":
                conn.respond(200, embeddings_body(body, self.embedding_dimensions))
                return None
            endpoint = _GENERATION[req.path]
            prefix = "chatcmpl" if endpoint == "chat" else "cmpl"
            p = plan(
                endpoint,
                body,
                output_tokens=self.output_tokens,
                seen=self._seen_prompts,
                id=f"{prefix}-mock{next(self._ids)}",
                created=int(time.time()),
            )
        except MockRequestError as exc:
            conn.respond(exc.status, exc.body)
            return None
        if body.get("stream") is True:
            return self._stream(conn, p)
        if self.ttft or self.itl:
            return self._delayed(conn, p)
        conn.respond(200, completion_body(p))
        return None

    def _maybe_inject_error(self) -> None:
        if not self.error_status or self.error_rate <= 0:
            return
        self._error_credit += self.error_rate
        if self._error_credit < 1.0 - 1e-9:
            return
        self._error_credit -= 1.0
        status = self.error_status
        kind = "server_error" if status >= 500 else "invalid_request_error"
        if status == 429:
            kind = "rate_limit_error"
        message = f"Injected HTTP {status} error from the mock server."
        raise MockRequestError(status, message, type=kind, code="mock_injected_error")

    def _check_model(self, body: Any) -> None:
        model = body.get("model") if isinstance(body, dict) else None
        if self.strict_models and isinstance(model, str) and model not in self.models:
            message = f"The model `{model}` does not exist."
            raise MockRequestError(404, message, param="model", code="model_not_found")

    async def _delayed(self, conn: Connection, p: Plan) -> None:
        tokens = len(p.choices[0]) if p.choices else 0
        await asyncio.sleep(self.ttft + self.itl * max(tokens - 1, 0))
        conn.respond(200, completion_body(p))

    async def _stream(self, conn: Connection, p: Plan) -> None:
        conn.start_stream(200, b"text/event-stream")
        for step, event in enumerate(stream_steps(p)):
            delay = self.ttft if step == 0 else self.itl
            if delay:
                await asyncio.sleep(delay)
            if self.drop_after is not None and step >= self.drop_after:
                conn.abort()
                return
            if self.stream_error_after is not None and step >= self.stream_error_after:
                conn.write_stream(stream_error_event("Injected mid-stream error from the mock."))
                break
            conn.write_stream(event)
            await conn.drain()
        conn.end_stream()


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MockRequestError(400, f"The request body is not valid JSON: {exc}") from None
