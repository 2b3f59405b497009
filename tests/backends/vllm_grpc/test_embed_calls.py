"""A replica's Embed calls with a scripted stub: how many run at once, in what order the
answers come back, and what the first failure does to the others."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from backends.vllm_grpc.embed_calls import EmbedCalls
from budgets.deadline import Deadline
from core.backend_errors import BackendError, BackendRejected
from core.errors import DeadlineExceeded


class ScriptedStub:
    """`Embed` answers its message after yielding to the loop once; `fail` names messages
    that fail with that status, `hold` keeps the others waiting until released."""

    def __init__(self, fail: dict[int, grpc.StatusCode] | None = None, hold: bool = False) -> None:
        self.fail = fail or {}
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        self.running = 0
        self.peak = 0
        self.started = 0
        self.cancelled = 0
        self.all_held = asyncio.Event()

    def Embed(self, message: int, *, timeout: float, metadata: Any) -> Any:
        return self._embed(message)

    async def _embed(self, message: int) -> int:
        self.started += 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await asyncio.sleep(0)  # let the other calls start: none waits for this one
            if message in self.fail:
                await self.all_held.wait()
                raise _rpc_error(self.fail[message])
            if not self.release.is_set():
                self.all_held.set()
                await self.release.wait()
            return message * 10
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1


def _rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    empty = grpc.aio.Metadata()
    return grpc.aio.AioRpcError(code, empty, empty, f"scripted {code.name}", None)


def _calls(stub: ScriptedStub, per_request: int = 4, per_replica: int = 100) -> EmbedCalls:
    return EmbedCalls(
        "grpc://replica:1", lambda: stub, per_request=per_request, per_replica=per_replica
    )


def _param(position: int) -> str:
    return f"input[{position}]"


async def test_answers_come_back_in_order_with_few_calls_at_once() -> None:
    """Every message is answered in its own place; no more than `per_request` run at once."""
    stub = ScriptedStub()
    answers = await _calls(stub).send(list(range(50)), Deadline.after(30), (), _param)
    assert answers == [i * 10 for i in range(50)]
    assert stub.peak == 4 and stub.started == 50


async def test_requests_on_one_replica_share_its_calls() -> None:
    """Several requests together never run more than `per_replica` calls on the replica."""
    stub = ScriptedStub()
    calls = _calls(stub, per_request=4, per_replica=6)
    batches = [list(range(20)), list(range(20, 40)), list(range(40, 60))]
    answers = await asyncio.gather(
        *(calls.send(batch, Deadline.after(30), (), _param) for batch in batches)
    )
    assert answers == [[i * 10 for i in batch] for batch in batches]
    assert stub.peak == 6


async def test_the_first_failure_cancels_the_calls_still_running() -> None:
    """A call that fails ends the request with its error at once: the calls in flight are
    cancelled (the engine hears it) and no further input is sent."""
    stub = ScriptedStub(fail={2: grpc.StatusCode.INTERNAL}, hold=True)
    with pytest.raises(BackendError, match="INTERNAL") as info:
        await _calls(stub).send(list(range(50)), Deadline.after(30), (), _param)
    assert info.value.replica == "grpc://replica:1"
    assert stub.started == 4 and stub.cancelled == 3 and stub.running == 0


async def test_a_rejected_input_is_named() -> None:
    """The input the engine refused as invalid is the 400's parameter."""
    stub = ScriptedStub(fail={2: grpc.StatusCode.INVALID_ARGUMENT}, hold=True)
    with pytest.raises(BackendRejected) as info:
        await _calls(stub).send(list(range(5)), Deadline.after(30), (), _param)
    assert info.value.param == "input[2]" and stub.cancelled == 3


async def test_waiting_for_the_replica_is_bounded_by_the_deadline() -> None:
    """A request that cannot get one of the replica's slots in time fails at its deadline."""
    stub = ScriptedStub(hold=True)
    calls = _calls(stub, per_request=2, per_replica=2)
    first = asyncio.ensure_future(calls.send([1, 2], Deadline.after(30), (), _param))
    await stub.all_held.wait()
    with pytest.raises(DeadlineExceeded) as info:
        await calls.send([3], Deadline.after(0.05, "total"), (), _param)
    assert info.value.stage == "total" and stub.started == 2
    stub.release.set()
    assert await first == [10, 20]
