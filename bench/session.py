"""One benchmark run end to end: start the stack, run the phases, stop everything (also on
Ctrl-C, SIGTERM or a crash), then write report.md, results.json and the charts."""

from __future__ import annotations

import json

from bench import profiling
from bench.config import BenchConfig
from bench.processes import ProcessGroup
from bench.profiling import ProfileSummary, profile_gateway
from bench.progress import Progress
from bench.report import render
from bench.rounds import merge
from bench.runner import PhaseKey, PhaseRecord, phase_keys, run_phase
from bench.scenario_run import ScenarioRun, pinned
from bench.stack import start_stack
from bench.targets import evaluate


def _fold(measured: list[PhaseRecord]) -> list[PhaseRecord]:
    """One record per phase: rounds of the same phase merged (median), in first-run order."""
    by_key: dict[PhaseKey, list[PhaseRecord]] = {}
    for record in measured:
        by_key.setdefault(record.key, []).append(record)
    return [merge(group) for group in by_key.values()]


def _write_outputs(
    config: BenchConfig,
    records: list[PhaseRecord],
    measured: list[PhaseRecord],
    profiles: list[ProfileSummary],
    meta: dict[str, str],
    progress: Progress,
) -> str:
    targets = evaluate(config, records)
    report = render(config, records, targets, meta)
    if profiles:
        report += "\n" + "\n".join(profiling.render(profiles)) + "\n"
    (config.out_dir / "report.md").write_text(report)
    results = {
        "meta": meta,
        "command": config.command,
        "phases": [r.to_json() for r in records],
        "rounds": config.rounds,
        "measured": [r.to_json() for r in measured] if config.rounds > 1 else [],
        "targets": [
            {
                "scenario": t.scenario,
                "name": t.name,
                "measured": t.measured,
                "threshold": t.threshold,
                "passed": t.passed,
            }
            for t in targets
        ],
    }
    (config.out_dir / "results.json").write_text(json.dumps(results, indent=1))
    if config.plots and records:
        try:
            from bench.plots import write_plots

            for path in write_plots(config, records, config.out_dir):
                progress.say(f"wrote {path}")
        except Exception as exc:  # charts are a bonus; the report is what matters
            progress.say(f"could not draw the charts: {type(exc).__name__}: {exc}")
    return report


def execute(config: BenchConfig) -> int:
    """Run the benchmark described by `config`; returns the process exit status."""
    progress = Progress()
    run = ScenarioRun(config.out_dir, progress.say)
    keys = list(phase_keys(config))
    plan = [key for _ in range(config.rounds) for key in keys]
    progress.say(
        f"{len(plan)} phases, about {config.estimated_s():.0f} s of load;"
        f" output in {config.out_dir}"
    )
    measured: list[PhaseRecord] = []
    profiles: list[ProfileSummary] = []
    with (
        run.guarded(),
        pinned(config.client_cpu),
        ProcessGroup(config.out_dir / "logs") as group,
    ):
        stack = start_stack(config, group, progress.say)
        if stack.prompt_ids:
            run.meta["gRPC prompt"] = f"{len(stack.prompt_ids)} token ids: {stack.prompt_source}"
        for index, key in enumerate(plan, 1):
            record = run_phase(config, stack, key)
            measured.append(record)
            progress.phase(index, len(plan), record)
        if config.profile:
            profiles = profile_gateway(config, stack, progress.say)
        progress.say("stopping processes")
    if run.stopped and not measured:
        return run.status
    if run.stopped:
        run.meta["incomplete"] = f"the run stopped after {len(measured)} of {len(plan)} phases"
    records = _fold(measured)
    report = _write_outputs(config, records, measured, profiles, run.meta, progress)
    run.publish(report)
    if any(r.result.ok == 0 for r in records):
        run.unmeasured("some phases had no successful request (see Notes)")
    return run.status
