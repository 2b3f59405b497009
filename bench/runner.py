"""Runs the phases of a benchmark: each (scenario, mode, concurrency) step measures every path
back to back, so slow drift of a shared machine hits all paths alike. After each mode's sweep,
wrk drives the HTTP-facing servers at the highest concurrency for their peak throughput."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from bench import interrupts, wrk
from bench.closed_loop import LoopBounds
from bench.config import GRPC_PATHS, HTTP_PATHS, MODES, BenchConfig, Mode, Scenario
from bench.cpu import CoreTimes
from bench.processes import ManagedProcess
from bench.specs import GrpcPhase, HttpPhase
from bench.stack import MOCK_MODEL, SIM_MODEL, Stack
from bench.stats import LoadResult

MIN_REQUESTS = 10  # a phase measures at least this many requests (within its overtime)
Tool = Literal["aiohttp", "grpc.aio", "wrk"]


def default_tool(path: str) -> Tool:
    """What drives a path in the per-concurrency sweep."""
    return "grpc.aio" if path == "grpc-floor" else "aiohttp"


@dataclass(frozen=True, slots=True)
class PhaseKey:
    scenario: Scenario
    mode: Mode
    concurrency: int
    path: str
    tool: Tool = "aiohttp"

    @property
    def label(self) -> str:
        suffix = " [wrk]" if self.tool == "wrk" else ""
        return f"{self.scenario} {self.mode} c={self.concurrency} {self.path}{suffix}"


@dataclass(frozen=True, slots=True)
class PhaseRecord:
    """One phase's load result plus the CPU each side used while it ran."""

    key: PhaseKey
    result: LoadResult
    phase_requests: int  # every request the CPU figures cover (warm-up included)
    wall_s: float
    sut_cpu_s: float | None  # the server under test (None: the direct path has none)
    upstream_cpu_s: float
    client_cpu_fraction: float
    core_busy: tuple[float, ...]

    @property
    def sut_cpu_fraction(self) -> float | None:
        return None if self.sut_cpu_s is None else self.sut_cpu_s / self.wall_s

    @property
    def sut_cpu_us_per_request(self) -> float | None:
        if self.sut_cpu_s is None or self.phase_requests == 0:
            return None
        return self.sut_cpu_s / self.phase_requests * 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.key.scenario,
            "mode": self.key.mode,
            "concurrency": self.key.concurrency,
            "path": self.key.path,
            "tool": self.key.tool,
            "result": self.result.to_json(),
            "phase_requests": self.phase_requests,
            "wall_s": self.wall_s,
            "sut_cpu_s": self.sut_cpu_s,
            "upstream_cpu_s": self.upstream_cpu_s,
            "client_cpu_fraction": self.client_cpu_fraction,
            "core_busy": list(self.core_busy),
        }


def phase_keys(config: BenchConfig) -> Iterator[PhaseKey]:
    for scenario in config.scenarios:
        paths = HTTP_PATHS if scenario == "http" else GRPC_PATHS
        for mode in MODES:
            for concurrency in config.concurrency:
                for path in paths:
                    yield PhaseKey(scenario, mode, concurrency, path, default_tool(path))
            if config.wrk is not None:
                for path in paths:
                    if path != "grpc-floor":
                        yield PhaseKey(scenario, mode, max(config.concurrency), path, "wrk")


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a path's load goes and whose CPU to account."""

    url: str
    body: bytes
    sut: ManagedProcess | None
    upstream: ManagedProcess


def _http_target(config: BenchConfig, stack: Stack, key: PhaseKey) -> _Target:
    stream = key.mode == "stream"
    if key.scenario == "http":
        assert stack.mock is not None and stack.floor is not None
        port, sut = {
            "direct": (stack.mock_port, None),
            "floor": (stack.floor_port, stack.floor),
            "gateway": (stack.gateway_port, stack.gateway),
        }[key.path]
        body = config.workload.chat_body(MOCK_MODEL, stream)
        return _Target(stack.url(port, "/v1/chat/completions"), body, sut, stack.mock)
    assert stack.sim is not None
    path, body = config.workload.grpc_gateway_request(
        config.grpc_api, SIM_MODEL, stream, stack.prompt_ids
    )
    return _Target(stack.url(stack.gateway_port, path), body, stack.gateway, stack.sim)


