"""`python -m bench --quick` end to end against real processes (no timing assertions)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT
from bench.scenarios.overhead import smg
from tests.bench.quick_run import run_quick_bench

EXPECTED_ROWS = [
    "| http | non-stream max throughput, gateway / floor proxy |",
    "| http | stream added p50 at c=1, gateway vs floor proxy |",
    "| grpc | non-stream max throughput, gateway / bare gRPC client |",
    "| grpc | stream added time to first token p99 at c=1 |",
    "| http | non-stream | floor |",
    "| grpc | stream | grpc-floor |",
    "| non-stream | 1 | direct |",
    "| stream | 2 | gateway |",
    "| http | stream | gateway | 2 |",  # the wrk table
    "## gRPC long streams: 256 tokens, CPU per token",
    "| 1 | grpc-floor |",
    "| 8 | gateway |",
]
# 12 + 8 in the sweeps, 8 driven by wrk, 6 long streams; SMG, when installed, adds 4 + 2 + 3
PHASES = 34 + (9 if smg.executable() else 0)


# Limits against a hang only: the run took 32 s on a quiet box and 52 s under three busy loops.
@pytest.mark.timeout(240)
def test_quick_run_writes_report_and_charts(tmp_path: Path) -> None:
    """A quick run of both scenarios exits 0 and writes report.md, results.json and PNGs."""
    out = tmp_path / "run"
    run = run_quick_bench(out, "--concurrency", "1,2", timeout=230)
    proc, report = run.proc, run.report
    for row in EXPECTED_ROWS:
        assert row in report, row
    assert report in proc.stdout
    phases = json.loads((out / "results.json").read_text())["phases"]
    assert len(phases) == PHASES
    assert all(p["result"]["ok"] > 0 and p["result"]["errors"] == 0 for p in phases)
    assert {p["per_message"] for p in phases if p["tokens"] == 256} == {1, 4, 8}
    for chart in ("latency_vs_concurrency.png", "ttft_vs_concurrency.png", "throughput.png"):
        assert (out / chart).stat().st_size > 1000
    assert f"({PHASES}/{PHASES})" in proc.stderr


@pytest.mark.timeout(60)
def test_interrupted_run_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM during a run stops every subprocess it started."""
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench",
            "--scenario",
            "grpc",
            "--duration",
            "20",
            "--concurrency",
            "1",
            "--no-plots",
            "--out",
            str(out),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # wait for the first phase to be under way
        if "gateway ready" in line:
            break
    children = _children(proc.pid)
    assert children
    proc.terminate()
    assert proc.wait(timeout=30) == 130
    deadline = time.monotonic() + 10
    while _alive(children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(children)


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found
