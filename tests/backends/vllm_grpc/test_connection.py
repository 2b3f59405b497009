"""The gRPC connection's generation probe against the stand-in over loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends.base import GenerationProbe
from backends.vllm_grpc.client import VllmGrpcBackend
from standin.vllm.config import SimConfig
from standin.vllm.health import NOT_SERVING, HealthServicer
from standin.vllm.server import SimServer
from tests.standin.vllm.helpers import wait_until


@pytest.fixture
async def sim() -> AsyncIterator[SimServer]:
    server = SimServer(SimConfig(port=0))
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


async def test_an_engine_that_generates_answers_the_probe(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """The probe is one Generate the engine answers, with one token at most."""
    assert isinstance(backend, GenerationProbe)
    assert await backend.probe_generation("chat", 10.0)
    stats = sim.state.stats()
    assert (stats["generate_calls"], stats["completed"]) == (1, 1)
    assert stats["completion_tokens"] <= 1


async def test_an_engine_that_hangs_fails_the_probe_though_its_health_passes(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """A hung engine's server still passes its health check; the probe gets no answer
    within its timeout, and the engine is told to abort it."""
    sim.configure(hang_rate=1.0)
    assert (await backend.health(5.0)).healthy
    assert not await backend.probe_generation("completion", 0.3)
    await wait_until(lambda: any(rid.startswith("probe-") for rid in sim.state.aborted_request_ids))


async def test_an_engine_that_answers_an_error_is_not_hung(
    sim: SimServer, backend: VllmGrpcBackend
) -> None:
    """An error status is an answer: a broken engine is the outlier count's, not a hang."""
    sim.configure(error_rate=1.0)
    assert await backend.probe_generation("chat", 5.0)


async def test_a_health_check_without_answer_is_missed_and_not_serving_is_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A health check unanswered by its deadline is a missed probe (only several in a row
    eject a healthy replica); NOT_SERVING is an answer, not a miss."""
    never = asyncio.Event()

    async def silent(self: HealthServicer, request: Any, context: Any) -> Any:
        await never.wait()

    for check, missed in ((silent, True), (None, False)):
        if check is not None:
            monkeypatch.setattr(HealthServicer, "check", check)
        else:
            monkeypatch.undo()
            monkeypatch.setattr(HealthServicer, "status", lambda self, service: NOT_SERVING)
        server = SimServer(SimConfig(port=0))
        await server.start()
        client = VllmGrpcBackend(
            f"grpc://{server.address}", model="sim", channels=1, tokenizer_dir=None,
            tokenizer_cache_dir=tmp_path,
        )  # fmt: skip
        try:
            await client.start()
            health = await client.health(0.2)
            assert not health.healthy and health.missed is missed, health.detail
        finally:
            never.set()
            await client.aclose()
            await server.stop(grace=0)
