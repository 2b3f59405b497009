"""Whole-run figures from every answer: per phase of the run (warm-up, steady, during faults)
and per fault window, with outcomes by label and cache results."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.load.stats import finite, percentile
from bench.scenarios.soak.faults import FaultWindow, in_any
from bench.scenarios.soak.traffic import Record

FAULT_TAIL_S = 5.0  # answers ending this long after a fault still count as during it


@dataclass(frozen=True, slots=True)
class Totals:
    """The answers of one slice of the run."""

    name: str
    seconds: float
    answered: int
    ok: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    outcomes: dict[str, int]
    cache: dict[str, int]

    @property
    def rps(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0

    @property
    def errors(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k not in ("ok", "4xx expected"))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "seconds": self.seconds,
            "answered": self.answered,
            "ok": self.ok,
            "errors": self.errors,
            "rps": self.rps,
            "p50_ms": finite(self.p50_ms),
            "p99_ms": finite(self.p99_ms),
            "max_ms": finite(self.max_ms),
            "outcomes": self.outcomes,
            "cache": self.cache,
        }


def totals(name: str, seconds: float, records: Sequence[Record]) -> Totals:
    ok = [r.latency_s * 1000 for r in records if r.ok]
    return Totals(
        name,
        seconds,
        len(records),
        len(ok),
        percentile(ok, 50),
        percentile(ok, 99),
        max(ok, default=float("nan")),
        dict(Counter(r.label for r in records).most_common()),
        dict(Counter(r.cache or "none" for r in records if r.ok).most_common()),
    )


def phases(
    records: Sequence[Record], duration_s: float, warmup_s: float, faults: Sequence[FaultWindow]
) -> list[Totals]:
    """Whole run, warm-up, steady (after warm-up, outside faults) and during faults."""

    def faulty(r: Record) -> bool:
        return in_any(faults, r.end_s, FAULT_TAIL_S)

    fault_s = sum(w.end_s - w.start_s + FAULT_TAIL_S for w in faults)
    return [
        totals("whole run", duration_s, records),
        totals("warm-up", warmup_s, [r for r in records if r.end_s < warmup_s]),
        totals(
            "steady (after warm-up, outside faults)",
            max(0.0, duration_s - warmup_s - fault_s),
            [r for r in records if r.end_s >= warmup_s and not faulty(r)],
        ),
        totals("during faults (+5 s)", fault_s, [r for r in records if faulty(r)]),
    ]


def per_fault(records: Sequence[Record], faults: Sequence[FaultWindow]) -> list[Totals]:
    return [
        totals(
            f"{w.kind} {w.start_s:.0f}-{w.end_s:.0f} s",
            w.end_s - w.start_s + FAULT_TAIL_S,
            [r for r in records if w.covers(r.end_s, FAULT_TAIL_S)],
        )
        for w in faults
    ]
