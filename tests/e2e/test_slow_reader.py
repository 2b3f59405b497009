"""A streaming client that stops reading: its write is bounded by the total budget, so its
admission slot and backend call end while it still holds the connection open."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import aiohttp
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.processes import ProcessGroup
from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, control_clients, start_gateway, start_mock, start_sim

ENV = {
    "GATEWAY_CACHE": "off",
    "GATEWAY_COALESCE": "false",
    "GATEWAY_BUDGET_TOTAL_MS": "4000",
    "GATEWAY_BUDGET_TTFT_MS": "3000",
    "GATEWAY_BUDGET_STALL_MS": "3000",
    "GATEWAY_BUDGET_ADMISSION_MS": "1000",
    "GATEWAY_ADMISSION_MAX_INFLIGHT": "1",
    "GATEWAY_ADMISSION_PREDICT": "false",
}
# Far more tokens than the total lets through: the stream outlives its budget.
MOCK_ARGS = ("--itl-ms", "0", "--output-tokens", "200000")
SIM_ARGS = (*MOCK_ARGS, "--max-context-length", "300000")
RELEASED_WITHIN_S = 40.0  # generous: the budget is 4 s, the box may be loaded


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    log_dir = tmp_path_factory.mktemp("slow_reader")
    with ProcessGroup(log_dir) as group:
        sim, sim_port = start_sim(group, *SIM_ARGS)
        mock_port = start_mock(group, *MOCK_ARGS)
        backends = f"sim=grpc://127.0.0.1:{sim_port};mock=http://127.0.0.1:{mock_port}/v1"
        env = {"GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"), **ENV}
        gateway, port = start_gateway(group, backends, env)
        yield Stack(group, gateway, port, [sim], [sim_port], mock_port)


def _stuck_reader(port: int, model: str) -> socket.socket:
    """A raw client with a 1 KiB receive buffer that asks for a long stream and never reads."""
    body = orjson.dumps(
        {
            "model": model,
            "messages": [{"role": "user", "content": "tell me a long story"}],
            "stream": True,
            "max_tokens": 200000,
        }
    )
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.connect(("127.0.0.1", port))
    sock.sendall(head + body)
    return sock


async def _inflight(session: aiohttp.ClientSession, stack: Stack, replica: str) -> float:
    async with session.get(f"{stack.base_url}/metrics") as response:
        text = await response.text()
    for family in text_string_to_metric_families(text):
        if family.name == "gateway_replica_inflight_requests":
            for sample in family.samples:
                if replica in sample.labels.get("replica", ""):
                    return sample.value
    return 0.0


async def _ask(session: aiohttp.ClientSession, stack: Stack, model: str) -> int:
    payload = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    async with session.post(f"{stack.api_url}/chat/completions", json=payload) as response:
        await response.read()
        return response.status


@pytest.mark.parametrize("model", ["sim", "mock"])
async def test_a_reader_that_stops_frees_its_slot_by_the_total(stack: Stack, model: str) -> None:
    """A stream whose client stops reading ends at its total budget: the slot is released and
    the backend call ended though the client keeps the connection open, and the next request
    is admitted."""
    replica = f"{stack.sim_ports[0]}" if model == "sim" else f"{stack.mock_port}"
    sock = _stuck_reader(stack.gateway_port, model)
    try:
        async with aiohttp.ClientSession() as session, control_clients(stack.sim_ports) as sims:
            async with asyncio.timeout(RELEASED_WITHIN_S):
                while await _inflight(session, stack, replica) < 1:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
                while await _inflight(session, stack, replica) > 0:  # noqa: ASYNC110
                    await asyncio.sleep(0.1)
                if model == "sim":
                    await _backend_call_ended(sims)
            assert await _ask(session, stack, model) == 200
    finally:
        sock.close()


async def _backend_call_ended(sims: list[ControlClient]) -> None:
    while (await sims[0].stats())["live_request_ids"]:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
