"""Prefix-aware vs least-loaded routing over 4 stand-in replicas whose prefill time follows
the uncached prompt tokens: TTFT p50/p99, prefix hit ratio, gateway CPU per request.

    .venv/bin/python -m bench.scenarios.prefix.run [--out DIR] [--users 32] [--turns 4]
        [--events-delay-ms 0] [--turn-words 0]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.harness.probes import free_port, http_get, tcp_open
from bench.harness.processes import ProcessGroup, ProcessSpec, python_module
from bench.scenarios.prefix.workload import Turn, Workload, drive

SIM_ARGS = (
    "--ttft-ms", "5", "--itl-ms", "2", "--prefill-ms-per-token", "0.1",
    "--max-context-length", "16384", "--output-tokens", "16",
)  # fmt: skip
MODES = {"least-loaded": "0", "prefix-aware": "4"}


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_mode(
    log_dir: Path,
    weight: str,
    workload: Workload,
    replicas: int,
    kv_tokens: int,
    events_delay_ms: float = 0.0,
) -> dict[str, float]:
    with ProcessGroup(log_dir) as group:
        ports = []
        for _ in range(replicas):
            port = free_port()
            sim = group.start(
                ProcessSpec(
                    f"sim-{port}",
                    python_module(
                        "standin.vllm",
                        "--port",
                        str(port),
                        "--kv-cache-tokens",
                        str(kv_tokens),
                        "--kv-events-delay-ms",
                        str(events_delay_ms),
                        *SIM_ARGS,
                    ),
                )
            )
            sim.wait_ready(functools.partial(tcp_open, port), 90, "gRPC port")
            ports.append(port)
        port = free_port()
        gateway = group.start(
            ProcessSpec(
                "gateway",
                python_module("gateway.cli", "serve"),
                env={
                    "GATEWAY_PORT": str(port),
                    "GATEWAY_BACKENDS": "sim=" + ",".join(f"grpc://127.0.0.1:{p}" for p in ports),
                    "GATEWAY_LOG_LEVEL": "warning",
                    "GATEWAY_SLOW_START_S": "0",
                    "GATEWAY_CACHE": "off",
                    "GATEWAY_TOKENIZER_CACHE_DIR": str(log_dir / "tokenizers"),
                    "GATEWAY_PREFIX_ROUTING_WEIGHT": weight,
                },
            )
        )
        gateway.wait_ready(lambda: (http_get(port, "/readyz") or (0,))[0] == 200, 90, "/readyz")
        cpu_before = gateway.cpu_s()
        turns: list[Turn] = asyncio.run(drive(f"http://127.0.0.1:{port}/v1", workload))
        cpu = gateway.cpu_s() - cpu_before
    ttfts = [t.ttft_s * 1000 for t in turns]
    later = [t for t in turns if t.prompt_tokens]
    return {
        "requests": len(turns),
        "ttft_p50_ms": round(statistics.median(ttfts), 1),
        "ttft_p99_ms": round(_quantile(ttfts, 0.99), 1),
        "prefix_hit_ratio": round(
            sum(t.cached_tokens for t in later) / max(1, sum(t.prompt_tokens for t in later)), 3
        ),
        "gateway_cpu_ms_per_request": round(cpu * 1000 / max(1, len(turns)), 2),
        "mean_prompt_tokens": round(statistics.mean(t.prompt_tokens for t in later), 0),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=8, help="shared system prompts")
    parser.add_argument("--kv-tokens", type=int, default=262144, help="KV cache per replica")
    parser.add_argument(
        "--events-delay-ms",
        type=float,
        default=0.0,
        help="how late each replica's KV events reach the gateway",
    )
    parser.add_argument(
        "--turn-words",
        type=int,
        default=0,
        help="words of its own in every user turn (an agent's tool output)",
    )
    args = parser.parse_args(argv)
    workload = Workload(
        users=args.users, turns=args.turns, prompts=args.prompts, turn_words=args.turn_words
    )
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode, weight in MODES.items():
            results[mode] = run_mode(
                Path(tmp) / mode,
                weight,
                workload,
                args.replicas,
                args.kv_tokens,
                args.events_delay_ms,
            )
            print(mode, results[mode], flush=True)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "prefix.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
