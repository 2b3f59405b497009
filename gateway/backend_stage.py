"""The request's backend stage: the fleet's answer or first chunk, on one backend call per
identical request in flight when coalescing is on (`gateway.coalescing`), its answer fed to
the cache's write-back."""

from __future__ import annotations

from backends.base import GenerationRequest
from backends.fleet import Fleet
from budgets.request_budget import RequestBudget
from cache.answer_tap import AnswerTap
from cache.coalesce import SingleFlight, StreamFlight
from cache.layer import CacheLayer
from cache.outcome import CacheOutcome, CachePlan
from core.answers import Completion, StreamChunk
from gateway.coalescing import (
    Audiences,
    OwnCallIds,
    own_call_ids,
    shared_budget,
    shared_stream,
    within,
)
from gateway.stream_pump import ChunkSource
from obs.observer import writeback_trace
from obs.request_record import RequestRecord
from obs.tracing import Tracing


class BackendStage:
    """Calls the fleet for the requests the cache did not answer."""

    def __init__(self, fleet: Fleet, cache: CacheLayer, tracing: Tracing, coalesce: bool) -> None:
        self._fleet = fleet
        self._cache = cache
        self._tracing = tracing
        self._coalesce = coalesce
        self._flights: SingleFlight[Completion] = SingleFlight()
        self._stream_flights: StreamFlight[StreamChunk] = StreamFlight()
        self._audiences = Audiences()  # who waits on each shared call: admission judges by them
        self._stream_audiences = Audiences()

    async def complete(
        self,
        request: GenerationRequest,
        budget: RequestBudget,
        outcome: CacheOutcome,
        record: RequestRecord,
    ) -> Completion:
        """The fleet's answer, queued for write-back (a caller who joined another's call gets
        it with call ids of its own)."""
        trace = writeback_trace(self._tracing, record)
        plan = outcome.plan
        if plan.key is None or not self._coalesce:
            completion = await self._fleet.complete(request, budget)
            self._cache.remember(outcome, completion, trace)
            return completion
        key = _flight_key(plan, budget)
        served = self._audiences.of(key)

        async def call() -> Completion:
            completion = await self._fleet.complete(request, shared_budget(budget, served))
            self._cache.remember(outcome, completion, trace)
            return completion

        with self._audiences.waiting(key, budget):
            flight = self._flights.do_shared(key, call)
            completion, joined = await within(flight, budget.total)
        if not joined:
            return completion
        record.note_reused()
        return own_call_ids(completion)

    async def open_stream(
        self,
        request: GenerationRequest,
        budget: RequestBudget,
        outcome: CacheOutcome,
        record: RequestRecord,
    ) -> tuple[ChunkSource, AnswerTap | None]:
        """The stream's source, and the tap the pump is to feed (None when a shared stream
        feeds it instead, or when its answer is not to be kept)."""
        plan = outcome.plan
        tap = self._cache.tap(outcome, writeback_trace(self._tracing, record))
        source: ChunkSource
        if plan.key is None or not self._coalesce:
            source = await self._fleet.open_stream(request, budget)
        else:
            # One backend stream per identical request in flight; it feeds the tap once.
            key = _flight_key(plan, budget)
            served = self._stream_audiences.of(key)
            start = shared_stream(self._fleet, request, budget, served)
            with self._stream_audiences.waiting(key, budget):
                flight = self._stream_flights.open(key, start, tap)
                subscription = await within(flight, budget.first_token)
            source = OwnCallIds(subscription) if subscription.shared else subscription
            if subscription.shared:
                record.note_reused()
            tap = None
        return source, tap


def _flight_key(plan: CachePlan, budget: RequestBudget) -> str:
    """Which identical requests may share one backend call: one tenant's, of one priority
    class (the call waits in its leader's class queue, and a batch key must not ride an
    interactive call), agreeing on whether the answer is kept (the leader's write-back is
    the call's only one, so a `no-store` leader would keep its followers' answers out)."""
    return f"{plan.tenant}:{budget.priority}:{int(plan.write)}:{plan.key}"
