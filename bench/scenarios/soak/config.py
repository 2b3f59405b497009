"""The soak's settings and its command line (standard library only)."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from bench.flags import POSITIVE, RESULTS_DIR

DEFAULT_DURATION_S = 600.0
DEFAULT_RATE = 20.0
DEFAULT_WORKERS = 3
DEFAULT_SAMPLE_S = 5.0
DEFAULT_FAULT_EVERY_S = 60.0
DEFAULT_FAULT_S = 15.0
DEFAULT_BUDGET_MS = 3000
WARMUP_FRACTION = 0.2


@dataclass(frozen=True, slots=True)
class SoakConfig:
    """One soak run. Times in seconds; `rate` is requests per second (Poisson arrivals)."""

    duration_s: float
    rate: float
    workers: int
    sample_s: float
    fault_every_s: float
    fault_s: float
    budget_ms: int
    out_dir: Path
    seed: int = 1
    warmup_fraction: float = WARMUP_FRACTION
    semantic: bool = True
    output_tokens: int = 16
    startup_timeout_s: float = 120.0
    command: str = ""

    @property
    def warmup_s(self) -> float:
        """Samples before this instant are warm-up: excluded from the verdict."""
        return self.duration_s * self.warmup_fraction


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--duration", type=POSITIVE, default=DEFAULT_DURATION_S, help="seconds of traffic")
    add("--rate", type=POSITIVE, default=DEFAULT_RATE, help="offered requests per second")
    add("--workers", type=int, default=DEFAULT_WORKERS, help="GATEWAY_WORKERS (uvicorn)")
    add("--sample", type=POSITIVE, default=DEFAULT_SAMPLE_S, help="seconds between samples")
    add(
        "--fault-every",
        type=POSITIVE,
        default=DEFAULT_FAULT_EVERY_S,
        help="seconds between fault starts (the kinds rotate)",
    )
    add("--fault-duration", type=POSITIVE, default=DEFAULT_FAULT_S, help="seconds per fault")
    add(
        "--budget-ms",
        type=int,
        default=DEFAULT_BUDGET_MS,
        help="X-Request-Timeout-Ms on every request",
    )
    add("--seed", type=int, default=1, help="seed of the arrivals and the request mix")
    add("--no-semantic", action="store_true", help="exact cache only (faster start)")
    add("--out", type=Path, default=None, help="default bench/results/<timestamp>-soak")


def from_args(args: argparse.Namespace, command: str) -> SoakConfig:
    out = args.out or RESULTS_DIR / time.strftime("%Y%m%d-%H%M%S-soak")
    return SoakConfig(
        duration_s=args.duration,
        rate=args.rate,
        workers=max(1, args.workers),
        sample_s=args.sample,
        fault_every_s=args.fault_every,
        fault_s=args.fault_duration,
        budget_ms=max(1, args.budget_ms),
        out_dir=out,
        seed=args.seed,
        semantic=not args.no_semantic,
        command=command,
    )