def phase_bounds(config: BenchConfig, concurrency: int) -> LoopBounds:
    """How long a measured phase at `concurrency` runs, and how many requests it needs."""
    return LoopBounds(
        concurrency=concurrency,
        warmup_s=config.warmup_s,
        duration_s=config.duration_s,
        max_requests=config.max_requests,
        min_requests=MIN_REQUESTS,
        overtime_s=2 * config.duration_s + 1.0,
        request_timeout_s=config.request_timeout_s,
    )


class _Meter:
    """CPU of the server under test, the upstream and each core across one measurement."""

    def __init__(self, sut: ManagedProcess | None, upstream: ManagedProcess) -> None:
        self.sut = sut
        self.upstream = upstream
        self._cores = CoreTimes.now()
        self._sut = self.sut.cpu_s() if self.sut is not None else 0.0
        self._upstream = self.upstream.cpu_s()
        self._wall = time.perf_counter()

    def record(self, key: PhaseKey, result: LoadResult, requests: int) -> PhaseRecord:
        wall = time.perf_counter() - self._wall
        sut = self.sut.cpu_s() - self._sut if self.sut is not None else None
        return PhaseRecord(
            key=key,
            result=result,
            phase_requests=requests,
            wall_s=wall,
            sut_cpu_s=sut,
            upstream_cpu_s=self.upstream.cpu_s() - self._upstream,
            client_cpu_fraction=result.client_cpu_s / wall if wall > 0 else math.nan,
            core_busy=CoreTimes.now().busy_fraction_since(self._cores),
        )


def _run_wrk(config: BenchConfig, stack: Stack, key: PhaseKey) -> PhaseRecord:
    assert config.wrk is not None
    target = _http_target(config, stack, key)

    def spec(seconds: float) -> wrk.WrkRun:
        return wrk.WrkRun(
            target.url, target.body, key.concurrency, max(1, round(seconds)),
            config.request_timeout_s,
        )  # fmt: skip

    if config.warmup_s >= 0.5:
        wrk.run(config.wrk, spec(config.warmup_s), config.out_dir, config.client_cpu)
    meter = _Meter(target.sut, target.upstream)
    result = wrk.run(config.wrk, spec(config.duration_s), config.out_dir, config.client_cpu)
    return meter.record(key, result, result.ok + result.errors)


def run_phase(config: BenchConfig, stack: Stack, key: PhaseKey) -> PhaseRecord:
    """Measure one path at one load level; raises HarnessError if a process dies."""
    interrupts.check()
    if key.tool == "wrk":
        record = _run_wrk(config, stack, key)
        stack.check_alive()
        return record
    bounds = phase_bounds(config, key.concurrency)
    if key.path == "grpc-floor":
        assert stack.sim is not None and stack.grpc_floor is not None
        worker = stack.grpc_floor
        spec = GrpcPhase(
            target=f"127.0.0.1:{stack.sim_port}",
            prompt_ids=stack.prompt_ids,
            max_tokens=config.workload.output_tokens,
            stream=key.mode == "stream",
            channels=config.grpc_channels,
            bounds=bounds,
        ).to_json()
        meter = _Meter(worker.process, stack.sim)
    else:
        target = _http_target(config, stack, key)
        worker = stack.loadgen
        spec = HttpPhase(target.url, target.body, key.mode == "stream", bounds).to_json()
        meter = _Meter(target.sut, target.upstream)
    timeout = bounds.warmup_s + bounds.duration_s + bounds.overtime_s
    reply = worker.call(spec, timeout + bounds.request_timeout_s + 30)
    record = meter.record(key, LoadResult.from_json(reply), int(reply.get("phase_requests", 0)))
    stack.check_alive()
    return record
