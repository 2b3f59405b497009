"""Orders the stages of a generation request under its budget: parse, exact cache, semantic
cache (`gateway.cache_stages`), admission and first token (in the fleet, called by
`gateway.backend_stage`), stream, write-back."""

from __future__ import annotations

import time
from collections.abc import Mapping

import orjson
from starlette.responses import Response

from access.caller import Caller
from access.limiter import Admission, RateLimiter
from backends.base import GenerationRequest
from backends.fleet import Fleet
from budgets.deadline import Clock
from budgets.request_budget import RequestBudget
from cache.layer import CacheLayer
from core.answers import Endpoint
from core.errors import DeadlineExceeded, GatewayError, TooManyMessages
from core.protocol import ChatCompletionRequest, CompletionRequest, EmbeddingRequest
from core.request_parsing import parse_request
from core.stages import StageName
from gateway.backend_stage import BackendStage
from gateway.cache_stages import CacheStages
from gateway.caller_tokens import (
    check_max_tokens,
    input_reservation,
    output_ceiling,
    reservation,
    used_tokens,
    within_ceiling,
)
from gateway.embeddings import embeddings_response
from gateway.model_access import Body, as_asked, routed, with_model
from gateway.presentation import CompletionsPresentation, Presentation
from gateway.priority import client_timeout_s, request_priority
from gateway.request_headers import trace_context
from gateway.settings import Settings
from gateway.sse import replay_response
from gateway.stream_pump import StreamPump
from obs.request_record import RequestRecord
from obs.tracing import Tracing, inject


