"""gRPC statuses from the stand-in as the gateway's errors, over loopback."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from backends.base import GenerationRequest
from backends.fleet import Fleet
from backends.replica import Replica
from backends.vllm_grpc.client import VllmGrpcBackend
from budgets.deadline import Deadline
from budgets.request_budget import ClassBudgets, RequestBudget
from core.backend_errors import BackendOverloaded
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from standin.vllm.config import SimConfig
from standin.vllm.server import SimServer

# One running slot and no waiting room: a second request is refused RESOURCE_EXHAUSTED.
FULL = SimConfig(port=0, max_concurrency=1, max_waiting=0, itl_ms=60_000.0)


def _request(request_id: str, *, stream: bool = False) -> GenerationRequest:
    body = {"model": "sim", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    raw = orjson.dumps(body)
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, request_id)


@contextlib.asynccontextmanager
async def _replica(config: SimConfig, tmp_path: Path) -> AsyncIterator[tuple[SimServer, Replica]]:
    server = SimServer(config)
    await server.start()
    client = VllmGrpcBackend(
        f"grpc://{server.address}",
        model="sim",
        channels=1,
        tokenizer_dir=None,
        tokenizer_cache_dir=tmp_path / str(server.port),
    )
    await client.start()
    try:
        yield server, Replica("sim", client, healthy=True)
    finally:
        await client.aclose()
        await server.stop(grace=0)


@contextlib.asynccontextmanager
async def _occupied(backend: VllmGrpcBackend) -> AsyncIterator[None]:
    """The engine's one slot held by a stream that has started (its next token is a minute
    away) until the block ends."""
    stream = backend.stream(_request("holder", stream=True), Deadline.after(60))
    await anext(stream)
    try:
        yield
    finally:
        await stream.aclose()


async def test_a_full_engine_is_overloaded_with_retry_after(tmp_path: Path) -> None:
    """RESOURCE_EXHAUSTED (the engine's queue is full) is a 429 `overloaded` with Retry-After,
    not a 502 backend error, for whole answers and streams alike."""
    async with _replica(FULL, tmp_path) as (_, replica):
        backend = replica.backend
        assert isinstance(backend, VllmGrpcBackend)
        async with _occupied(backend):
            with pytest.raises(BackendOverloaded) as info:
                await backend.complete(_request("r-1"), Deadline.after(30))
            with pytest.raises(BackendOverloaded):
                await anext(backend.stream(_request("r-2", stream=True), Deadline.after(30)))
    exc = info.value
    assert (exc.status, exc.code) == (429, "overloaded")
    assert int(exc.headers()["retry-after"]) >= 1 and exc.retryable


async def test_an_overloaded_replica_is_retried_on_another_and_not_held_against_it(
    tmp_path: Path,
) -> None:
    """A replica refusing for lack of room hands the request to another replica before the
    first byte, and its refusals never count towards its ejection."""
    budgets = ClassBudgets(total_s=60.0, ttft_s=60.0, admission_s=60.0, stall_s=60.0)
    async with (
        _replica(FULL, tmp_path) as (full_sim, full),
        _replica(SimConfig(port=0), tmp_path) as (free_sim, free),
    ):
        fleet = Fleet([full, free], retry_attempts=1, health_interval_s=60, health_timeout_s=1)
        assert isinstance(full.backend, VllmGrpcBackend)
        async with _occupied(full.backend):
            for i in range(8):
                budget = RequestBudget.start(
                    "interactive", budgets, time.monotonic, time.monotonic()
                )
                answer = await fleet.complete(_request(f"r-{i}"), budget)
                assert answer.choices[0].text
        assert full_sim.state.counters.rejected >= 1
        assert full.failures == 0 and full.routable(time.monotonic())
        assert free_sim.state.counters.rejected == 0
