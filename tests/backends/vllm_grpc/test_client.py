"""The gRPC client against the stand-in over loopback: deadlines and aborts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from backends.base import GenerationRequest
from backends.vllm_grpc.client import VllmGrpcBackend
from budgets.deadline import Deadline
from core.errors import DeadlineExceeded
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from standin.vllm.config import SimConfig
from standin.vllm.server import SimServer
from tests.standin.vllm.helpers import wait_until


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    server = SimServer(SimConfig(port=0, ttft_ms=60_000))
    await server.start()
    yield server
    await server.stop(grace=0)


@pytest.fixture
async def backend(sim: SimServer, tmp_path: Path) -> AsyncIterator[VllmGrpcBackend]:
    client = VllmGrpcBackend(
        f"grpc://{sim.address}",
        model="sim",
        channels=1,
        tokenizer_dir=None,
        tokenizer_cache_dir=tmp_path,
    )
    await client.start()
    yield client
    await client.aclose()


def _request(request_id: str, *, stream: bool = False) -> GenerationRequest:
    raw = orjson.dumps(
        {"model": "sim", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    )
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, request_id)


async def test_answer_past_its_deadline_is_aborted(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """A whole answer whose gRPC deadline fires is a 504 naming it, and the engine gets
    Abort, as when a client leaves."""
    with pytest.raises(DeadlineExceeded) as info:
        await backend.complete(_request("late-1"), Deadline.after(0.2))
    assert info.value.stage == "total"
    await wait_until(lambda: "late-1" in sim.state.aborted_request_ids)


async def test_stream_past_its_deadline_is_aborted(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """The same for a stream whose gRPC deadline fires before any chunk."""
    with pytest.raises(DeadlineExceeded):
        async for _chunk in backend.stream(_request("late-2", stream=True), Deadline.after(0.2)):
            pass
    await wait_until(lambda: "late-2" in sim.state.aborted_request_ids)
