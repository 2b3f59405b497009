"""Orders the stages of a generation request: parse, cache, backend (peeking the first
chunk), render, write-back."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator

from starlette.datastructures import Headers
from starlette.responses import Response

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.types import Completion, Endpoint, StreamChunk
from budgets.deadline import Deadline
from cache.coalesce import SingleFlight, StreamFlight
from cache.entry import CachedAnswer, StreamRecorder
from cache.layer import CacheLayer, CachePlan
from gateway.embeddings import embeddings_response
from gateway.propagation import propagated
from gateway.protocol import ChatCompletionRequest, CompletionRequest, parse_request
from gateway.render import ChunkRenderer, completion_body
from gateway.settings import Settings
from gateway.sse import replay_response, sse_response


def new_request_id() -> str:
    return os.urandom(12).hex()


class Pipeline:
    """The request path shared by every generation endpoint."""

    def __init__(self, settings: Settings, fleet: Fleet, cache: CacheLayer) -> None:
        self._settings = settings
        self._fleet = fleet
        self._cache = cache
        self._coalesce = settings.cache.coalesce
        self._flights: SingleFlight[Completion] = SingleFlight()
        self._stream_flights: StreamFlight[StreamChunk] = StreamFlight()

    async def generate(
        self, endpoint: Endpoint, raw: bytes, headers: Headers, request_id: str
    ) -> Response:
        deadline = Deadline.after(self._settings.budget_total_s, "total")
        body: ChatCompletionRequest | CompletionRequest
        if endpoint == "chat":
            body = parse_request(raw, ChatCompletionRequest)
        else:
            body = parse_request(raw, CompletionRequest)
        self._fleet.replicas(body.model)  # 404 before any other work
        request = GenerationRequest(
            endpoint=endpoint,
            body=body,
            raw=raw,
            request_id=request_id,
            headers=propagated(headers),
        )
        plan = self._cache.plan(body, headers)
        cached = await self._cache.lookup(plan)
        response_headers = {"x-request-id": request_id, "x-cache": plan.status}
        if cached is not None:
            response_headers["age"] = str(cached.age(time.time()))
            return self._cached_response(request, cached, response_headers)
        if not body.stream:
            completion = await self._complete(request, deadline, plan)
            return Response(
                self._body(request, completion),
                media_type="application/json",
                headers=response_headers,
            )
        stream = await self._open_stream(request, deadline, plan)
        return sse_response(stream, self._renderer(request), response_headers)

    async def embed(self, raw: bytes, headers: Headers, request_id: str) -> Response:
        deadline = Deadline.after(self._settings.budget_total_s, "total")
        return await embeddings_response(self._fleet, raw, headers, request_id, deadline)

    async def _complete(
        self, request: GenerationRequest, deadline: Deadline, plan: CachePlan
    ) -> Completion:
        async def call() -> Completion:
            completion = await self._fleet.complete(request, deadline)
            self._cache.remember(plan, completion)
            return completion

        if plan.key is None or not self._coalesce:
            return await call()
        return await self._flights.do(f"{plan.tenant}:{plan.key}", call)

    async def _open_stream(
        self, request: GenerationRequest, deadline: Deadline, plan: CachePlan
    ) -> AsyncIterator[StreamChunk]:
        first_chunk_deadline = deadline.child(self._settings.budget_ttft_s, "ttft")

        async def start() -> AsyncIterator[StreamChunk]:
            stream = await self._fleet.open_stream(request, deadline, first_chunk_deadline)
            if not plan.write and plan.shadow is None:
                return stream
            return _recorded(stream, self._cache, plan)

        if plan.key is None or not self._coalesce:
            return await start()
        return await self._stream_flights.open(f"{plan.tenant}:{plan.key}", start)

    def _cached_response(
        self, request: GenerationRequest, cached: CachedAnswer, headers: dict[str, str]
    ) -> Response:
        if request.body.stream:
            return replay_response(cached.replay(), self._renderer(request), headers)
        return Response(
            self._body(request, cached.completion), media_type="application/json", headers=headers
        )

    def _response_id(self, request: GenerationRequest) -> str:
        prefix = "chatcmpl-" if request.endpoint == "chat" else "cmpl-"
        return prefix + request.request_id

    def _body(self, request: GenerationRequest, completion: Completion) -> bytes:
        return completion_body(
            request.endpoint,
            completion,
            response_id=self._response_id(request),
            created=int(time.time()),
            model=request.body.model,
            fingerprint=self._settings.system_fingerprint,
        )

    def _renderer(self, request: GenerationRequest) -> ChunkRenderer:
        return ChunkRenderer(
            request.endpoint,
            response_id=self._response_id(request),
            created=int(time.time()),
            model=request.body.model,
            fingerprint=self._settings.system_fingerprint,
            include_usage=request.body.include_usage,
        )


async def _recorded(
    stream: AsyncIterator[StreamChunk], cache: CacheLayer, plan: CachePlan
) -> AsyncIterator[StreamChunk]:
    """Pass the stream through; once it ended complete and successful, remember it."""
    recorder = StreamRecorder()
    try:
        async for chunk in stream:
            recorder.add(chunk)
            yield chunk
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    completion = recorder.completion()
    if completion is not None:
        cache.remember(plan, completion)
