"""What one request did, filled in along the path and turned into metrics, spans and one log
line when its response is over."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry.trace import Span

from budgets.timeline import Stage, Timeline
from core.answers import Completion, StreamChunk, Usage
from obs.attributes import ERROR_CLIENT_CLOSED
from obs.metrics import CacheKind, CacheResult


class _HasSubstages(Protocol):
    @property
    def substages(self) -> tuple[Stage, ...]: ...


@dataclass(slots=True, eq=False)
class RequestRecord:
    """Created by the observing middleware; each stage writes its part through one `note_*`
    (or `begin`) method, and the observer reads the fields once the response is over."""

    method: str
    route: str
    started: float
    wall_started_ns: int
    span: Span | None = None
    client_trace_id: str | None = None  # from the client's traceparent when not traced here
    request_id: str = ""
    tenant: str | None = None
    key_id: str | None = None  # the first 12 hex digits of the API key's SHA-256
    status: int = 200
    timeline: Timeline | None = None
    deadline_at: float | None = None  # the total deadline, on the same clock as `started`
    operation: str = ""
    model: str | None = None
    priority: str | None = None
    stream: bool = False
    cache: str | None = None
    similarity: float | None = None
    cache_lookups: list[tuple[CacheKind, CacheResult]] = field(default_factory=list)
    shadow: CacheResult | None = None  # what shadow mode's semantic lookup found, once done
    substages: list[Stage] = field(default_factory=list)
    input_tokens: int | None = None  # the usage the backend reported (or the cache's)
    output_tokens: int | None = None
    # What a stream's chunks brought, for one that ends before its usage (`counted_tokens`).
    streamed_input_tokens: int = 0
    streamed_output_tokens: int = 0
    # The answer was not generated for this request (`note_reused`): its tokens are cached.
    reused: bool = False
    finish_reasons: list[str] = field(default_factory=list)
    overruns: list[str] = field(default_factory=list)
    shed: str | None = None
    error: str | None = None
    stream_ended_at: float | None = None
    # Only with GATEWAY_TRACE_CONTENT=true on a traced request: the prompt and the answer.
    content_in: str | None = None
    content_out: list[str] | None = None
    _shadow_lookup: asyncio.Future[Any] | None = field(default=None, init=False, repr=False)
    _shadow_result: Callable[[], CacheResult | None] | None = field(
        default=None, init=False, repr=False
    )

    def begin(self, request_id: str, client_trace_id: str | None) -> None:
        """The request's id, and the client's trace id when the gateway does not trace it."""
        self.request_id = request_id
        if self.span is None:
            self.client_trace_id = client_trace_id

    def note_caller(self, tenant: str, key_id: str | None) -> None:
        """Who is calling: the tenant, and the short id of its API key (never the key)."""
        self.tenant = tenant
        self.key_id = key_id

    def note_budget(self, timeline: Timeline, priority: str, deadline_at: float) -> None:
        """The request's class and deadlines, fixed on arrival."""
        self.timeline = timeline
        self.priority = priority
        self.deadline_at = deadline_at

    def note_operation(self, operation: str) -> None:
        """What the route does (`chat`, `text_completion`, `embeddings`), known before parsing."""
        self.operation = operation

    def note_request(self, model: str, stream: bool = False) -> None:
        """What the parsed body asks for."""
        self.model = model
        self.stream = stream

    def note_embedded(self, prompt_tokens: int) -> None:
        self.input_tokens = prompt_tokens

    def note_prompt(self, prompt: str) -> None:
        """GATEWAY_TRACE_CONTENT=true on a traced request: the prompt, and room for the answer."""
        self.content_in = prompt
        self.content_out = []

    def note_answer(self, answer: Completion) -> None:
        """A whole answer (from the backend or the cache)."""
        self.note_usage(answer.usage)
        self.finish_reasons = [c.finish_reason for c in answer.choices if c.finish_reason]
        if self.content_out is not None:
            self.content_out.extend(choice.text for choice in answer.choices)

    def note_usage(self, usage: Usage) -> None:
        self.input_tokens = usage.prompt_tokens
        self.output_tokens = usage.completion_tokens

    def note_chunk(self, chunk: StreamChunk) -> None:
        """One chunk of a streamed answer: finish reasons, usage, the tokens it brought, and
        (when traced with content) the text."""
        content = self.content_out
        tokens = 0
        for delta in chunk.deltas:
            tokens += delta.token_count
            if delta.finish_reason is not None:
                self.finish_reasons.append(delta.finish_reason)
            if content is not None:
                content.append(delta.text)
        self.streamed_output_tokens += tokens
        self.streamed_input_tokens += chunk.prompt_tokens
        if chunk.usage is not None:
            self.note_usage(chunk.usage)

    def counted_tokens(self) -> tuple[int, int] | None:
        """The prompt and generated tokens this response accounts for: its usage, or for a
        stream that ended without one (it broke, stalled, ran out of time, or its client
        left) those its chunks had brought by then; None when it has neither."""
        if self.input_tokens is not None or self.output_tokens is not None:
            return self.input_tokens or 0, self.output_tokens or 0
        if self.streamed_input_tokens or self.streamed_output_tokens:
            return self.streamed_input_tokens, self.streamed_output_tokens
        return None

    def note_reused(self) -> None:
        """The answer was served without generating it for this request: from the cache, or
        from the backend call of an identical request it joined (coalesced)."""
        self.reused = True

    def note_stream_end(self, at: float) -> None:
        self.stream_ended_at = at

    def note_failure(
        self,
        error: str,
        *,
        status: int | None = None,
        overrun: str | None = None,
        shed: str | None = None,
    ) -> None:
        """The request failed (`status` when it is answered with an HTTP error; a stream's
        failure after its first byte keeps 200). A stream's first failure is the one kept."""
        if status is not None:
            self.status = status
            self.error = error
        elif self.error is None:
            self.error = error
        if overrun is not None:
            self.overruns.append(overrun)
        if shed is not None:
            self.shed = shed

    def cut_short(self) -> str | None:
        """The error code of an answer cut short while it was being sent or awaited: a
        stream that failed after its first byte (its status stays 200), or a request whose
        client left; None for any other (an HTTP error says what failed by its status)."""
        error = self.error
        if error is not None and (self.status < 400 or error == ERROR_CLIENT_CLOSED):
            return error
        return None

    def note_lookup(self, kind: CacheKind, result: CacheResult, overran: str | None = None) -> None:
        """One cache stage ran (or was skipped); `overran` names its budget if it ran out."""
        self.cache_lookups.append((kind, result))
        if overran is not None:
            self.overruns.append(overran)

    def note_shadow(
        self, lookup: asyncio.Future[Any], result: Callable[[], CacheResult | None]
    ) -> None:
        """Shadow mode's semantic lookup runs beside the request; once `lookup` is done,
        `result()` says what it found (see `wait_shadow`)."""
        self._shadow_lookup = lookup
        self._shadow_result = result

    async def wait_shadow(self, timeout_s: float) -> None:
        """Until the shadow lookup (if any) is done, at most `timeout_s`, then note its result
        as a `semantic_shadow` lookup; one still running by then is left out. Called after
        the last byte: the client never waits for it."""
        lookup, result = self._shadow_lookup, self._shadow_result
        if lookup is None or result is None:
            return
        if not lookup.done():
            await asyncio.wait((lookup,), timeout=timeout_s)
        found = result() if lookup.done() else None
        if found is not None:
            self.shadow = found
            self.cache_lookups.append(("semantic_shadow", found))

    def note_cache(
        self, status: str, similarity: float | None, semantic: _HasSubstages | None
    ) -> None:
        """What the cache did for the request as a whole (`X-Cache`)."""
        self.cache = status
        self.similarity = similarity
        if semantic is not None:
            self.substages = list(semantic.substages)

    def wall_ns(self, instant: float) -> int:
        """A monotonic instant of this request as epoch nanoseconds (anchored at arrival)."""
        return self.wall_started_ns + int((instant - self.started) * 1_000_000_000)
