"""What the cache scenario measures: each workload's latency and the X-Cache values seen."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.load.stats import Summary, plain


@dataclass(slots=True)
class Measured:
    """One measured workload: latency of the counted responses, and every X-Cache value seen."""

    workload: str
    path: str
    concurrency: int
    tool: str
    requests: int = 0
    errors: int = 0
    elapsed_s: float = 0.0
    latency: Summary = field(default_factory=lambda: Summary.of([]))
    xcache: dict[str, int] = field(default_factory=dict)
    counted: int = 0  # responses whose latency is in `latency` (the accepted X-Cache values)
    note: str = ""
    semantic: dict[str, int] = field(default_factory=dict)  # the gateway's lookups by result

    @property
    def rps(self) -> float:
        return self.requests / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def counted_rps(self) -> float:
        """Rate of the counted responses only (for exact hits: hits per second)."""
        return self.counted / self.elapsed_s if self.elapsed_s > 0 else math.nan

    @property
    def hit_rate(self) -> float:
        total = sum(self.xcache.values())
        hits = self.xcache.get("hit-exact", 0) + self.xcache.get("hit-semantic", 0)
        return hits / total if total else math.nan

    def to_json(self) -> dict[str, Any]:
        return plain({**asdict(self), "rps": self.rps})


@dataclass(slots=True)
class CacheResults:
    measured: list[Measured] = field(default_factory=list)
    semantic_checked: dict[str, str] = field(default_factory=dict)  # paraphrase -> X-Cache
    embedding: Summary | None = None  # on the gateway's backend
    embedding_note: str = ""
    embedding_torch: Summary | None = None  # the same model on torch, for the ratio
    notes: list[str] = field(default_factory=list)

    def find(self, workload: str, path: str, concurrency: int | None = None) -> Measured | None:
        for m in self.measured:
            if (m.workload, m.path) == (workload, path) and concurrency in (None, m.concurrency):
                return m
        return None

    def best(self, path: str) -> Measured | None:
        """A path's best exact-hit phase above c=1 by hits per second."""
        rows = [
            m
            for m in self.measured
            if m.workload == "exact hit" and m.path == path and m.concurrency > 1 and m.requests
        ]
        return max(rows, key=lambda m: m.counted_rps) if rows else None
