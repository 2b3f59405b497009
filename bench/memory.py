"""`python -m bench.memory`: resident memory of the gateway's master and each worker, for
several `GATEWAY_WORKERS` with the semantic cache off and on, printed as a markdown table.

Each configuration is a fresh `gateway serve` in front of one vLLM stand-in, warmed up with
chat completions on fresh connections (so every worker serves some, and with the semantic
cache on, embeds them). Then, per process: RSS (VmRSS, which counts every shared page in
full in each process) and PSS (`/proc/PID/smaps_rollup`: a page shared by N processes counts
1/N in each, so the PSS of all processes adds up to what the group really uses) and USS
(private pages only). The semantic cache runs without Redis (in-process vector index) with
the ONNX encoder, which every worker loads itself: uvicorn spawns workers, nothing is
inherited from the master.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

from bench.harness.probes import HOST, free_port, http_ok, tcp_open
from bench.harness.processes import ProcessGroup, ProcessSpec, python_module

READY_S = 180.0
KIB = 1024


@dataclass(frozen=True, slots=True)
class Memory:
    """One process's memory in KiB."""

    rss: int
    pss: int
    uss: int


@dataclass(frozen=True, slots=True)
class Row:
    workers: int
    semantic: str
    master: Memory
    per_worker: list[Memory]

    @property
    def total_pss(self) -> int:
        return self.master.pss + sum(w.pss for w in self.per_worker)

    @property
    def total_rss(self) -> int:
        return self.master.rss + sum(w.rss for w in self.per_worker)


def memory(pid: int) -> Memory:
    """RSS, PSS and USS of `pid` (smaps_rollup), in KiB."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    return Memory(rss=fields["Rss"], pss=fields["Pss"], uss=uss)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def workers_of(master: int) -> list[int]:
    """uvicorn's spawned workers (a lone worker runs in the master itself)."""
    return [
        pid
        for pid in children(master)
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def chat(port: int, text: str) -> int:
    """One chat completion on a fresh connection (so the kernel spreads them over workers)."""
    body = {"model": "sim", "messages": [{"role": "user", "content": text}], "max_tokens": 8}
    conn = http.client.HTTPConnection(HOST, port, timeout=60)
    try:
        headers = {"content-type": "application/json"}
        conn.request("POST", "/v1/chat/completions", json.dumps(body), headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def measure(
    group: ProcessGroup, sim_port: int, workers: int, semantic: str, warmup: int, tmp: Path
) -> Row:
    port = free_port()
    gateway = group.start(
        ProcessSpec(
            f"gateway-{workers}-{semantic}",
            python_module("gateway.cli", "serve"),
            env={
                "GATEWAY_PORT": str(port),
                "GATEWAY_BACKENDS": f"sim=grpc://{HOST}:{sim_port}",
                "GATEWAY_WORKERS": str(workers),
                "GATEWAY_SEMANTIC_CACHE": semantic,
                "GATEWAY_REDIS_URL": "",
                "GATEWAY_LOG_LEVEL": "warning",
                "GATEWAY_TOKENIZER_CACHE_DIR": str(tmp / "tokenizers"),
            },
        )
    )
    try:
        gateway.wait_ready(lambda: http_ok(port, "/readyz"), READY_S, "/readyz")
        for i in range(warmup * workers):
            status = chat(port, f"Name a city in country number {i} and say why it is known.")
            if status != 200:
                raise RuntimeError(f"warm-up request answered {status}")
        time.sleep(1.0)  # let background work (write-back, samplers) settle
        spawned = workers_of(gateway.pid)
        if workers > 1 and len(spawned) != workers:
            raise RuntimeError(f"expected {workers} workers, found {spawned}")
        return Row(workers, semantic, memory(gateway.pid), [memory(p) for p in spawned])
    finally:
        gateway.stop()


def mib(kib: float) -> str:
    return f"{kib / KIB:.0f}"


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| workers | semantic cache | master RSS / PSS (MiB) | each worker RSS / PSS / USS "
        "(MiB, mean) | total RSS (MiB) | total PSS (MiB) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row.per_worker:
            n = len(row.per_worker)
            mean = Memory(
                sum(w.rss for w in row.per_worker) // n,
                sum(w.pss for w in row.per_worker) // n,
                sum(w.uss for w in row.per_worker) // n,
            )
            worker = f"{mib(mean.rss)} / {mib(mean.pss)} / {mib(mean.uss)}"
        else:
            worker = "(serves in the master)"
        lines.append(
            f"| {row.workers} | {row.semantic} | {mib(row.master.rss)} / {mib(row.master.pss)} "
            f"| {worker} | {mib(row.total_rss)} | {mib(row.total_pss)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__)
    parser.add_argument("--workers", default="1,2,4", help="comma-separated GATEWAY_WORKERS")
    parser.add_argument("--semantic", default="off,on", help="comma-separated modes")
    parser.add_argument("--warmup", type=int, default=8, help="requests per worker")
    args = parser.parse_args(argv)
    rows = []
    with TemporaryDirectory(prefix="bench-memory-") as tmp, ProcessGroup(Path(tmp)) as group:
        sim_port = free_port()
        sim = group.start(
            ProcessSpec("sim", python_module("standin.vllm", "--port", str(sim_port)))
        )
        sim.wait_ready(lambda: tcp_open(sim_port), READY_S, "gRPC port open")
        for semantic in args.semantic.split(","):
            for workers in (int(w) for w in args.workers.split(",")):
                row = measure(group, sim_port, workers, semantic, args.warmup, Path(tmp))
                rows.append(row)
                print(f"measured workers={workers} semantic={semantic}", file=sys.stderr)
    print(table(rows))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
    sys.exit(main())
