"""`python -m bench --scenario cache --quick` end to end, and the scenario's pure helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.scenarios.cache.client import semantic_counts
from bench.scenarios.cache.workloads import (
    new_prompts,
    repeat_fraction,
    zipf_prompts,
    zipf_sequence,
)
from tests.bench.quick_run import run_quick_bench

EXPECTED_ROWS = [
    "| cache | exact hit p50 at c=1 |",
    "| cache | exact hit p99 at c=1 |",
    "| cache | exact hit max throughput |",
    "| cache | semantic hit p50 at c=1 |",
    "| exact hit | gateway | 1 |",
    "| exact hit | bare starlette | 1 |",
    "| semantic hit | gateway | 1 |",
    "| mixed (Zipf) | gateway | 1 |",
    "| all miss | gateway | 1 |",
    "| all miss | gateway | 16 |",
    "| all miss | gateway | 64 |",
    "- embedding alone: p50",
]


def test_zipf_helpers_are_deterministic() -> None:
    """The Zipf prompts are distinct, the draws repeat, and both are seeded."""
    prompts = zipf_prompts(200)
    assert len(set(prompts)) == 200 and prompts == zipf_prompts(200)
    draws = zipf_sequence(200, 500, 1.1)
    assert draws == zipf_sequence(200, 500, 1.1)
    assert 0.0 < repeat_fraction(draws) < 1.0
    assert repeat_fraction([1, 2, 1, 1]) == 0.5
    misses = new_prompts("run-1", 50)
    assert len(set(misses)) == 50 and all("run-1" in text for text in misses)


def test_semantic_counts_read_only_semantic_lookups() -> None:
    """The semantic lookups are read by result from the exposition; other kinds are not."""
    exposition = (
        "# HELP gateway_cache_lookups_total Cache lookups\n"
        "# TYPE gateway_cache_lookups_total counter\n"
        'gateway_cache_lookups_total{kind="exact",result="miss"} 40.0\n'
        'gateway_cache_lookups_total{kind="semantic",result="miss"} 12.0\n'
        'gateway_cache_lookups_total{kind="semantic",result="error"} 3.0\n'
        'gateway_cache_lookups_total{kind="semantic_shadow",result="hit"} 5.0\n'
        "# HELP gateway_requests_total Requests\n"
        "# TYPE gateway_requests_total counter\n"
        'gateway_requests_total{route="chat"} 99.0\n'
    )
    assert semantic_counts(exposition) == {"miss": 12, "error": 3}
    assert semantic_counts("") == {}


@pytest.mark.timeout(60)
def test_quick_cache_run_reports_cache_rows(tmp_path: Path) -> None:
    """A quick cache run exits 0 and its report has the cache targets and workload rows."""
    out = tmp_path / "run"
    run = run_quick_bench(out, "--scenario", "cache", "--no-wrk", timeout=58)
    report = run.report
    notes = [line for line in report.splitlines() if line.startswith("- ")]
    for row in EXPECTED_ROWS:
        assert row in report, (row, notes)  # the notes say why a workload went unmeasured
    results = json.loads((out / "results.json").read_text())
    assert {t["scenario"] for t in results["targets"]} == {"cache"}
    exact = [m for m in results["cache"] if m["workload"] == "exact hit"]
    assert exact and all(m["xcache"] for m in exact)
    crowded = [m for m in results["cache"] if m["workload"] == "all miss" and m["concurrency"] > 1]
    assert crowded and all(sum(m["semantic"].values()) > 0 for m in crowded)
