"""Replica choice over real processes: identical stand-ins share the work, a slow one gets less."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import grpc

from bench.harness.processes import ProcessGroup
from standin.vllm.control import ControlClient
from tests.e2e.stack import start_gateway, start_sim

REQUESTS = 60
CONCURRENCY = 4
FAST = ("--ttft-ms", "20", "--itl-ms", "5")
SLOW = ("--ttft-ms", "200", "--itl-ms", "40")


async def _calls(ports: list[int]) -> list[int]:
    """How many Generate calls each stand-in has served."""
    calls = []
    for port in ports:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            calls.append((await ControlClient(channel).stats())["generate_calls"])
    return calls


async def test_identical_replicas_share_and_a_slow_one_gets_less(tmp_path: Path) -> None:
    """Two identical stand-ins each serve a fair share of concurrent requests; a stand-in
    many times slower serves fewer than either (no timing is asserted, only the counts)."""
    with ProcessGroup(tmp_path) as group:
        ports = [start_sim(group, *args)[1] for args in (FAST, FAST, SLOW)]
        backends = "sim=" + ",".join(f"grpc://127.0.0.1:{port}" for port in ports)
        env = {
            "GATEWAY_SLOW_START_S": "0",
            "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp_path / "tokenizers"),
        }
        _, port = start_gateway(group, backends, env)
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(session: aiohttp.ClientSession, i: int) -> None:
            body = {
                "model": "sim",
                "messages": [{"role": "user", "content": f"question {i}"}],
                "max_tokens": 8,
                "stream": i % 2 == 0,
            }
            async with gate, session.post(url, json=body) as response:
                assert response.status == 200, await response.text()
                await response.read()

        async with aiohttp.ClientSession() as session:
            await asyncio.gather(*(one(session, i) for i in range(REQUESTS)))
        first, second, slow = await _calls(ports)
    assert first + second + slow == REQUESTS
    assert min(first, second) >= 0.3 * REQUESTS, (first, second, slow)
    assert slow < min(first, second), (first, second, slow)
