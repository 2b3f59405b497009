"""Folding several rounds of one phase into a median record."""

from __future__ import annotations

import pytest

from bench.rounds import median_result, merge
from bench.runner import PhaseKey, PhaseRecord
from bench.stats import LoadResult, Summary


def _result(ok: int, elapsed: float, p50: float) -> LoadResult:
    latency = Summary(ok, p50, p50, p50, p50 * 2, p50 * 3)
    empty = Summary.of([])
    return LoadResult(ok, 0, (), elapsed, latency, empty, empty, 0.0, 0.1)


def test_median_result_takes_median_rate_and_percentiles() -> None:
    """A disturbed round (slow, low rate) does not move the median."""
    merged = median_result(
        [_result(1000, 1.0, 0.001), _result(100, 1.0, 0.050), _result(900, 1.0, 0.002)]
    )
    assert merged.throughput == pytest.approx(900.0)
    assert merged.latency.p50 == 0.002
    assert merged.latency.max == pytest.approx(0.150)
    assert merged.ok == 2000


def test_merge_sums_cpu_and_keeps_the_key() -> None:
    """CPU and wall time add up, so CPU per request stays a ratio of totals."""
    key = PhaseKey("http", "stream", 4, "gateway")
    records = [
        PhaseRecord(key, _result(100, 1.0, 0.001), 120, 1.2, 0.6, 0.3, 0.2, (0.5, 0.4)),
        PhaseRecord(key, _result(300, 1.0, 0.001), 360, 1.2, 1.0, 0.3, 0.4, (0.9, 0.6)),
    ]
    merged = merge(records)
    assert merged.key == key
    assert merged.sut_cpu_us_per_request == pytest.approx(1.6 / 480 * 1e6)
    assert merged.core_busy == pytest.approx((0.7, 0.5))
