"""The flags of `python -m bench` and their defaults (standard library only: the command line
must start fast)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

DEFAULT_CONCURRENCY = (1, 4, 16, 64)
QUICK_CONCURRENCY = (1, 4)
DEFAULT_DURATION_S = 5.0
QUICK_DURATION_S = 0.3
DEFAULT_WARMUP_S = 1.0
QUICK_WARMUP_S = 0.15
OVERLOAD_DURATION_S = 10.0
QUICK_OVERLOAD_DURATION_S = 1.5
OVERLOAD_TTFT_MS = 100.0
OVERLOAD_ITL_MS = 10.0
TRACING_DURATION_S = 1.5
TRACING_WARMUP_S = 0.5
TRACING_ROUNDS = 3
TRACING_CONCURRENCY = (1, 32)
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _numbers(kind: type[float], low: float, high: float, example: str) -> Any:
    """An argparse type: a comma-separated list of `kind` within [low, high], sorted, unique."""

    def parse(text: str) -> tuple[float, ...]:
        try:
            values = tuple(kind(part) for part in text.split(",") if part.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected numbers like {example}, got {text!r}"
            ) from None
        if not values or any(not low <= v <= high for v in values):
            raise argparse.ArgumentTypeError(f"values must be within {low:g}..{high:g}")
        return tuple(sorted(set(values)))

    return parse


def _bounded(low: float, high: float, *, above: bool = False) -> Any:
    """An argparse type: a number within [low, high] (or above `low`)."""

    def parse(text: str) -> float:
        value = float(text)
        if not (value > low if above else value >= low) or value > high:
            raise argparse.ArgumentTypeError(f"must be within {low:g}..{high:g}, got {text}")
        return value

    return parse


POSITIVE = _bounded(0, math.inf, above=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--scenario",
        choices=("http", "grpc", "all", "cache", "overload", "tracing"),
        default="all",
        help="http: mock direct vs floor proxy vs gateway; grpc: bare gRPC client vs gateway"
        " (and SMG, when installed), plus long streams for CPU per token; all: http and grpc;"
        " cache: exact/semantic cache hits against Redis Stack"
        " (bench/scenarios/cache); overload: goodput under open-loop overload with and"
        " without admission control (bench/scenarios/overload); tracing: throughput, p99 and"
        " gateway CPU with tracing off, on at sampling 1.0, on with the default sampler, and"
        " with the access log on (bench/scenarios/tracing)",
    )
    add(
        "--duration",
        type=POSITIVE,
        default=None,
        help=f"measured seconds per phase (default {DEFAULT_DURATION_S:g},"
        f" --quick {QUICK_DURATION_S:g}); overload: seconds per load level (default"
        f" {OVERLOAD_DURATION_S:g}, --quick {QUICK_OVERLOAD_DURATION_S:g}); tracing: default"
        f" {TRACING_DURATION_S:g} (warm-up {TRACING_WARMUP_S:g}, {TRACING_ROUNDS} rounds)",
    )
    add(
        "--warmup",
        type=float,
        default=None,
        help=f"unmeasured seconds before each phase (default {DEFAULT_WARMUP_S:g})",
    )
    add(
        "--concurrency",
        type=_numbers(int, 1, 1024, "1,4,16"),
        default=None,
        help="closed-loop levels, comma-separated (default 1,4,16,64; --quick 1,4; tracing: 1,32)",
    )
    add("--quick", action="store_true", help="a few seconds in all: a smoke run for CI")
    add(
        "--rounds",
        type=int,
        default=None,
        help="run the whole sweep N times and report each phase's median (noisy machines);"
        f" default 1, tracing {TRACING_ROUNDS}",
    )
    add(
        "--out",
        type=Path,
        default=None,
        help="output directory (default bench/results/<timestamp>)",
    )
    add("--output-tokens", type=int, default=20, help="tokens every answer has")
    add("--prompt-tokens", type=int, default=32, help="prompt token ids on the gRPC path")
    add(
        "--ttft-ms",
        type=float,
        default=None,
        help=f"upstream time to first token (mock and sim; default 0, overload"
        f" {OVERLOAD_TTFT_MS:g})",
    )
    add(
        "--itl-ms",
        type=float,
        default=None,
        help=f"upstream inter-token latency (mock and sim; default 0, overload"
        f" {OVERLOAD_ITL_MS:g})",
    )
    add(
        "--grpc-api",
        choices=("completions", "chat"),
        default="completions",
        help="gateway endpoint on the gRPC path; completions sends the floor's exact token ids",
    )
    add(
        "--grpc-channels",
        type=int,
        default=2,
        help="gRPC channels, for the gateway (GATEWAY_GRPC_CHANNELS) and the floor alike",
    )
    add(
        "--gateway-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="extra environment for the gateway (repeatable); default GATEWAY_CACHE=off and"
        " GATEWAY_COALESCE=false, so every request takes the proxy path",
    )
    add("--sut-cpu", type=int, default=0, help="CPU for the server under test")
    add("--client-cpu", type=int, default=1, help="CPU for the load generators")
    add(
        "--upstream-cpu",
        type=int,
        default=None,
        help="CPU for the mock and the stand-in (default: the client CPU)",
    )
    add("--no-pin", action="store_true", help="do not pin processes with taskset")
    add(
        "--request-timeout",
        type=POSITIVE,
        default=30.0,
        help="seconds per request",
    )
    add("--max-requests", type=int, default=1_000_000, help="request bound per phase")
    add(
        "--startup-timeout",
        type=POSITIVE,
        default=60.0,
        help="seconds a server may take to start",
    )
    add("--no-plots", action="store_true", help="skip the PNG charts")
    add(
        "--no-wrk",
        action="store_true",
        help="peak throughput from the aiohttp sweep only (default: also wrk, when installed)",
    )
    add(
        "--no-smg",
        action="store_true",
        help="grpc: leave out the SMG peer (default: measured when an `smg` executable exists)",
    )
    add(
        "--long-tokens",
        type=int,
        default=256,
        help="grpc: output tokens of the long streams (0: none); they measure CPU per token",
    )
    add(
        "--tokens-per-message",
        type=_numbers(int, 1, 64, "1,4,8"),
        default=(1, 4, 8),
        help="grpc: the stand-in's tokens per gRPC message in the long streams (default 1,4,8)",
    )
    add(
        "--profile",
        action="store_true",
        help="after measuring, sample the gateway with py-spy at the"
        " highest concurrency and add where its time goes to the report",
    )
    add(
        "--profile-native",
        action="store_true",
        help="with --profile: include C frames (pauses the gateway per sample: much slower)",
    )
    add(
        "--load-levels",
        type=_numbers(float, 1e-9, 20, "0.5,1,2"),
        default=None,
        help="overload: offered load as multiples of the measured capacity"
        " (default 0.5,1,1.5,2,3; --quick 0.5,2)",
    )
    add(
        "--batch-fraction",
        type=_bounded(0, 1),
        default=0.2,
        help="overload: share of requests sent with X-Priority: batch (the rest interactive)",
    )
    add("--sim-slots", type=int, default=8, help="overload: the stand-in's max_concurrency")
    add("--seed", type=int, default=1, help="overload: seed of the Poisson arrivals")
    add(
        "--capacity-duration",
        type=POSITIVE,
        default=None,
        help="overload: measured seconds of the closed-loop capacity phase per mode"
        " (default 4, --quick 1)",
    )
