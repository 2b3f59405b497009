"""Identical concurrent requests on one backend call, each caller under its own deadline.

The shared call runs under the class budgets counted from the first caller's arrival, not under
that caller's own `X-Request-Timeout-Ms`: a leader with a short deadline must not cut the
answer short for the callers who joined it with time to spare. Admission still judges it by
its callers' own deadlines (`Audiences`: the callers waiting on it, as they stand), as it
judges any request, so it is refused up front (400 `deadline_too_short`, 429 with
Retry-After), leaves the queue, or is dropped at its head once none of them could still get
the answer in time, and is never handed to the engine for nobody. Each caller leaves at its own
deadline, and the last one to leave cancels the call (`cache.coalesce`), which aborts the
backend's work. A caller who joined another's call gets the answer with call ids of its own
(`own_call_ids`, `OwnCallIds`): OpenAI's ids are unique per answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Sequence,
)
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, TypeVar

from backends.base import GenerationRequest
from backends.fleet import Fleet
from budgets.deadline import Deadline
from budgets.request_budget import RequestBudget
from core.answers import ChoiceDelta, Completion, StreamChunk, Usage, new_call_id
from core.errors import DeadlineExceeded
from gateway.stream_pump import ChunkSource

T = TypeVar("T")


Served = Callable[[], Sequence[RequestBudget]]


class Audiences:
    """The budgets of the callers waiting on each shared call, by the call's key."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[str, list[RequestBudget]] = {}

    @contextmanager
    def waiting(self, key: str, budget: RequestBudget) -> Iterator[None]:
        """`budget`'s caller counts among the call's audience while it waits on it."""
        budgets = self._waiting.setdefault(key, [])
        budgets.append(budget)
        try:
            yield
        finally:
            budgets.remove(budget)
            if not budgets:
                del self._waiting[key]

    def of(self, key: str) -> Served:
        """The budgets of whoever waits on `key`'s call when asked."""
        return lambda: self._waiting.get(key, ())


def shared_budget(budget: RequestBudget, served: Served) -> RequestBudget:
    """The budget of a call shared by several callers: `budget`'s class budgets from its
    arrival, without its client's own timeout (stages still land on its timeline), judged by
    admission for the callers `served` gives."""
    timeline = budget.timeline
    fresh = RequestBudget.start(budget.priority, budget.budgets, timeline.clock, timeline.started)
    return replace(fresh, timeline=timeline, served=served)


async def within(waiting: Awaitable[T], deadline: Deadline) -> T:
    """`waiting`'s result, or `DeadlineExceeded` naming `deadline` once it passes (leaving a
    shared call this way cancels it only if no other caller still waits)."""
    scope = asyncio.timeout(deadline.remaining())
    try:
        async with scope:
            return await waiting
    except TimeoutError:
        if scope.expired():
            raise DeadlineExceeded(deadline.stage) from None
        raise


def shared_stream(
    fleet: Fleet, request: GenerationRequest, budget: RequestBudget, served: Served
) -> Callable[[], Awaitable[AsyncGenerator[StreamChunk, None]]]:
    """How the first of several identical streaming callers starts the stream they share."""

    async def start() -> AsyncGenerator[StreamChunk, None]:
        opened = await fleet.open_stream(request, shared_budget(budget, served))
        return opened.iterate()

    return start


def own_call_ids(completion: Completion) -> Completion:
    """A shared answer as one more caller's: a copy whose calls have new ids (the answer
    itself, shared with the others, is left as it is)."""
    if not any(choice.tool_calls for choice in completion.choices):
        return completion
    choices = [
        replace(choice, tool_calls=[{**call, "id": new_call_id()} for call in choice.tool_calls])
        if choice.tool_calls
        else choice
        for choice in completion.choices
    ]
    return replace(completion, choices=choices)


class OwnCallIds:
    """A shared stream as one more caller's: the same chunks, each call's id replaced by a new
    one, the same in every delta that carries it (a pass-through call's fragments name it only
    in the first); chunks without calls pass as they are."""

    __slots__ = ("_ids", "_source")

    def __init__(self, source: ChunkSource) -> None:
        self._source = source
        self._ids: dict[Any, str] = {}

    @property
    def first(self) -> StreamChunk | None:
        first = self._source.first
        return None if first is None else self._own(first)

    @property
    def chunks(self) -> AsyncIterator[StreamChunk]:
        return _Renamed(self._source.chunks, self._own)

    def failed(self, exc: BaseException) -> None:
        self._source.failed(exc)

    def finished(self, usage: Usage) -> None:
        self._source.finished(usage)

    async def close(self) -> None:
        await self._source.close()

    def _own(self, chunk: StreamChunk) -> StreamChunk:
        if not any(delta.tool_calls for delta in chunk.deltas):
            return chunk
        deltas = [self._delta(delta) for delta in chunk.deltas]
        return StreamChunk(deltas, chunk.usage, chunk.prompt_tokens, chunk.system_fingerprint)

    def _delta(self, delta: ChoiceDelta) -> ChoiceDelta:
        if not delta.tool_calls:
            return delta
        return replace(delta, tool_calls=[self._call(call) for call in delta.tool_calls])

    def _call(self, call: Any) -> Any:
        if not isinstance(call, dict) or call.get("id") is None:
            return call
        known = self._ids.get(call["id"])
        if known is None:
            known = self._ids[call["id"]] = new_call_id()
        return {**call, "id": known}


class _Renamed(AsyncIterator[StreamChunk]):
    """`chunks`, each passed through `rename`."""

    __slots__ = ("_chunks", "_rename")

    def __init__(
        self, chunks: AsyncIterator[StreamChunk], rename: Callable[[StreamChunk], StreamChunk]
    ) -> None:
        self._chunks = chunks
        self._rename = rename

    async def __anext__(self) -> StreamChunk:
        return self._rename(await anext(self._chunks))
