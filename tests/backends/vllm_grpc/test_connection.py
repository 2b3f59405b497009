"""The gRPC connection against the stand-in over loopback: its generation probe, its health
probe, and what it learns again of a server restarted on the same address (staying served
meanwhile)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from backends.base import GenerationProbe, GenerationRequest
from backends.served import Served
from backends.vllm_grpc import connection
from backends.vllm_grpc.client import VllmGrpcBackend
from backends.vllm_grpc.served_model import ServedModel, learn
from budgets.deadline import Deadline
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
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


def _client(address: str, cache: Path) -> VllmGrpcBackend:
    return VllmGrpcBackend(
        f"grpc://{address}", model="sim", channels=1, tokenizer_dir=None, tokenizer_cache_dir=cache
    )


def _chat(request_id: str) -> GenerationRequest:
    raw = orjson.dumps({"model": "sim", "messages": [{"role": "user", "content": "hi"}]})
    return GenerationRequest("chat", parse_request(raw, ChatCompletionRequest), raw, request_id)


async def _healthy_again(client: VllmGrpcBackend) -> None:
    """Probe until the server answers: the channel reconnects after its backoff, which no
    event tells of (the health poller does the same)."""
    async with asyncio.timeout(30):
        while not (await client.health(2.0)).healthy:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_a_server_back_on_its_address_with_another_model_is_learned_anew(
    tmp_path: Path,
) -> None:
    """A server lost and back on the same address serves another model (name, context,
    tokenizer, Harmony's template): a probe learns all of it before the replica is healthy
    again, and answers are read in the new model's format."""
    first = SimServer(SimConfig(port=0))
    await first.start()
    client = _client(first.address, tmp_path)
    second: SimServer | None = None
    try:
        await client.start()
        before = client.served()
        assert before is not None and (before.name, before.context) == ("sim", 4096)
        assert (await client.complete(_chat("r0"), Deadline.after(30))).choices[0].reasoning is None
        await first.stop(grace=0)
        assert not (await client.health(2.0)).healthy
        assert client.served() is None
        config = SimConfig(port=first.port, model="other", max_context_length=1024, harmony=True)
        second = SimServer(config)
        await second.start()
        await _healthy_again(client)
        after = client.served()
        assert after is not None and (after.name, after.context) == ("other", 1024)
        assert after.tokenizer != before.tokenizer
        answer = await client.complete(_chat("r1"), Deadline.after(30))
        choice = answer.choices[0]
        assert choice.reasoning and "<|channel|>" not in choice.text, choice
    finally:
        await client.aclose()
        await first.stop(grace=0)
        if second is not None:
            await second.stop(grace=0)


async def test_a_restart_no_probe_saw_is_told_by_the_servers_uptime(
    sim: SimServer, tmp_path: Path
) -> None:
    """A server that restarted between two probes (a later start than before, from the uptime
    it reports) is asked again what it serves; one that did not is not."""
    sim.state.started_wall -= 300  # up for five minutes
    client = _client(sim.address, tmp_path)
    try:
        await client.start()
        sim.configure(model="other", max_context_length=1024)
        assert (await client.health(5.0)).healthy
        assert client.served() == Served("sim", _tokenizer(client), 4096)
        sim.state.started_wall = time.time()  # restarted with the new configuration
        assert (await client.health(5.0)).healthy
        assert client.served() == Served("other", _tokenizer(client), 1024)
    finally:
        await client.aclose()


def _tokenizer(client: VllmGrpcBackend) -> str:
    served = client.served()
    assert served is not None
    return served.tokenizer


async def test_a_restarted_server_stays_served_while_it_is_learned_again(
    sim: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a probe learns a restarted server anew, requests are still prepared (with what
    it served) and answered; what it serves now is swapped in once learned."""
    sim.state.started_wall -= 300
    client = _client(sim.address, tmp_path)
    learning, go = asyncio.Event(), asyncio.Event()

    async def gated(*args: Any, **kwargs: Any) -> ServedModel:
        learning.set()
        await go.wait()
        return await learn(*args, **kwargs)

    try:
        await client.start()
        monkeypatch.setattr(connection, "learn", gated)
        sim.configure(model="other", max_context_length=1024)
        sim.state.started_wall = time.time()
        probe = asyncio.create_task(client.health(5.0))
        await learning.wait()
        assert client.served() == Served("sim", _tokenizer(client), 4096)
        answer = await client.complete(_chat("r0"), Deadline.after(30))
        assert answer.choices[0].finish_reason
        go.set()
        assert (await probe).healthy
        assert client.served() == Served("other", _tokenizer(client), 1024)
    finally:
        go.set()
        await client.aclose()


async def test_a_restarted_server_that_cannot_be_learned_again_is_forgotten(
    sim: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart whose model cannot be learned leaves nothing to prepare with: the probe
    fails, and the next one learns it from the start."""
    sim.state.started_wall -= 300
    client = _client(sim.address, tmp_path)

    async def failing(*args: Any, **kwargs: Any) -> ServedModel:
        raise OSError("tokenizer archive unreadable")

    try:
        await client.start()
        monkeypatch.setattr(connection, "learn", failing)
        sim.state.started_wall = time.time()
        assert not (await client.health(5.0)).healthy
        assert client.served() is None
        monkeypatch.undo()
        assert (await client.health(5.0)).healthy
        assert client.served() is not None
    finally:
        await client.aclose()
