"""One benchmark run end to end: start the stack, run the phases, stop everything (also on
Ctrl-C, SIGTERM or a crash), then write report.md, results.json and the charts."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench import profiling
from bench.config import BenchConfig
from bench.errors import HarnessError
from bench.interrupts import stop_on_signals
from bench.processes import REPO_ROOT, ProcessGroup
from bench.profiling import ProfileSummary, profile_gateway
from bench.progress import Progress
from bench.report import render
from bench.rounds import merge
from bench.runner import PhaseKey, PhaseRecord, phase_keys, run_phase
from bench.stack import start_stack
from bench.targets import evaluate

EXIT_OK = 0
EXIT_HARNESS = 2
EXIT_UNMEASURED = 3  # some phase had no successful request at all
EXIT_INTERRUPTED = 130


def _git_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev + (" (with uncommitted changes)" if dirty else "")


def _meta() -> dict[str, str]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "timestamp": time.strftime("%Y-%m-%d %H:%M:%S"),
        "git": _git_revision(),
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, Python"
        f" {platform.python_version()}, load average at start {load[0]:.2f}",
    }


@contextmanager
def _pinned(cpu: int | None) -> Iterator[None]:
    """The orchestrator itself keeps off the server's core."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, previous)


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
    config.out_dir.mkdir(parents=True, exist_ok=True)
    meta = _meta()
    keys = list(phase_keys(config))
    plan = [key for _ in range(config.rounds) for key in keys]
    progress.say(
        f"{len(plan)} phases, about {config.estimated_s():.0f} s of load;"
        f" output in {config.out_dir}"
    )
    measured: list[PhaseRecord] = []
    profiles: list[ProfileSummary] = []
    status = EXIT_OK
    try:
        with (
            stop_on_signals(),
            _pinned(config.client_cpu),
            ProcessGroup(config.out_dir / "logs") as group,
        ):
            stack = start_stack(config, group, progress.say)
            if stack.prompt_ids:
                meta["gRPC prompt"] = f"{len(stack.prompt_ids)} token ids: {stack.prompt_source}"
            for index, key in enumerate(plan, 1):
                record = run_phase(config, stack, key)
                measured.append(record)
                progress.phase(index, len(plan), record)
            if config.profile:
                profiles = profile_gateway(config, stack, progress.say)
            progress.say("stopping processes")
    except HarnessError as exc:
        print(f"bench: harness failure: {exc}", file=sys.stderr)
        status = EXIT_HARNESS
    except KeyboardInterrupt:
        print("bench: interrupted; every subprocess was stopped", file=sys.stderr)
        status = EXIT_INTERRUPTED
    if status != EXIT_OK and not measured:
        return status
    if status != EXIT_OK:
        meta["incomplete"] = f"the run stopped after {len(measured)} of {len(plan)} phases"
    records = _fold(measured)
    report = _write_outputs(config, records, measured, profiles, meta, progress)
    sys.stdout.write(report)
    sys.stdout.flush()
    progress.say(f"wrote {Path(config.out_dir) / 'report.md'}")
    if status == EXIT_OK and any(r.result.ok == 0 for r in records):
        print("bench: some phases had no successful request (see Notes)", file=sys.stderr)
        status = EXIT_UNMEASURED
    return status
