"""The tracing scenario's span sink: the OTLP sink process (bench/servers/otlp_sink.py, one
port per mode) asked for counts, and what each gateway sent it and logged over its life."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

from bench.config import BenchConfig
from bench.harness.errors import HarnessError
from bench.harness.probes import HOST
from bench.harness.processes import ManagedProcess, ProcessGroup, ProcessSpec, python_module
from bench.harness.worker import Worker
from bench.scenarios.tracing.modes import ModeName
from bench.scenarios.tracing.stats import ModeRun, PhaseResult
from bench.servers.otlp_sink import SinkTotals, SpanCount

QUEUE_FULL = "Queue full, dropping"  # the SDK's warning when its span queue overflows


class Sink:
    """The OTLP sink process, asked for counts over bench.harness.worker's protocol."""

    def __init__(self, worker: Worker, ports: dict[ModeName, int], timeout_s: float) -> None:
        self.worker = worker
        self.ports = ports
        self.timeout_s = timeout_s

    @property
    def process(self) -> ManagedProcess:
        return self.worker.process

    def endpoint(self, mode: ModeName) -> str:
        return f"http://{HOST}:{self.ports[mode]}"

    def totals(self, mode: ModeName) -> SinkTotals:
        spec = {"op": "totals", "port": self.ports[mode]}
        return SinkTotals.from_json(self.worker.call(spec, self.timeout_s))

    def windows(self, mode: ModeName, windows: list[tuple[int, int]]) -> list[SpanCount]:
        spec = {"op": "windows", "port": self.ports[mode], "windows": windows}
        reply = self.worker.call(spec, self.timeout_s)
        return [SpanCount.from_json(c) for c in reply["windows"]]

    def collect(
        self, mode: ModeName, process: ManagedProcess, phases: list[PhaseResult]
    ) -> tuple[list[PhaseResult], ModeRun]:
        """After `mode`'s gateway stopped: its phases with their spans, and what its sink port
        and log got."""
        mine = [i for i, p in enumerate(phases) if p.key.mode == mode]
        counts = self.windows(mode, [phases[i].window_ns for i in mine])
        filled = list(phases)
        for i, count in zip(mine, counts, strict=True):
            filled[i] = dataclasses.replace(phases[i], spans=count.spans, traces=count.traces)
        try:
            log = process.log_path.read_bytes()
        except OSError:
            log = b""
        run = ModeRun(
            mode,
            process.log_path.name,
            self.totals(mode),
            log.count(QUEUE_FULL.encode()),
            len(log),
            log.count(b"\n"),
            sink_cpu_s=sum(phases[i].sink_cpu_s for i in mine),
            phases_wall_s=sum(phases[i].wall_s for i in mine),
        )
        return filled, run


def start_sink(
    config: BenchConfig, group: ProcessGroup, modes: Iterable[ModeName], say: Callable[[str], None]
) -> Sink:
    """The sink on the upstream core, one port per mode (the sink binds them and says which);
    it answers once its servers are up."""
    names = list(modes)
    argv = python_module("bench.servers.otlp_sink", "--servers", str(len(names)))
    spec = ProcessSpec("otlp-sink", argv, cpu=config.upstream_cpu, pipes=True)
    worker = Worker(group.start(spec))
    worker.wait_ready(config.startup_timeout_s)
    bound = [int(p) for p in worker.call({"op": "ports"}, config.startup_timeout_s)["ports"]]
    if len(set(bound)) != len(names):
        raise HarnessError(f"the OTLP sink bound {bound} for {len(names)} modes")
    ports: dict[ModeName, int] = dict(zip(names, bound, strict=True))
    sink = Sink(worker, ports, config.startup_timeout_s)
    say("OTLP sink ready on " + ", ".join(f"{m}: :{p}" for m, p in ports.items()))
    return sink
