"""Percentiles and latency summaries; plain data that crosses process boundaries as JSON."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0..100) with linear interpolation (numpy's default method).

    `values` need not be sorted; an empty sequence gives NaN.
    """
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    if not values:
        return math.nan
    ordered = sorted(values)
    return _sorted_percentile(ordered, q)


def _sorted_percentile(ordered: Sequence[float], q: float) -> float:
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    fraction = rank - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


@dataclass(frozen=True, slots=True)
class Summary:
    """Distribution of one measured quantity, in seconds."""

    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        """Summarize `values`; every field is NaN when there are none."""
        if not values:
            nan = math.nan
            return cls(0, nan, nan, nan, nan, nan)
        ordered = sorted(values)
        return cls(
            count=len(ordered),
            mean=math.fsum(ordered) / len(ordered),
            p50=_sorted_percentile(ordered, 50),
            p90=_sorted_percentile(ordered, 90),
            p99=_sorted_percentile(ordered, 99),
            max=ordered[-1],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in asdict(self).items()
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        def number(key: str) -> float:
            value = data.get(key)
            return math.nan if value is None else float(value)

        return cls(
            count=int(data.get("count", 0)),
            mean=number("mean"),
            p50=number("p50"),
            p90=number("p90"),
            p99=number("p99"),
            max=number("max"),
        )


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What one closed-loop load phase measured (any client: HTTP or bare gRPC)."""

    ok: int
    errors: int
    error_samples: tuple[str, ...]
    elapsed_s: float
    latency: Summary
    ttft: Summary
    itl: Summary
    events_per_request: float
    client_cpu_s: float

    @property
    def throughput(self) -> float:
        """Successful requests per second over the measured window."""
        return self.ok / self.elapsed_s if self.elapsed_s > 0 else math.nan

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": self.errors,
            "error_samples": list(self.error_samples),
            "elapsed_s": self.elapsed_s,
            "latency": self.latency.to_json(),
            "ttft": self.ttft.to_json(),
            "itl": self.itl.to_json(),
            "events_per_request": self.events_per_request,
            "client_cpu_s": self.client_cpu_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LoadResult:
        return cls(
            ok=int(data["ok"]),
            errors=int(data["errors"]),
            error_samples=tuple(str(s) for s in data.get("error_samples", ())),
            elapsed_s=float(data["elapsed_s"]),
            latency=Summary.from_json(data["latency"]),
            ttft=Summary.from_json(data["ttft"]),
            itl=Summary.from_json(data["itl"]),
            events_per_request=float(data.get("events_per_request", 0.0)),
            client_cpu_s=float(data.get("client_cpu_s", 0.0)),
        )


class Recorder:
    """Collects per-request samples during a phase; `result()` summarizes them."""

    __slots__ = ("_errors", "_events", "_itl", "_latency", "_samples", "_ttft", "max_samples")

    def __init__(self, max_samples: int = 5) -> None:
        self._latency: list[float] = []
        self._ttft: list[float] = []
        self._itl: list[float] = []
        self._events = 0
        self._errors = 0
        self._samples: list[str] = []
        self.max_samples = max_samples

    @property
    def completed(self) -> int:
        return len(self._latency) + self._errors

    def success(
        self, latency: float, ttft: float | None = None, gaps: Sequence[float] = (), events: int = 0
    ) -> None:
        self._latency.append(latency)
        if ttft is not None:
            self._ttft.append(ttft)
        self._itl.extend(gaps)
        self._events += events

    def failure(self, description: str) -> None:
        self._errors += 1
        if len(self._samples) < self.max_samples and description not in self._samples:
            self._samples.append(description)

    def result(self, elapsed_s: float, client_cpu_s: float) -> LoadResult:
        ok = len(self._latency)
        return LoadResult(
            ok=ok,
            errors=self._errors,
            error_samples=tuple(self._samples),
            elapsed_s=elapsed_s,
            latency=Summary.of(self._latency),
            ttft=Summary.of(self._ttft),
            itl=Summary.of(self._itl),
            events_per_request=self._events / ok if ok else 0.0,
            client_cpu_s=client_cpu_s,
        )
