"""Orders the stages of a generation request under its budget: parse, exact cache, semantic
cache, admission and first token (in the fleet), stream, write-back."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from starlette.datastructures import Headers
from starlette.responses import Response

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.types import Completion, Endpoint, StreamChunk
from budgets.deadline import Clock, Deadline
from budgets.optional_stage import OptionalStage
from budgets.request_budget import RequestBudget
from cache.coalesce import SingleFlight, StreamFlight
from cache.entry import CachedAnswer, StreamRecorder
from cache.layer import CacheLayer, CachePlan
from gateway.embeddings import embeddings_response
from gateway.errors import DeadlineExceeded
from gateway.priority import client_timeout_s, request_priority
from gateway.propagation import propagated
from gateway.protocol import ChatCompletionRequest, CompletionRequest, parse_request
from gateway.render import ChunkRenderer, completion_body
from gateway.settings import Settings
from gateway.sse import replay_response, sse_response


def new_request_id() -> str:
    return os.urandom(12).hex()


class Pipeline:
    """The request path shared by every generation endpoint."""

    def __init__(
        self, settings: Settings, fleet: Fleet, cache: CacheLayer, clock: Clock = time.monotonic
    ) -> None:
        self._settings = settings
        self._budgets = settings.budgets
        self._fleet = fleet
        self._cache = cache
        self._clock = clock
        self._coalesce = settings.cache.coalesce
        self._flights: SingleFlight[Completion] = SingleFlight()
        self._stream_flights: StreamFlight[StreamChunk] = StreamFlight()
        self._exact_stage = OptionalStage("exact_cache", self._budgets.exact_cache_s, clock)
        self._semantic_stage = OptionalStage(
            "semantic_cache", self._budgets.semantic_cache_s, clock
        )

    def begin(self, headers: Mapping[str, str]) -> RequestBudget:
        """The request's class and deadlines, counted from now (before the body is read)."""
        started = self._clock()
        priority = request_priority(headers, self._budgets)
        return RequestBudget.start(
            priority,
            self._budgets.classes[priority],
            self._clock,
            started,
            client_timeout_s(headers),
        )

    async def generate(
        self,
        endpoint: Endpoint,
        raw: bytes,
        headers: Headers,
        request_id: str,
        budget: RequestBudget,
    ) -> Response:
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
        timeline = budget.timeline
        if timeline.record("parse", timeline.started) > self._budgets.parse_s:
            raise DeadlineExceeded("parse")
        cached = await self._lookup(plan, budget)
        response_headers = {"x-request-id": request_id, "x-cache": plan.status}
        if cached is not None:
            response_headers["age"] = str(cached.age(time.time()))
            response_headers["server-timing"] = timeline.server_timing(total=True)
            return self._cached_response(request, cached, response_headers)
        if not body.stream:
            completion = await self._complete(request, budget, plan)
            response_headers["server-timing"] = timeline.server_timing(total=True)
            return Response(
                self._body(request, completion),
                media_type="application/json",
                headers=response_headers,
            )
        stream = await self._open_stream(request, budget, plan)
        response_headers["server-timing"] = timeline.server_timing()
        guarded = _guarded(stream, budget.budgets.stall_s, budget.total)
        return sse_response(guarded, self._renderer(request), response_headers)

    async def embed(
        self, raw: bytes, headers: Headers, request_id: str, budget: RequestBudget
    ) -> Response:
        return await embeddings_response(self._fleet, raw, headers, request_id, budget)

    async def _lookup(self, plan: CachePlan, budget: RequestBudget) -> CachedAnswer | None:
        if not plan.read or plan.key is None:
            return None
        answer = await self._optional(self._exact_stage, budget, plan, self._cache.lookup_exact)
        if answer is not None or not self._cache.wants_semantic(plan):
            return answer
        return await self._optional(self._semantic_stage, budget, plan, self._cache.lookup_semantic)

    async def _optional(
        self,
        stage: OptionalStage,
        budget: RequestBudget,
        plan: CachePlan,
        lookup: Callable[[CachePlan], Awaitable[CachedAnswer | None]],
    ) -> CachedAnswer | None:
        """Run a cache stage within its budget: skipped up front when its recent p95 does not
        fit what is left, abandoned when it overruns. Either way the request goes on."""
        available = budget.before_first_token(stage.budget_s, stage.name).remaining()
        if not stage.should_run(available):
            plan.status = "error"
            return None
        timeline = budget.timeline
        started = timeline.clock()
        try:
            async with asyncio.timeout(available):
                return await lookup(plan)
        except TimeoutError:
            plan.status = "error"
            return None
        finally:
            stage.observe(timeline.record(stage.name, started))

    async def _complete(
        self, request: GenerationRequest, budget: RequestBudget, plan: CachePlan
    ) -> Completion:
        async def call() -> Completion:
            completion = await self._fleet.complete(request, budget)
            self._cache.remember(plan, completion)
            return completion

        if plan.key is None or not self._coalesce:
            return await call()
        return await self._flights.do(f"{plan.tenant}:{plan.key}", call)

    async def _open_stream(
        self, request: GenerationRequest, budget: RequestBudget, plan: CachePlan
    ) -> AsyncIterator[StreamChunk]:
        async def start() -> AsyncIterator[StreamChunk]:
            stream = await self._fleet.open_stream(request, budget)
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


async def _guarded(
    stream: AsyncIterator[StreamChunk], stall_s: float, total: Deadline
) -> AsyncIterator[StreamChunk]:
    """Pass the stream through; a gap longer than `stall_s`, or running past the total,
    ends it with `DeadlineExceeded` (an error event for the client) and closes the backend
    stream, which aborts the request there.

    The timer is armed only while waiting for the backend, never while the client is
    being written to: a slow reader is not a stalled backend.
    """
    loop = asyncio.get_running_loop()
    total_at = loop.time() + total.remaining()
    stalled = False
    try:
        async with asyncio.timeout(None) as timer:
            while True:
                stall_at = loop.time() + stall_s
                stalled = stall_at < total_at
                timer.reschedule(stall_at if stalled else total_at)
                try:
                    chunk = await anext(stream)
                except StopAsyncIteration:
                    return
                timer.reschedule(None)
                yield chunk
    except TimeoutError:
        raise DeadlineExceeded("stall" if stalled else total.stage) from None
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
