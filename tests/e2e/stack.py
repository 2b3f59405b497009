"""Real processes for end-to-end tests: vLLM stand-ins, the OpenAI mock, and the gateway."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import redis

from bench.harness.probes import free_port, http_ok, tcp_open
from bench.harness.processes import ManagedProcess, ProcessGroup, ProcessSpec, python_module
from bench.harness.redis_stack import redis_stack
from standin.vllm.control import ControlClient

READY_TIMEOUT_S = 90.0


@dataclass
class Stack:
    """Addresses of a running gateway and the servers behind it."""

    group: ProcessGroup
    gateway: ManagedProcess
    gateway_port: int
    sims: list[ManagedProcess]
    sim_ports: list[int]
    mock_port: int | None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/v1"


def start_sim(group: ProcessGroup, *args: str) -> tuple[ManagedProcess, int]:
    port = free_port()
    process = group.start(
        ProcessSpec(f"sim-{port}", python_module("standin.vllm", "--port", str(port), *args))
    )
    process.wait_ready(lambda: tcp_open(port), READY_TIMEOUT_S, "gRPC port open")
    return process, port


def start_mock(group: ProcessGroup, *args: str, name: str = "mock-openai") -> int:
    port = free_port()
    process = group.start(
        ProcessSpec(name, python_module("standin.openai", "--port", str(port), *args))
    )
    process.wait_ready(lambda: http_ok(port, "/health"), READY_TIMEOUT_S, "/health")
    return port


def start_gateway(
    group: ProcessGroup, backends: str, env: Mapping[str, str], ready_path: str | None = "/readyz"
) -> tuple[ManagedProcess, int]:
    """A gateway on a free port, once `ready_path` answers (at once when it is None)."""
    port = free_port()
    process = group.start(
        ProcessSpec(
            "gateway",
            python_module("gateway.cli", "serve"),
            env={
                "GATEWAY_PORT": str(port),
                "GATEWAY_BACKENDS": backends,
                "GATEWAY_LOG_LEVEL": "warning",
                "GATEWAY_HEALTH_INTERVAL_S": "0.2",
                **env,
            },
        )
    )
    if ready_path is not None:
        path = ready_path
        process.wait_ready(lambda: http_ok(port, path), READY_TIMEOUT_S, path)
    return process, port


@contextlib.contextmanager
def semantic_gateway(log_dir: Path, env: Mapping[str, str] | None = None) -> Iterator[int]:
    """A gateway with the semantic cache on over Redis Stack and one stand-in serving `sim`
    (deadlines generous enough for a loaded CI machine); yields its port. Its Redis is
    known to `semantic_entries` meanwhile."""
    with redis_stack() as server, ProcessGroup(log_dir) as group:
        _, sim_port = start_sim(group)
        _, port = start_gateway(
            group,
            f"sim=grpc://127.0.0.1:{sim_port}",
            {
                "GATEWAY_REDIS_URL": server.url,
                "GATEWAY_SEMANTIC_CACHE": "on",
                "GATEWAY_SEMANTIC_TIMEOUT_MS": "5000",
                "GATEWAY_REDIS_TIMEOUT_MS": "2000",
                # The stages' own budgets too (250 and 50 ms by default): a long template's
                # lookup took 50-90 ms here, and overran 250 on a loaded box (an `error`).
                "GATEWAY_BUDGET_SEMANTIC_CACHE_MS": "5000",
                "GATEWAY_BUDGET_EXACT_CACHE_MS": "2000",
                **(env or {}),
            },
        )
        _SEMANTIC_REDIS[port] = server.url
        try:
            yield port
        finally:
            del _SEMANTIC_REDIS[port]


# The Redis behind each running semantic gateway, by the gateway's port.
_SEMANTIC_REDIS: dict[int, str] = {}


def semantic_entries(url: str) -> int:
    """How many semantic cache entries (every tenant's) the Redis behind the semantic gateway
    at `url` holds: the vector entry is written by another write-back worker than the exact
    one, so an exact hit does not mean it has landed."""
    port = urlsplit(url).port
    assert port is not None
    with redis.Redis.from_url(_SEMANTIC_REDIS[port]) as client:
        return sum(1 for _ in client.scan_iter(match="gw:sem:*", count=1000))


@contextlib.asynccontextmanager
async def control_clients(ports: Sequence[int]) -> AsyncIterator[list[ControlClient]]:
    """Control clients reaching each stand-in directly; faults and counters reset before and
    after."""
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for port in ports]
    clients = [ControlClient(channel) for channel in channels]
    for client in clients:
        await client.reset()
    try:
        yield clients
    finally:
        for client in clients:
            await client.reset()
        for channel in channels:
            await channel.close(grace=None)


@contextlib.contextmanager
def running_stack(
    log_dir: Path,
    *,
    sims: int = 2,
    sim_args: Sequence[str] = (),
    mock: bool = True,
    env: Mapping[str, str] | None = None,
) -> Iterator[Stack]:
    """Stand-ins serving model `sim`, the mock serving model `mock`, and the gateway."""
    with ProcessGroup(log_dir) as group:
        started = [start_sim(group, *sim_args) for _ in range(sims)]
        backends = "sim=" + ",".join(f"grpc://127.0.0.1:{port}" for _, port in started)
        mock_port = start_mock(group) if mock else None
        if mock_port is not None:
            backends += f";mock=http://127.0.0.1:{mock_port}/v1"
        gateway_env = {"GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"), **(env or {})}
        gateway, port = start_gateway(group, backends, gateway_env)
        yield Stack(
            group, gateway, port, [p for p, _ in started], [port for _, port in started], mock_port
        )
