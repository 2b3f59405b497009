"""A shared call's budget, each caller leaving a shared call at its own deadline, and the call
ids of its own each caller who joined one gets."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.answers import Choice, ChoiceDelta, Completion, StreamChunk, Usage
from core.errors import DeadlineExceeded
from gateway.coalescing import Audiences, OwnCallIds, own_call_ids, shared_budget, within

BUDGETS = ClassBudgets(total_s=10.0, ttft_s=2.0, admission_s=0.5, stall_s=3.0)


def test_a_shared_call_runs_under_the_class_budgets_not_the_clients_timeout() -> None:
    """The client's 0.6 s is its own; the call it shares gets the class's 10 s and 2 s to the
    first token, on the same timeline, and admission judges it by the callers it serves."""
    budget = RequestBudget.start("interactive", BUDGETS, lambda: 100.0, 100.0, 0.6)
    shared = shared_budget(budget, lambda: [budget])
    assert budget.total.at == pytest.approx(100.6)
    assert (shared.total.at, shared.first_token.at) == (110.0, 102.0)
    assert shared.timeline is budget.timeline and shared.priority == "interactive"
    assert shared.served is not None and shared.served() == [budget] and budget.served is None


def test_a_shared_calls_audience_is_whoever_waits_on_it() -> None:
    """Each caller counts while it waits on the call of its key, and no longer once it left;
    a key nobody waits on is forgotten."""
    audiences = Audiences()
    served = audiences.of("k")
    first = RequestBudget.start("interactive", BUDGETS, lambda: 100.0, 100.0, 0.6)
    second = RequestBudget.start("interactive", BUDGETS, lambda: 100.0, 100.0)
    with audiences.waiting("k", first):
        assert served() == [first] and audiences.of("other")() == ()
        with audiences.waiting("k", second):
            assert served() == [first, second]
        assert served() == [first]
    assert served() == () and audiences._waiting == {}


async def test_a_result_in_time_is_returned() -> None:
    """Nothing changes for a call that ends before the deadline."""
    assert await within(asyncio.sleep(0, "done"), Deadline.after(30.0)) == "done"


async def test_the_caller_leaves_at_its_deadline_naming_it() -> None:
    """A call still running at the deadline: `DeadlineExceeded` naming the deadline's stage."""
    never = asyncio.get_running_loop().create_future()
    with pytest.raises(DeadlineExceeded) as raised:
        await within(never, Deadline(time.monotonic() + 0.01, "ttft"))
    assert raised.value.stage == "ttft"


async def test_a_timeout_of_the_call_itself_is_not_the_deadlines() -> None:
    """A `TimeoutError` the awaited call raises on its own passes through unchanged."""

    async def times_out() -> None:
        raise TimeoutError("socket")

    with pytest.raises(TimeoutError, match="socket"):
        await within(times_out(), Deadline.after(30.0))


def _call(call_id: str | None, arguments: str, name: str | None = "f") -> dict[str, Any]:
    call: dict[str, Any] = {"index": 0, "function": {"arguments": arguments}}
    if call_id is not None:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return call


def test_a_joined_answer_is_a_copy_with_new_call_ids() -> None:
    """Each call gets a new id in a copy; the shared answer keeps its own; no calls, no copy."""
    calls = [{"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    shared = Completion([Choice(0, "", "tool_calls", None, calls)], Usage(1, 2))
    mine = own_call_ids(shared)
    new = mine.choices[0].tool_calls
    assert new is not None and new[0]["id"].startswith("call_") and new[0]["id"] != "call_a"
    assert {**new[0], "id": "call_a"} == calls[0] and shared.choices[0].tool_calls == calls
    plain = Completion([Choice(0, "hi", "stop")], Usage(1, 2))
    assert own_call_ids(plain) is plain


class _Source:
    """A started stream of fixed chunks, for `OwnCallIds`."""

    first = None

    def __init__(self, chunks: list[StreamChunk]) -> None:
        self._chunks = chunks

    @property
    def chunks(self) -> AsyncIterator[StreamChunk]:
        async def each() -> AsyncIterator[StreamChunk]:
            for chunk in self._chunks:
                yield chunk

        return each()

    def failed(self, exc: BaseException) -> None: ...

    def finished(self, usage: Usage) -> None: ...

    async def close(self) -> None: ...


async def test_a_joined_stream_names_each_call_anew_in_every_delta() -> None:
    """Two callers on one stream: each sees its own id for a call, the same in each delta that
    names it; fragments without an id and text pass as they are."""
    chunks = [
        StreamChunk([ChoiceDelta(0, "Hi")]),
        StreamChunk([ChoiceDelta(0, tool_calls=[_call("call_a", "")])]),
        StreamChunk([ChoiceDelta(0, tool_calls=[_call(None, "{}")])]),
        StreamChunk([ChoiceDelta(0, tool_calls=[_call("call_a", "", name=None)])]),
        StreamChunk([ChoiceDelta(0, "", "tool_calls")], Usage(1, 2)),
    ]
    seen = []
    for _ in range(2):
        own = OwnCallIds(_Source(chunks))
        assert own.first is None
        got = [chunk async for chunk in own.chunks]
        assert got[0] is chunks[0] and got[2] == chunks[2] and got[4] is chunks[4]
        ids = [c.get("id") for chunk in got for d in chunk.deltas for c in d.tool_calls or ()]
        assert ids[0] == ids[2] != "call_a" and ids[1] is None
        seen.append(ids[0])
    assert seen[0] != seen[1]
    assert chunks[1].deltas[0].tool_calls == [_call("call_a", "")]
