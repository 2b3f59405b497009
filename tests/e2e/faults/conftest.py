"""The fault stack: a gateway whose two stand-ins, OpenAI mock and Redis each sit behind a
fault proxy, started once for the package."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from bench.harness.processes import ProcessGroup
from bench.harness.redis_stack import redis_stack
from standin.vllm.control import ControlClient
from tests.e2e.faults.harness import (
    MOCK_ITL_MS,
    MOCK_TOKENS,
    STALL_MS,
    TABLE,
    FaultStack,
    recovery_s,
)
from tests.e2e.stack import control_clients, start_gateway, start_mock, start_sim
from tests.support.fault_proxy import FaultProxy


@pytest.fixture(scope="package")
def fault_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    log_dir = tmp_path_factory.mktemp("faults")
    with redis_stack() as redis_server, ProcessGroup(log_dir) as group:
        if redis_server.port == 0:
            pytest.skip("REDIS_URL names an external Redis; the proxy needs a local port")
        started = [start_sim(group) for _ in range(2)]
        sims = [port for _, port in started]
        # streaming slowly enough to be cut mid-stream
        itl, tokens = str(MOCK_ITL_MS), str(MOCK_TOKENS)
        mock_port = start_mock(group, "--itl-ms", itl, "--output-tokens", tokens)
        redis = FaultProxy(redis_server.port)
        replicas = [FaultProxy(port) for port in sims]
        http = FaultProxy(mock_port)
        with redis.in_thread(), replicas[0].in_thread(), replicas[1].in_thread(), http.in_thread():
            backends = "sim=" + ",".join(f"grpc://127.0.0.1:{p.port}" for p in replicas)
            backends += f";mock=http://127.0.0.1:{http.port}/v1"
            env = {
                "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"),
                "GATEWAY_REDIS_URL": f"redis://127.0.0.1:{redis.port}/0",
                "GATEWAY_REDIS_TIMEOUT_MS": "50",
                "GATEWAY_BUDGET_EXACT_CACHE_MS": "50",
                "GATEWAY_REDIS_BREAKER_FAILURES": "3",
                "GATEWAY_REDIS_BREAKER_COOLDOWN_MS": "300",
                "GATEWAY_CACHE_NEAR_ENTRIES": "0",
                "GATEWAY_HEALTH_TIMEOUT_S": "0.5",
                "GATEWAY_SLOW_START_S": "0",
                "GATEWAY_BUDGET_STALL_MS": str(STALL_MS),
            }
            gateway, port = start_gateway(group, backends, env)
            yield FaultStack(
                f"http://127.0.0.1:{port}",
                replicas,
                redis,
                sims,
                http,
                group,
                [process for process, _ in started],
                gateway.pid,
            )
    target = os.environ.get("FAULT_TABLE_PATH")
    if target:  # the README's table: FAULT_TABLE_PATH=path pytest tests/e2e/faults
        header = [
            "| scenario | requests | outcomes by status | p99 during the fault | recovery |",
            "|---|---|---|---|---|",
        ]
        Path(target).write_text("\n".join(header + [row.markdown() for row in TABLE]) + "\n")


@pytest.fixture
async def stack(fault_stack: FaultStack) -> AsyncIterator[FaultStack]:
    """The shared stack, healthy before the test; faults are cleared and service recovered after."""
    yield fault_stack
    for proxy in (*fault_stack.replicas, fault_stack.redis, fault_stack.http):
        proxy.clear()
    async with aiohttp.ClientSession() as session:
        await recovery_s(session, fault_stack.url)
        await recovery_s(session, fault_stack.url, model="mock")


@pytest.fixture
async def sims(fault_stack: FaultStack) -> AsyncIterator[list[ControlClient]]:
    """Control clients reaching each stand-in directly (not through its proxy), reset after."""
    async with control_clients(fault_stack.sim_ports) as clients:
        yield clients