class Pipeline:
    """The request path shared by every generation endpoint."""

    def __init__(
        self,
        settings: Settings,
        fleet: Fleet,
        cache: CacheLayer,
        tracing: Tracing,
        limiter: RateLimiter | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self._settings = settings
        self._limiter = limiter if limiter is not None else RateLimiter(None)
        self._default_output_tokens = settings.access.default_output_tokens
        self._budgets = settings.budgets
        self._fleet = fleet
        self._cache = cache
        self._tracing = tracing
        self._clock = clock
        self._cache_stages = CacheStages(cache, self._budgets, clock)
        self._backend = BackendStage(fleet, cache, tracing, settings.cache.coalesce)

    def begin(
        self, headers: Mapping[str, str], started: float | None, caller: Caller
    ) -> RequestBudget:
        """The request's class and deadlines, counted from its arrival (before the body is
        read): `started`, or now."""
        if started is None:
            started = self._clock()
        priority = request_priority(headers, self._budgets, caller)
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
        headers: dict[str, str],
        budget: RequestBudget,
        record: RequestRecord,
        caller: Caller,
    ) -> Response:
        body: ChatCompletionRequest | CompletionRequest
        if endpoint == "chat":
            record.note_operation("chat")
            body = parse_request(raw, ChatCompletionRequest)
        else:
            record.note_operation("text_completion")
            body = parse_request(raw, CompletionRequest)
        record.note_request(body.model, body.stream)
        asked = body.model
        body = self.route(body, caller)  # the answer names the version that served it
        if body.model != asked:
            raw = with_model(raw, body.model)
        presentation = CompletionsPresentation(
            endpoint,
            record.request_id,
            body.model,
            self._settings.system_fingerprint,
            body.include_usage,
            not isinstance(body, ChatCompletionRequest) or body.include_reasoning,
        )
        with as_asked(asked):
            return await self.serve(
                endpoint, body, raw, headers, budget, record, caller, presentation
            )

    async def serve(
        self,
        endpoint: Endpoint,
        body: ChatCompletionRequest | CompletionRequest,
        raw: bytes,
        headers: dict[str, str],
        budget: RequestBudget,
        record: RequestRecord,
        caller: Caller,
        presentation: Presentation,
    ) -> Response:
        """Answer a parsed request (of any API) and show it as `presentation` says."""
        body = self.route(body, caller)  # 404 before any other work
        record.note_request(body.model, body.stream)
        if isinstance(body, ChatCompletionRequest):
            self.check_message_count(len(body.messages), "messages")
        check_max_tokens(body, caller)
        ceiling = output_ceiling(body, caller)
        asked, default = body, self._default_output_tokens
        body, raw = within_ceiling(body, raw, ceiling)
        # Reserved as asked: a ceiling from the token limits bounds the answer, it is no
        # estimate of it (the key's own cap is both, as it always was).
        admission = await self._limiter.admit(caller, lambda: reservation(asked, caller, default))
        try:
            return await self._answer(
                endpoint,
                body,
                raw,
                headers,
                budget,
                record,
                caller,
                admission,
                presentation,
                ceiling is not None,
            )
        except BaseException as exc:
            self._limiter.settle(admission, 0)  # no answer: nothing to charge
            _describe_limits(exc, admission)
            raise

    async def _answer(
        self,
        endpoint: Endpoint,
        body: ChatCompletionRequest | CompletionRequest,
        raw: bytes,
        headers: dict[str, str],
        budget: RequestBudget,
        record: RequestRecord,
        caller: Caller,
        admission: Admission,
        presentation: Presentation,
        max_tokens_from_key: bool,
    ) -> Response:
        if self._tracing.record_content and record.span is not None:
            record.note_prompt(_prompt_text(body))
        request = GenerationRequest(
            endpoint=endpoint,
            body=body,
            raw=raw,
            request_id=record.request_id,
            headers=_trace_headers(headers, record),
            max_tokens_from_key=max_tokens_from_key,
        )
        plan = self._cache.plan(body, headers, caller.tenant, max_tokens_from_key)
        timeline = budget.timeline
        if timeline.record(StageName.PARSE, timeline.started) > self._budgets.parse_s:
            raise DeadlineExceeded(StageName.PARSE)
        outcome = await self._cache_stages.run(plan, budget, record)
        response_headers = {"x-request-id": record.request_id, "x-cache": outcome.status}
        cached = outcome.answer
        if cached is not None:
            record.note_answer(cached.completion)
            record.note_reused()
            response_headers.update(admission.headers(0))
            response_headers["age"] = str(cached.age(time.time()))
            response_headers["server-timing"] = timeline.server_timing(total=True)
            if body.stream:
                replay = presentation.renderer()
                response = await replay_response(cached.replay(), replay, response_headers)
            else:
                response = _json(await presentation.body(cached.completion), response_headers)
            # Settled once the answer exists: a failure before is settled by `serve`, once.
            self._limiter.settle(admission, 0)  # answered without the GPU
            return response
        if not body.stream:
            completion = await self._backend.complete(request, budget, outcome, record)
            record.note_answer(completion)
            used = completion.usage.total_tokens
            response_headers.update(admission.headers(used))  # what is left once settled
            response_headers["server-timing"] = timeline.server_timing(total=True)
            rendered = await presentation.body(completion)
            self._limiter.settle(admission, used)
            return _json(rendered, response_headers)
        # A stream's headers go out before its usage is known: its reservation is held.
        response_headers.update(admission.headers())
        source, tap = await self._backend.open_stream(request, budget, outcome, record)
        response_headers["server-timing"] = timeline.server_timing()

        def settle() -> None:
            self._limiter.settle(admission, used_tokens(record, admission))

        return StreamPump(
            source,
            presentation.renderer(),
            response_headers,
            budget,
            record,
            tap,
            settle,
            self._settings.send_timeout_s,
        )

    async def embed(
        self,
        raw: bytes,
        headers: dict[str, str],
        budget: RequestBudget,
        record: RequestRecord,
        caller: Caller,
    ) -> Response:
        record.note_operation("embeddings")
        body = parse_request(raw, EmbeddingRequest)
        record.note_request(body.model)
        asked = body.model
        body = self.route(body, caller)
        if body.model != asked:
            raw = with_model(raw, body.model)
        record.note_request(body.model)
        admission = await self._limiter.admit(caller, lambda: input_reservation(body))
        try:
            with as_asked(asked):
                response = await embeddings_response(
                    self._fleet, body, raw, _trace_headers(headers, record), budget, record
                )
        except BaseException as exc:
            self._limiter.settle(admission, 0)
            _describe_limits(exc, admission)
            raise
        used = record.input_tokens or 0
        self._limiter.settle(admission, used)
        response.headers.update(admission.headers(used))
        return response

    async def describe_limits(self, exc: GatewayError, caller: Caller) -> None:
        """An error answering `caller` before its request was admitted carries the key's
        rate-limit headers as they stand (charging nothing), as every answer does."""
        if exc.caller_headers is None and caller.key_id is not None:
            exc.caller_headers = await self._limiter.headers(caller)

    def check_message_count(self, count: int, param: str) -> None:
        """A request's size in messages, before any backend work (`GATEWAY_MAX_MESSAGES`)."""
        if count > self._settings.max_messages:
            raise TooManyMessages(param, count, self._settings.max_messages)

    def route(self, body: Body, caller: Caller) -> Body:
        """The body as the version that serves this caller names it (`model_access.routed`)."""
        return routed(body, caller, self._fleet)


def _describe_limits(exc: BaseException, admission: Admission) -> None:
    """An error after admission carries the rate-limit headers, its reservation given back."""
    if isinstance(exc, GatewayError) and exc.caller_headers is None:
        exc.caller_headers = admission.headers(0)


def _json(body: bytes, headers: dict[str, str]) -> Response:
    return Response(body, media_type="application/json", headers=headers)


def _trace_headers(headers: dict[str, str], record: RequestRecord) -> dict[str, str]:
    """The trace context for the backend: this request's server span when it is traced,
    otherwise whatever W3C context the client sent."""
    span = record.span
    if span is not None and span.is_recording():
        return inject(span)
    return trace_context(headers)


def _prompt_text(body: ChatCompletionRequest | CompletionRequest) -> str:
    """The prompt as JSON text, for a span (GATEWAY_TRACE_CONTENT=true only)."""
    if isinstance(body, ChatCompletionRequest):
        messages = [message.model_dump(exclude_none=True) for message in body.messages]
        return orjson.dumps(messages).decode()
    return orjson.dumps(body.prompt).decode()
