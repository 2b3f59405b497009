"""Everything one benchmark run is configured with, resolved from the CLI flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from bench.payloads import GrpcApi, Workload

GATEWAY_ENV_DEFAULTS = {"GATEWAY_CACHE": "off", "GATEWAY_COALESCE": "false"}
Scenario = Literal["http", "grpc"]
Mode = Literal["non-stream", "stream"]
MODES: tuple[Mode, ...] = ("non-stream", "stream")

# Paths measured per scenario, in the order each (mode, concurrency) step runs them.
HTTP_PATHS = ("direct", "floor", "gateway")
GRPC_PATHS = ("grpc-floor", "gateway")


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """One run's settings. CPUs are None when pinning is off."""

    scenarios: tuple[Scenario, ...]
    concurrency: tuple[int, ...]
    duration_s: float
    warmup_s: float
    out_dir: Path
    workload: Workload
    ttft_ms: float
    itl_ms: float
    sut_cpu: int | None
    client_cpu: int | None
    upstream_cpu: int | None
    grpc_api: GrpcApi
    grpc_channels: int
    request_timeout_s: float
    max_requests: int
    startup_timeout_s: float
    plots: bool
    command: str
    profile: bool = False
    profile_native: bool = False
    wrk: str | None = None  # the wrk executable for peak-throughput phases; None: skip them
    rounds: int = 1  # every phase runs this many times (interleaved); the median is reported
    # Extra GATEWAY_* variables; by default the caches are off so that every request takes the
    # proxy path the floors measure (identical benchmark requests would otherwise be hits).
    gateway_env: Mapping[str, str] = field(default_factory=lambda: dict(GATEWAY_ENV_DEFAULTS))

    @property
    def low_concurrency(self) -> int:
        """The level latency targets are judged at: 1 when measured, else the lowest."""
        return 1 if 1 in self.concurrency else min(self.concurrency)

    def estimated_s(self) -> float:
        """Seconds of load the phases will take (without startup and overtime)."""
        per_step = {"http": len(HTTP_PATHS), "grpc": len(GRPC_PATHS)}
        sweeps = sum(per_step[s] for s in self.scenarios) * len(MODES) * len(self.concurrency)
        total = sweeps * (self.warmup_s + self.duration_s)
        if self.wrk is not None:
            wrk_phases = sum(per_step[s] - (s == "grpc") for s in self.scenarios) * len(MODES)
            warmup = round(self.warmup_s) if self.warmup_s >= 0.5 else 0
            total += wrk_phases * (max(1, round(self.duration_s)) + warmup)
        return total * self.rounds
