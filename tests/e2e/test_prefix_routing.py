"""Prefix-aware routing end to end: a conversation stays on the replica holding its prefix."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import grpc

from standin.vllm.control import ControlClient
from tests.e2e.stack import Stack, running_stack
from tests.obs.test_metrics import parse

SYSTEM = " ".join(f"rule {i} of the house is to answer briefly" for i in range(40))
WAIT_S = 60.0
READY = "gateway_replica_prefix_ready"


async def _prefix_index_ready(session: aiohttp.ClientSession, stack: Stack) -> None:
    """Until the gateway follows every replica's KV events (its sampler reports each second)."""
    wanted = {f"grpc://127.0.0.1:{port}" for port in stack.sim_ports}
    async with asyncio.timeout(WAIT_S):
        while True:
            async with session.get(f"{stack.base_url}/metrics") as response:
                samples = parse(await response.read())
            ready = {
                dict(labels)["replica"]
                for (name, labels), v in samples.items()
                if name == READY and v == 1
            }
            if wanted <= ready:
                return
            await asyncio.sleep(0.1)


async def test_a_conversation_follows_its_cached_prefix(tmp_path: Path) -> None:
    """Turns sharing a long prefix land on one replica and reuse its cache, each sent as soon
    as the last answer arrived (before the replica's KV events may have reached the gateway)."""
    env = {"GATEWAY_PREFIX_ROUTING_WEIGHT": "4"}
    # Events a second late: every turn is routed before the last one's blocks are reported.
    late = ("--kv-events-delay-ms", "1000")
    with running_stack(tmp_path, sims=3, sim_args=late, mock=False, env=env) as stack:
        cached: list[int] = []
        history = [{"role": "system", "content": SYSTEM}]
        async with aiohttp.ClientSession() as session:
            await _prefix_index_ready(session, stack)
            for turn in range(5):
                history.append({"role": "user", "content": f"question number {turn}"})
                payload = {"model": "sim", "messages": history, "max_tokens": 4}
                async with session.post(
                    f"{stack.api_url}/chat/completions", json=payload
                ) as response:
                    assert response.status == 200, await response.text()
                    body = await response.json()
                history.append(body["choices"][0]["message"])
                cached.append(body["usage"]["prompt_tokens_details"]["cached_tokens"])
        calls = []
        for port in stack.sim_ports:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                calls.append((await ControlClient(channel).stats())["generate_calls"])
        assert sorted(calls) == [0, 0, 5]
        assert cached[0] == 0 and all(c > 0 for c in cached[1:])
