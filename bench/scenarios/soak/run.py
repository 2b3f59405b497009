"""`python -m bench.scenarios.soak`: mixed traffic for minutes (10 by default) against a
gateway with several workers, two stand-ins and Redis Stack (exact and semantic caches on),
with a fault every minute; a sample every few seconds; a verdict on leaks.

Exit status: 0 the verdict passed, 1 it failed, 2 harness failure, 3 no successful answer,
130 interrupted (what was sampled until then is still reported).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import aiohttp

from bench.harness.run import EXIT_OK, ScenarioRun
from bench.scenarios.soak import breakdown
from bench.scenarios.soak.config import SoakConfig, add_arguments, from_args
from bench.scenarios.soak.faults import FaultWindow, run_faults, schedule
from bench.scenarios.soak.mix import Mix
from bench.scenarios.soak.plots import write_plots
from bench.scenarios.soak.procfs import sample_tree
from bench.scenarios.soak.report import render
from bench.scenarios.soak.samples import Sample, csv_rows, summarize
from bench.scenarios.soak.stack import SoakStack, StackFaults, soak_stack
from bench.scenarios.soak.tasks import UNLABELLED, scrape
from bench.scenarios.soak.totals import per_fault, phases
from bench.scenarios.soak.traffic import PATH, Traffic, new_session
from bench.scenarios.soak.verdict import judge

EXIT_FAILED = 1
EXIT_UNMEASURED = 3


@dataclass
class Collected:
    """What the run gathered; kept outside the run so an interrupted run still reports it."""

    samples: list[Sample] = field(default_factory=list)
    fault_log: list[str] = field(default_factory=list)
    traffic: Traffic | None = None
    env: dict[str, str] = field(default_factory=dict)


async def _tasks(session: aiohttp.ClientSession, stack: SoakStack) -> dict[int, float] | None:
    found = await scrape(session, stack.url)
    if not found:
        return None
    if UNLABELLED in found:  # one worker: uvicorn serves in the supervisor process itself
        found[stack.gateway.pid] = found.pop(UNLABELLED)
    return found


async def _sample_forever(
    config: SoakConfig,
    stack: SoakStack,
    traffic: Traffic,
    session: aiohttp.ClientSession,
    windows: Sequence[FaultWindow],
    origin: float,
    out: list[Sample],
) -> None:
    cursor, last = 0, origin
    while True:
        await asyncio.sleep(max(0.0, last + config.sample_s - time.monotonic()))
        now = time.monotonic()
        records = traffic.records[cursor:]
        cursor += len(records)
        processes = sample_tree(stack.gateway.pid, stack.peers, stack.port)
        tasks = await _tasks(session, stack)
        t = now - origin
        fault = next((w.kind for w in windows if w.covers(t)), "")
        out.append(summarize(t, now - last, records, traffic.in_flight, fault, processes, tasks))
        last = now


async def _prime(session: aiohttp.ClientSession, url: str, bodies: Sequence[bytes]) -> None:
    """Ask the paraphrases' stored questions once, so semantic lookups have matches."""
    headers = {"content-type": "application/json"}
    for body in bodies:
        async with session.post(url + PATH, data=body, headers=headers) as response:
            await response.read()


async def drive(
    config: SoakConfig,
    stack: SoakStack,
    windows: Sequence[FaultWindow],
    out: Collected,
    say: Callable[[str], None],
) -> None:
    mix = Mix(config.seed, config.output_tokens, nonce=time.strftime("%H%M%S"))
    faults = StackFaults(stack)
    async with new_session(config.budget_ms / 1000 + 10) as session:
        await _prime(session, stack.url, mix.stored_questions())
        traffic = out.traffic = Traffic(stack.url, mix, config.rate, config.budget_ms, config.seed)
        origin = time.monotonic()
        helpers = [
            asyncio.create_task(
                _sample_forever(config, stack, traffic, session, windows, origin, out.samples)
            ),
            asyncio.create_task(run_faults(faults, windows, origin, out.fault_log)),
            asyncio.create_task(_progress(config, traffic, out, say)),
        ]
        try:
            await traffic.run(session, origin, config.duration_s)
        finally:
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await faults.aclose()


async def _progress(
    config: SoakConfig, traffic: Traffic, out: Collected, say: Callable[[str], None]
) -> None:
    while True:
        await asyncio.sleep(max(config.sample_s, min(60.0, config.duration_s / 10)))
        if out.samples:
            s = out.samples[-1]
            rss = sum(p.rss_kib for p in s.processes) / 1024
            say(
                f"t={s.t_s:.0f} s: {traffic.sent} sent, {s.throughput_rps:.1f} req/s, p99"
                f" {s.p99_ms:.0f} ms, gateway RSS {rss:.0f} MiB over {len(s.processes)}"
                f" processes{', fault ' + s.fault if s.fault else ''}"
            )


def _write(config: SoakConfig, run: ScenarioRun, windows: list[FaultWindow], out: Collected) -> int:
    traffic = out.traffic
    records = traffic.records if traffic is not None else []
    verdict = judge(out.samples, config.warmup_s, windows)
    slices = phases(records, config.duration_s, config.warmup_s, windows)
    each_fault = per_fault(records, windows)
    sent, lag = (traffic.sent, traffic.lag_s) if traffic is not None else (0, 0.0)
    where = breakdown.rows(out.samples, config.warmup_s, windows)
    report = render(
        config, run.meta, out.env, verdict, slices, each_fault, windows, sent, lag, where
    )
    d = run.out_dir
    (d / "samples.json").write_text(json.dumps([s.to_json() for s in out.samples], indent=0))
    (d / "samples.csv").write_text("\n".join(csv_rows(out.samples)) + "\n")
    (d / "requests.csv").write_text(
        "kind,end_s,latency_ms,status,label,cache\n"
        + "".join(
            f"{r.kind},{r.end_s:.3f},{r.latency_s * 1000:.2f},{r.status},{r.label},{r.cache}\n"
            for r in records
        )
    )
    if out.samples:
        write_plots(out.samples, windows, config.warmup_s, d)
    results = {
        "verdict": verdict.to_json(),
        "breakdown": [{"figure": n, "head": h, "tail": t} for n, h, t in where],
        "phases": [t.to_json() for t in slices],
        "faults": [t.to_json() for t in each_fault],
        "fault_log": out.fault_log,
        "gateway_env": out.env,
    }
    run.finish(config.command, report, results)
    if run.status != EXIT_OK:
        return run.status
    if not any(r.ok for r in records):
        return EXIT_UNMEASURED
    return EXIT_OK if verdict.passed else EXIT_FAILED


def execute(config: SoakConfig) -> int:
    run = ScenarioRun(config.out_dir)
    windows = schedule(config.duration_s, config.fault_every_s, config.fault_s)
    out = Collected()
    run.say(f"soak: {config.duration_s:g} s at {config.rate:g} req/s, {len(windows)} faults")
    with run.processes(None) as group, soak_stack(config, group) as stack:
        out.env = stack.env
        run.say(f"gateway ready on {stack.url} with {config.workers} workers")
        asyncio.run(drive(config, stack, windows, out, run.say))
    run.stopped_after(f"{out.samples[-1].t_s:.0f} s of traffic" if out.samples else "starting")
    return _write(config, run, windows, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scenarios.soak", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    command = "python -m bench.scenarios.soak " + shlex.join(sys.argv[1:] if argv is None else argv)
    return execute(from_args(args, command))
