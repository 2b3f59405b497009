"""Several rounds of the same phase folded into one record: the median of each statistic, so
a burst of load from other processes during one round does not decide the result."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from bench.runner import PhaseRecord
from bench.stats import LoadResult, Summary


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.median(finite) if finite else math.nan


def median_summary(summaries: Sequence[Summary]) -> Summary:
    return Summary(
        count=sum(s.count for s in summaries),
        mean=_median([s.mean for s in summaries]),
        p50=_median([s.p50 for s in summaries]),
        p90=_median([s.p90 for s in summaries]),
        p99=_median([s.p99 for s in summaries]),
        max=max((s.max for s in summaries if not math.isnan(s.max)), default=math.nan),
    )


def median_result(results: Sequence[LoadResult]) -> LoadResult:
    """Counts add up; percentiles and the request rate are the median over the rounds (the
    elapsed time is set so that `throughput` is that median)."""
    ok = sum(r.ok for r in results)
    rate = _median([r.throughput for r in results if r.ok])
    events = _median([r.events_per_request for r in results if r.ok])
    samples: list[str] = []
    for r in results:
        samples += [s for s in r.error_samples if s not in samples]
    return LoadResult(
        ok=ok,
        errors=sum(r.errors for r in results),
        error_samples=tuple(samples[:5]),
        elapsed_s=ok / rate if ok and rate > 0 else sum(r.elapsed_s for r in results),
        latency=median_summary([r.latency for r in results]),
        ttft=median_summary([r.ttft for r in results]),
        itl=median_summary([r.itl for r in results]),
        events_per_request=0.0 if math.isnan(events) else events,
        client_cpu_s=sum(r.client_cpu_s for r in results),
    )


def merge(records: Sequence[PhaseRecord]) -> PhaseRecord:
    """One record for the same phase measured in several rounds (CPU figures are totals)."""
    if len(records) == 1:
        return records[0]
    sut = [r.sut_cpu_s for r in records]
    cores = min(len(r.core_busy) for r in records)
    return PhaseRecord(
        key=records[0].key,
        result=median_result([r.result for r in records]),
        phase_requests=sum(r.phase_requests for r in records),
        wall_s=sum(r.wall_s for r in records),
        sut_cpu_s=None if None in sut else sum(s for s in sut if s is not None),
        upstream_cpu_s=sum(r.upstream_cpu_s for r in records),
        client_cpu_fraction=statistics.fmean(r.client_cpu_fraction for r in records),
        core_busy=tuple(statistics.fmean(r.core_busy[i] for r in records) for i in range(cores)),
    )
