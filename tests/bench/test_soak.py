"""A short soak end to end (`python -m bench.scenarios.soak`, ~30 s): real processes, every
fault kind once, the report, samples and charts written with the verdict's fields."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT
from bench.scenarios.soak.faults import ROTATION
from bench.scenarios.soak.plots import PANELS

# 4 faults (one of each kind) of 1 s, every 5 s; samples every second.
SHORT = (
    *("--duration", "24", "--fault-every", "5", "--fault-duration", "1", "--sample", "1"),
    *("--workers", "2", "--rate", "15"),
)


@pytest.mark.timeout(120)
def test_short_soak_writes_report_samples_and_charts(tmp_path: Path) -> None:
    """The soak exits with a verdict (0 or 1) and writes every output with its fields."""
    out = tmp_path / "soak"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.scenarios.soak", *SHORT, "--out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert "## Verdict: PASS" in report or "## Verdict: FAIL" in report, report
    assert "| figure | after warm-up | at the end | change | limit | result |" in report
    assert "| RSS, all gateway processes (MiB) |" in report
    results = json.loads((out / "results.json").read_text())
    verdict = results["verdict"]
    assert verdict["verdict"] in ("PASS", "FAIL")
    assert verdict["pass"] == (proc.returncode == 0)
    names = [check["name"] for check in verdict["checks"]]
    assert any(name.startswith("RSS worker") for name in names), names
    assert any(name.startswith("open fds worker") for name in names), names
    assert any(name.startswith("asyncio tasks") for name in names), names
    for check in verdict["checks"]:
        assert set(check) == {"name", "head", "tail", "change", "limit", "passed"}
    # Every fault kind was switched on and off again.
    log = "\n".join(results["fault_log"])
    for kind in ROTATION:
        assert f"{kind} on" in log and f"{kind} off" in log, log
    whole = results["phases"][0]
    assert whole["ok"] > 100 and whole["outcomes"]["4xx expected"] > 0
    samples = json.loads((out / "samples.json").read_text())
    assert len(samples) >= 20
    workers = {p["pid"] for s in samples for p in s["processes"] if p["role"] == "worker"}
    assert len(workers) == 2
    assert (out / "samples.csv").read_text().startswith("t_s,")
    for name in (*PANELS, "soak"):
        assert (out / f"{name}.png").stat().st_size > 5000, name
