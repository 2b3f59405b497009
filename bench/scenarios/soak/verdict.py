"""The soak's verdict: after the warm-up, does anything grow? RSS (each gateway process and
their sum) must grow less than 5%; open descriptors and asyncio tasks must stay flat.

Descriptors are counted less the client connections that are still open at both ends: how
many the load generator keeps alive is its own choice (its pool grows after a slow spell and
keeps its connections). A connection the client closed and the gateway did not still counts.

Samples taken during a fault or within `RECOVERY_S` after it are left out, and the first
tenth of the steady samples (the head) is compared with the last tenth (the tail), by medians,
so one busy interval moves nothing.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.scenarios.soak.faults import FaultWindow, in_any
from bench.scenarios.soak.fdkinds import CLIENTS
from bench.scenarios.soak.samples import Sample

RSS_GROWTH_LIMIT = 0.05
FDS_SLACK = (2, 0.05)  # flat: the tail's median at most max(2, 5%) above the head's
TASKS_SLACK = (5, 0.10)  # tasks follow the requests in flight: max(5, 10%)
RECOVERY_S = 10.0
MIN_WINDOW = 3


@dataclass(frozen=True, slots=True)
class Check:
    """One line of the verdict: `passed` None when it could not be measured."""

    name: str
    head: float | None
    tail: float | None
    change: str
    limit: str
    passed: bool | None


@dataclass(frozen=True, slots=True)
class Verdict:
    checks: list[Check]
    steady_samples: int
    window_samples: int
    worker_pids_stable: bool
    notes: list[str]
    recovery_s: float = RECOVERY_S

    @property
    def passed(self) -> bool:
        """Every measured check passed (and there was something to check)."""
        return (
            bool(self.checks)
            and self.worker_pids_stable
            and all(c.passed is not False for c in self.checks)
        )

    @property
    def word(self) -> str:
        if not self.checks:
            return "INCONCLUSIVE"
        return "PASS" if self.passed else "FAIL"

    def to_json(self) -> dict[str, Any]:
        return {
            "pass": self.passed,
            "verdict": self.word,
            "recovery_s": self.recovery_s,
            "steady_samples": self.steady_samples,
            "window_samples": self.window_samples,
            "worker_pids_stable": self.worker_pids_stable,
            "checks": [asdict(c) for c in self.checks],
            "notes": self.notes,
        }


def recovery_s(faults: Sequence[FaultWindow]) -> float:
    """`RECOVERY_S`, or half the calm between two faults when that is shorter."""
    gaps = [b.start_s - a.end_s for a, b in itertools.pairwise(faults)]
    return min([RECOVERY_S, *(g / 2 for g in gaps)])


def steady(
    samples: Sequence[Sample], warmup_s: float, faults: Sequence[FaultWindow]
) -> list[Sample]:
    """Samples after the warm-up whose interval touched no fault and ended at least the
    recovery time after one."""
    after = recovery_s(faults)
    return [
        s
        for s in samples
        if s.t_s - s.interval_s >= warmup_s
        and not in_any(faults, s.t_s, after)
        and not in_any(faults, s.t_s - s.interval_s)
    ]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _check(
    name: str,
    head: list[Sample],
    tail: list[Sample],
    value: Callable[[Sample], float | None],
    slack: tuple[float, float] | None,
) -> Check:
    """`slack` None: relative RSS growth under the limit; else (absolute, relative) slack."""
    h = _median([v for s in head if (v := value(s)) is not None])
    t = _median([v for s in tail if (v := value(s)) is not None])
    if h is None or t is None or h <= 0:
        limit = f"< {RSS_GROWTH_LIMIT:.0%}" if slack is None else "flat"
        return Check(name, h, t, "not measured", limit, None)
    growth = (t - h) / h
    if slack is None:
        passed = growth < RSS_GROWTH_LIMIT
        return Check(name, h, t, f"{growth:+.1%}", f"< {RSS_GROWTH_LIMIT:.0%}", passed)
    allowed = max(slack[0], slack[1] * h)
    return Check(
        name, h, t, f"{t - h:+.1f} ({growth:+.1%})", f"<= +{allowed:.1f}", t - h <= allowed
    )


def _rss(pid: int) -> Callable[[Sample], float | None]:
    return lambda s: next((p.rss_kib / 1024 for p in s.processes if p.pid == pid), None)


def _fds(pid: int) -> Callable[[Sample], float | None]:
    """Open descriptors less open client connections (see the module's docstring)."""
    return lambda s: next(
        (float(p.fds - p.fd_kinds.get(CLIENTS, 0)) for p in s.processes if p.pid == pid), None
    )


def _tasks(pid: int) -> Callable[[Sample], float | None]:
    return lambda s: None if s.tasks is None else s.tasks.get(pid)


def _total_rss(s: Sample) -> float | None:
    return sum(p.rss_kib for p in s.processes) / 1024 if s.processes else None


def judge(samples: Sequence[Sample], warmup_s: float, faults: Sequence[FaultWindow]) -> Verdict:
    calm = steady(samples, warmup_s, faults)
    size = max(MIN_WINDOW, len(calm) // 10)
    notes: list[str] = []
    if len(calm) < 2 * MIN_WINDOW:
        notes.append(f"only {len(calm)} steady samples: the run is too short for a verdict")
        return Verdict([], len(calm), 0, True, notes, recovery_s(faults))
    head, tail = calm[:size], calm[-size:]
    labels = {p.pid: p.role for s in calm for p in s.processes}
    first = {p.pid for p in head[0].processes}
    last = {p.pid for p in tail[-1].processes}
    workers_first = {pid for pid in first if labels.get(pid) == "worker"}
    workers_last = {pid for pid in last if labels.get(pid) == "worker"}
    stable = workers_first == workers_last
    if not stable:
        notes.append(f"worker pids changed: {sorted(workers_first)} -> {sorted(workers_last)}")
    checks = [_check("RSS, all gateway processes (MiB)", head, tail, _total_rss, None)]
    pids = sorted(first & last, key=lambda pid: (labels[pid] != "parent", labels[pid], pid))
    for pid in pids:
        checks.append(_check(f"RSS {labels[pid]} {pid} (MiB)", head, tail, _rss(pid), None))
    for pid in pids:
        name = f"open fds {labels[pid]} {pid} (less open client connections)"
        checks.append(_check(name, head, tail, _fds(pid), FDS_SLACK))
    if any(s.tasks for s in calm):
        measured = sorted({pid for s in calm if s.tasks for pid in s.tasks})
        for pid in measured:
            role = labels.get(pid, "worker")
            checks.append(
                _check(f"asyncio tasks {role} {pid}", head, tail, _tasks(pid), TASKS_SLACK)
            )
    else:
        checks.append(Check("asyncio tasks per worker", None, None, "not exported", "flat", None))
        notes.append("the gateway exports no gateway_event_loop_tasks gauge: tasks not measured")
    return Verdict(checks, len(calm), size, stable, notes, recovery_s(faults))
