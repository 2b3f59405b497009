"""What the soak runs against: Redis Stack and two vLLM stand-ins, each reached by the gateway
through a fault proxy, and a gateway with several uvicorn workers and both caches on.

The proxies (tests/support/fault_proxy.py) run on a thread of this process, so that the
blocking readiness polls here do not stall them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench.harness.probes import HOST, free_port, http_ok, tcp_open
from bench.harness.processes import ManagedProcess, ProcessGroup, ProcessSpec, python_module
from bench.harness.redis_stack import ping, server_command
from bench.scenarios.soak.config import SoakConfig
from bench.scenarios.soak.faults import FaultKind
from bench.servers.start import SIM_MODEL
from standin.vllm.control import ControlClient
from tests.support.fault_proxy import FaultProxy

REPLICAS = 2
SIM_FLAGS = ("--ttft-ms", "5", "--itl-ms", "2")


@dataclass
class SoakStack:
    """A running gateway and the proxies in front of its upstreams."""

    url: str
    gateway: ManagedProcess
    replicas: list[FaultProxy]
    redis: FaultProxy
    sim_ports: list[int]
    env: dict[str, str]

    @property
    def port(self) -> int:
        return int(self.env["GATEWAY_PORT"])

    @property
    def peers(self) -> dict[int, str]:
        """The gateway's upstream ports (its proxies), named."""
        named = {p.port: f"replica {i}" for i, p in enumerate(self.replicas)}
        return {**named, self.redis.port: "redis"}


def gateway_env(config: SoakConfig, backends: str, redis_url: str, work: Path) -> dict[str, str]:
    return {
        "GATEWAY_HOST": HOST,
        "GATEWAY_BACKENDS": backends,
        "GATEWAY_WORKERS": str(config.workers),
        "GATEWAY_LOG_LEVEL": "warning",
        "GATEWAY_CACHE": "on",
        "GATEWAY_SEMANTIC_CACHE": "on" if config.semantic else "off",
        "GATEWAY_REDIS_URL": redis_url,
        "GATEWAY_EMBEDDING_THREADS": "1",
        "GATEWAY_HEALTH_INTERVAL_S": "0.5",
        "GATEWAY_HEALTH_TIMEOUT_S": "0.5",
        "GATEWAY_SLOW_START_S": "5",
        "GATEWAY_TOKENIZER_CACHE_DIR": str(work / "tokenizers"),
        "GATEWAY_DRAIN_DELAY_S": "0",  # the run is over: stop at once
        "GATEWAY_SHUTDOWN_GRACE_S": "1",
    }


def _start_redis(group: ProcessGroup, config: SoakConfig) -> int:
    port = free_port()
    argv, env = server_command(port, Path(tempfile.mkdtemp(prefix="redis-", dir=group.log_dir)))
    redis = group.start(ProcessSpec("redis-stack", argv, env=env))
    redis.wait_ready(lambda: ping(port), config.startup_timeout_s, "PING")
    return port


def _start_sim(group: ProcessGroup, config: SoakConfig) -> int:
    port = free_port()
    flags = ("--port", str(port), "--output-tokens", str(config.output_tokens), *SIM_FLAGS)
    sim = group.start(ProcessSpec(f"sim-{port}", python_module("standin.vllm", *flags)))
    sim.wait_ready(functools.partial(tcp_open, port), config.startup_timeout_s, "gRPC port")
    return port


@contextlib.contextmanager
def soak_stack(config: SoakConfig, group: ProcessGroup) -> Iterator[SoakStack]:
    """Start everything (waiting until the gateway is ready); the proxies stop on exit, the
    processes with `group`."""
    redis_port = _start_redis(group, config)
    sim_ports = [_start_sim(group, config) for _ in range(REPLICAS)]
    redis = FaultProxy(redis_port)
    replicas = [FaultProxy(port, seed=i) for i, port in enumerate(sim_ports)]
    with contextlib.ExitStack() as proxies:
        for proxy in (redis, *replicas):
            proxies.enter_context(proxy.in_thread())
        backends = f"{SIM_MODEL}=" + ",".join(f"grpc://{HOST}:{p.port}" for p in replicas)
        env = gateway_env(config, backends, f"redis://{HOST}:{redis.port}/0", group.log_dir)
        port = free_port()
        env["GATEWAY_PORT"] = str(port)
        gateway = group.start(
            ProcessSpec("gateway", python_module("gateway.cli", "serve"), env=env)
        )
        gateway.wait_ready(lambda: http_ok(port, "/readyz"), config.startup_timeout_s, "/readyz")
        yield SoakStack(f"http://{HOST}:{port}", gateway, replicas, redis, sim_ports, env)


class StackFaults:
    """The soak's `Injector`: faults through the proxies and the stand-in's Control service."""

    def __init__(self, stack: SoakStack) -> None:
        self._stack = stack
        self._channels = [grpc.aio.insecure_channel(f"{HOST}:{p}") for p in stack.sim_ports]
        self._control = [ControlClient(channel) for channel in self._channels]

    async def apply(self, kind: FaultKind) -> None:
        s = self._stack
        if kind == "replica-partition":
            await asyncio.to_thread(s.replicas[0].blackhole)
        elif kind == "redis-blackhole":
            await asyncio.to_thread(s.redis.blackhole)
        elif kind == "replica-errors":
            await self._control[1].configure(error_rate=1.0)
        else:
            await asyncio.to_thread(s.replicas[1].reset)

    async def clear(self, kind: FaultKind) -> None:
        s = self._stack
        if kind == "replica-errors":
            await self._control[1].configure(error_rate=0.0)
            return
        for proxy in (*s.replicas, s.redis):
            await asyncio.to_thread(proxy.clear)

    async def aclose(self) -> None:
        for channel in self._channels:
            await channel.close(grace=None)
