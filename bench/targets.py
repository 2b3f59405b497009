"""The performance targets, judged from one run's records (ratios within the run)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench.config import MODES, BenchConfig, Mode, Scenario
from bench.runner import PhaseRecord, Tool, default_tool

HTTP_THROUGHPUT_RATIO = 0.8  # gateway max req/s >= 0.8 x floor proxy's
HTTP_ADDED_P50_RATIO = 1.2  # gateway added p50 at c=1 <= 1.2 x floor proxy's added p50
GRPC_THROUGHPUT_RATIO: dict[Mode, float] = {"non-stream": 0.6, "stream": 0.5}
GRPC_ADDED_P50_MS = 0.6
GRPC_ADDED_P99_MS = 2.0
GRPC_ADDED_TTFT_P99_MS = 1.0


@dataclass(frozen=True, slots=True)
class Target:
    """One pass/fail line. `passed` is None when the run could not measure it."""

    scenario: Scenario
    name: str
    measured: str
    threshold: str
    passed: bool | None


@dataclass(frozen=True, slots=True)
class Peak:
    """A path's best throughput over all its phases (any concurrency, any load tool)."""

    rps: float
    concurrency: int
    tool: Tool
    cpu_us_per_request: float | None


class Records:
    """Lookup over a run's phase records."""

    def __init__(self, records: Sequence[PhaseRecord]) -> None:
        self._by_key = {
            (r.key.scenario, r.key.mode, r.key.concurrency, r.key.path, r.key.tool): r
            for r in records
        }

    def find(
        self, scenario: Scenario, mode: Mode, concurrency: int, path: str, tool: Tool | None = None
    ) -> PhaseRecord | None:
        """The record of a phase; `tool` defaults to the per-concurrency sweep's."""
        return self._by_key.get((scenario, mode, concurrency, path, tool or default_tool(path)))

    def with_tool(self, tool: Tool) -> list[PhaseRecord]:
        return [r for r in self._by_key.values() if r.key.tool == tool]

    def peak(self, scenario: Scenario, mode: Mode, path: str) -> Peak | None:
        rows = [
            r
            for (s, m, _, p, _), r in self._by_key.items()
            if (s, m, p) == (scenario, mode, path) and r.result.ok > 0
        ]
        if not rows:
            return None
        best = max(rows, key=lambda r: r.result.throughput)
        return Peak(
            best.result.throughput,
            best.key.concurrency,
            best.key.tool,
            best.sut_cpu_us_per_request,
        )


def _peak(peak: Peak) -> str:
    return f"{peak.rps:.0f} req/s at c={peak.concurrency} {peak.tool}"


def _per_core(gateway: Peak, floor: Peak) -> str:
    """The same ratio from CPU per request: what it would be if both had their core to
    themselves and were CPU-bound (robust to a saturated client core and to noise)."""
    if not gateway.cpu_us_per_request or not floor.cpu_us_per_request:
        return ""
    return f"; per busy core {floor.cpu_us_per_request / gateway.cpu_us_per_request:.2f}"


def _ms(seconds: float) -> float:
    return seconds * 1000.0


def _ok(value: float, limit: float, *, at_most: bool) -> bool | None:
    if math.isnan(value) or math.isnan(limit):
        return None
    return value <= limit if at_most else value >= limit


def _measured(rec: PhaseRecord | None) -> bool:
    return rec is not None and rec.result.ok > 0


