"""`gateway bench`: measure the gateway against its floors in one run and report the ratios.

Only the standard library is imported here; everything else loads when the benchmark runs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

DEFAULT_CONCURRENCY = (1, 4, 16, 64)
QUICK_CONCURRENCY = (1, 4)
DEFAULT_DURATION_S = 5.0
QUICK_DURATION_S = 0.3
DEFAULT_WARMUP_S = 1.0
QUICK_WARMUP_S = 0.15
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _levels(text: str) -> tuple[int, ...]:
    try:
        levels = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1,4,16 - got {text!r}") from None
    if not levels or any(not 1 <= c <= 1024 for c in levels):
        raise argparse.ArgumentTypeError("concurrency levels must be within 1..1024")
    return tuple(sorted(set(levels)))


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__
    add = parser.add_argument
    add(
        "--scenario",
        choices=("http", "grpc", "all", "cache"),
        default="all",
        help="http: mock direct vs floor proxy vs gateway; grpc: bare gRPC client vs gateway;"
        " all: http and grpc; cache: exact/semantic cache hits against Redis Stack"
        " (bench/cache_scenario.py)",
    )
    add(
        "--duration",
        type=_positive,
        default=None,
        help=f"measured seconds per phase (default {DEFAULT_DURATION_S:g},"
        f" --quick {QUICK_DURATION_S:g})",
    )
    add(
        "--warmup",
        type=float,
        default=None,
        help=f"unmeasured seconds before each phase (default {DEFAULT_WARMUP_S:g})",
    )
    add(
        "--concurrency",
        type=_levels,
        default=None,
        help="closed-loop levels, comma-separated (default 1,4,16,64; --quick 1,4)",
    )
    add("--quick", action="store_true", help="a few seconds in all: a smoke run for CI")
    add(
        "--rounds",
        type=int,
        default=1,
        help="run the whole sweep N times and report each phase's median (noisy machines)",
    )
    add(
        "--out",
        type=Path,
        default=None,
        help="output directory (default bench/results/<timestamp>)",
    )
    add("--output-tokens", type=int, default=20, help="tokens every answer has")
    add("--prompt-tokens", type=int, default=32, help="prompt token ids on the gRPC path")
    add("--ttft-ms", type=float, default=0.0, help="upstream time to first token (mock and sim)")
    add("--itl-ms", type=float, default=0.0, help="upstream inter-token latency (mock and sim)")
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
    add("--request-timeout", type=_positive, default=30.0, help="seconds per request")
    add("--max-requests", type=int, default=1_000_000, help="request bound per phase")
    add(
        "--startup-timeout", type=_positive, default=60.0, help="seconds a server may take to start"
    )
    add("--no-plots", action="store_true", help="skip the PNG charts")
    add(
        "--no-wrk",
        action="store_true",
        help="peak throughput from the aiohttp sweep only (default: also wrk, when installed)",
    )
    add(
        "--profile",
        action="store_true",
        help="after measuring, sample the gateway with py-spy (pip install py-spy) at the"
        " highest concurrency and add where its time goes to the report",
    )
    add(
        "--profile-native",
        action="store_true",
        help="with --profile: include C frames (pauses the gateway per sample: much slower)",
    )


def _command_line() -> str:
    argv = sys.argv
    if argv and argv[0].endswith(os.path.join("gateway", "cli.py")):
        return "python -m gateway.cli " + shlex.join(argv[1:])
    return shlex.join(argv)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; 0 when every phase measured something, non-zero on harness failure."""
    from bench.config import GATEWAY_ENV_DEFAULTS, BenchConfig, Scenario
    from bench.payloads import Workload
    from bench.processes import can_pin
    from bench.session import execute

    quick = bool(args.quick)
    concurrency = args.concurrency or (QUICK_CONCURRENCY if quick else DEFAULT_CONCURRENCY)
    duration = args.duration or (QUICK_DURATION_S if quick else DEFAULT_DURATION_S)
    warmup = (
        args.warmup if args.warmup is not None else (QUICK_WARMUP_S if quick else DEFAULT_WARMUP_S)
    )
    cache = args.scenario == "cache"
    scenarios: tuple[Scenario, ...] = (
        () if cache else ("http", "grpc") if args.scenario == "all" else (args.scenario,)
    )
    if args.sut_cpu == args.client_cpu and not args.no_pin:
        print("bench: --sut-cpu and --client-cpu must differ", file=sys.stderr)
        return 2
    upstream_cpu = args.client_cpu if args.upstream_cpu is None else args.upstream_cpu
    pin = not args.no_pin and can_pin((args.sut_cpu, args.client_cpu, upstream_cpu))
    if not args.no_pin and not pin:
        print("bench: cannot pin (no taskset or fewer CPUs); running unpinned", file=sys.stderr)
    if args.output_tokens < 1 or args.prompt_tokens < 1 or args.grpc_channels < 1:
        print("bench: token counts and channels must be >= 1", file=sys.stderr)
        return 2
    gateway_env = dict(GATEWAY_ENV_DEFAULTS)
    for item in args.gateway_env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"bench: --gateway-env wants NAME=VALUE, got {item!r}", file=sys.stderr)
            return 2
        gateway_env[name] = value
    out_dir = args.out or RESULTS_DIR / time.strftime("%Y%m%d-%H%M%S")
    config = BenchConfig(
        scenarios=scenarios,
        concurrency=concurrency,
        duration_s=duration,
        warmup_s=max(0.0, warmup),
        out_dir=out_dir,
        workload=Workload(output_tokens=args.output_tokens, prompt_tokens=args.prompt_tokens),
        ttft_ms=args.ttft_ms,
        itl_ms=args.itl_ms,
        sut_cpu=args.sut_cpu if pin else None,
        client_cpu=args.client_cpu if pin else None,
        upstream_cpu=upstream_cpu if pin else None,
        grpc_api=args.grpc_api,
        grpc_channels=args.grpc_channels,
        request_timeout_s=args.request_timeout,
        max_requests=max(1, args.max_requests),
        startup_timeout_s=args.startup_timeout,
        plots=not args.no_plots,
        command=_command_line(),
        profile=bool(args.profile or args.profile_native),
        profile_native=bool(args.profile_native),
        wrk=None if args.no_wrk else shutil.which("wrk"),
        rounds=max(1, args.rounds),
        gateway_env=gateway_env,
    )
    if cache:
        from bench.cache_scenario import execute as execute_cache

        return execute_cache(config)
    return execute(config)


if __name__ == "__main__":
    cli = argparse.ArgumentParser(prog="gateway bench")
    add_arguments(cli)
    sys.exit(run(cli.parse_args()))
