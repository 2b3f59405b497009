"""What the soak records every few seconds: traffic over the last interval (throughput,
latency percentiles, outcomes by label, cache results) and each gateway process's figures."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.load.stats import finite, percentile
from bench.scenarios.soak.procfs import ProcessSample
from bench.scenarios.soak.traffic import Record


@dataclass(frozen=True, slots=True)
class Sample:
    """One interval ending `t_s` seconds after the traffic started. Latencies in ms, of the
    successful answers; `outcomes` counts every answer by label (see traffic.label_of)."""

    t_s: float
    interval_s: float
    answered: int
    ok: int
    p50_ms: float
    p99_ms: float
    outcomes: dict[str, int]
    cache: dict[str, int]
    in_flight: int
    fault: str
    processes: list[ProcessSample] = field(default_factory=list)
    tasks: dict[int, float] | None = None  # pid -> asyncio tasks; None: not exported

    @property
    def throughput_rps(self) -> float:
        return self.answered / self.interval_s if self.interval_s > 0 else math.nan

    @property
    def ok_rps(self) -> float:
        return self.ok / self.interval_s if self.interval_s > 0 else math.nan

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["p50_ms"], document["p99_ms"] = finite(self.p50_ms), finite(self.p99_ms)
        document["throughput_rps"] = self.throughput_rps
        document["tasks"] = (
            None if self.tasks is None else {str(k): v for k, v in self.tasks.items()}
        )
        return document


def summarize(
    t_s: float,
    interval_s: float,
    records: Sequence[Record],
    in_flight: int,
    fault: str,
    processes: list[ProcessSample],
    tasks: dict[int, float] | None,
) -> Sample:
    """The sample of `records` (the answers that ended in the interval)."""
    ok = [r.latency_s * 1000 for r in records if r.ok]
    return Sample(
        t_s=t_s,
        interval_s=interval_s,
        answered=len(records),
        ok=len(ok),
        p50_ms=percentile(ok, 50),
        p99_ms=percentile(ok, 99),
        outcomes=dict(Counter(r.label for r in records)),
        cache=dict(Counter(r.cache or "none" for r in records if r.ok)),
        in_flight=in_flight,
        fault=fault,
        processes=processes,
        tasks=tasks,
    )


CSV_HEADER = (
    "t_s,throughput_rps,ok_rps,p50_ms,p99_ms,errors,in_flight,fault,"
    "pid,role,rss_kib,rss_anon_kib,fds,threads,tasks"
)


def csv_rows(samples: Sequence[Sample]) -> list[str]:
    """One row per (sample, process): the traffic columns repeat on each process's row."""
    rows = [CSV_HEADER]
    for s in samples:
        errors = sum(n for label, n in s.outcomes.items() if label not in ("ok", "4xx expected"))
        head = (
            f"{s.t_s:.1f},{s.throughput_rps:.2f},{s.ok_rps:.2f},{s.p50_ms:.2f},{s.p99_ms:.2f},"
            f"{errors},{s.in_flight},{s.fault}"
        )
        if not s.processes:
            rows.append(head + ",,,,,,,")
        for p in s.processes:
            tasks = "" if s.tasks is None or p.pid not in s.tasks else f"{s.tasks[p.pid]:g}"
            rows.append(
                f"{head},{p.pid},{p.role},{p.rss_kib},{p.rss_anon_kib},{p.fds},{p.threads},{tasks}"
            )
    return rows