def http_targets(config: BenchConfig, records: Records) -> list[Target]:
    targets = []
    for mode in MODES:
        floor = records.peak("http", mode, "floor")
        gateway = records.peak("http", mode, "gateway")
        if floor is None or gateway is None:
            targets.append(Target("http", f"throughput {mode}", "n/a", "", None))
            continue
        ratio = gateway.rps / floor.rps
        targets.append(
            Target(
                "http",
                f"{mode} max throughput, gateway / floor proxy",
                f"{ratio:.2f} ({_peak(gateway)} vs {_peak(floor)}{_per_core(gateway, floor)})",
                f">= {HTTP_THROUGHPUT_RATIO}",
                _ok(ratio, HTTP_THROUGHPUT_RATIO, at_most=False),
            )
        )
    c = config.low_concurrency
    for mode in MODES:
        direct = records.find("http", mode, c, "direct")
        floor_rec = records.find("http", mode, c, "floor")
        gw_rec = records.find("http", mode, c, "gateway")
        name = f"{mode} added p50 at c={c}, gateway vs floor proxy"
        if not (_measured(direct) and _measured(floor_rec) and _measured(gw_rec)):
            targets.append(Target("http", name, "n/a", "", None))
            continue
        assert direct is not None and floor_rec is not None and gw_rec is not None
        base = direct.result.latency.p50
        floor_added = floor_rec.result.latency.p50 - base
        gw_added = gw_rec.result.latency.p50 - base
        limit = HTTP_ADDED_P50_RATIO * floor_added
        ratio = gw_added / floor_added if floor_added > 0 else math.nan
        targets.append(
            Target(
                "http",
                name,
                f"{_ms(gw_added):.3f} ms vs {_ms(floor_added):.3f} ms (x{ratio:.2f})",
                f"<= {HTTP_ADDED_P50_RATIO} x floor ({_ms(limit):.3f} ms)",
                _ok(gw_added, limit, at_most=True),
            )
        )
    return targets


def grpc_targets(config: BenchConfig, records: Records) -> list[Target]:
    targets = []
    for mode in MODES:
        floor = records.peak("grpc", mode, "grpc-floor")
        gateway = records.peak("grpc", mode, "gateway")
        limit = GRPC_THROUGHPUT_RATIO[mode]
        name = f"{mode} max throughput, gateway / bare gRPC client"
        if floor is None or gateway is None:
            targets.append(Target("grpc", name, "n/a", f">= {limit}", None))
            continue
        ratio = gateway.rps / floor.rps
        targets.append(
            Target(
                "grpc",
                name,
                f"{ratio:.2f} ({_peak(gateway)} vs {_peak(floor)}{_per_core(gateway, floor)})",
                f">= {limit}",
                _ok(ratio, limit, at_most=False),
            )
        )
    c = config.low_concurrency
    for mode in MODES:
        floor_rec = records.find("grpc", mode, c, "grpc-floor")
        gw_rec = records.find("grpc", mode, c, "gateway")
        usable = _measured(floor_rec) and _measured(gw_rec)
        checks: list[tuple[str, str, float]] = [
            ("p50", "latency", GRPC_ADDED_P50_MS),
            ("p99", "latency", GRPC_ADDED_P99_MS),
        ]
        if mode == "stream":
            checks.append(("p99", "ttft", GRPC_ADDED_TTFT_P99_MS))
        for stat, metric, limit_ms in checks:
            what = "time to first token" if metric == "ttft" else "latency"
            name = f"{mode} added {what} {stat} at c={c}"
            if not usable:
                targets.append(Target("grpc", name, "n/a", f"<= {limit_ms} ms", None))
                continue
            assert floor_rec is not None and gw_rec is not None
            base = getattr(getattr(floor_rec.result, metric), stat)
            value = getattr(getattr(gw_rec.result, metric), stat)
            added = _ms(value - base)
            targets.append(
                Target(
                    "grpc",
                    name,
                    f"{added:.3f} ms ({_ms(value):.3f} vs {_ms(base):.3f} ms)",
                    f"<= {limit_ms} ms",
                    _ok(added, limit_ms, at_most=True),
                )
            )
    return targets


def evaluate(config: BenchConfig, records: Sequence[PhaseRecord]) -> list[Target]:
    lookup = Records(records)
    targets: list[Target] = []
    if "http" in config.scenarios:
        targets += http_targets(config, lookup)
    if "grpc" in config.scenarios:
        targets += grpc_targets(config, lookup)
    return targets
