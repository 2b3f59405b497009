"""Where the gateway workers' memory and descriptors went between the verdict's two windows:
RSS split into anonymous (heap) and file-backed memory, descriptors by kind (clients, Redis,
each replica, pipes, epoll ...), summed over the workers."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from bench.scenarios.soak.faults import FaultWindow
from bench.scenarios.soak.samples import Sample
from bench.scenarios.soak.verdict import MIN_WINDOW, steady

Row = tuple[str, float, float]


def _workers_total(s: Sample, value: Callable[..., float]) -> float:
    return sum(value(p) for p in s.processes if p.role == "worker")


def _fds_of(kind: str) -> Callable[[Sample], float]:
    return lambda s: _workers_total(s, lambda p: p.fd_kinds.get(kind, 0))


def rows(samples: Sequence[Sample], warmup_s: float, faults: Sequence[FaultWindow]) -> list[Row]:
    """(figure, median over the head window, median over the tail window); empty when the
    run had too few steady samples."""
    calm = steady(samples, warmup_s, faults)
    if len(calm) < 2 * MIN_WINDOW:
        return []
    size = max(MIN_WINDOW, len(calm) // 10)
    head, tail = calm[:size], calm[-size:]

    def row(name: str, value: Callable[[Sample], float]) -> Row:
        return (
            name,
            statistics.median(value(s) for s in head),
            statistics.median(value(s) for s in tail),
        )

    found = [
        row(
            "RSS anonymous, workers (MiB)",
            lambda s: _workers_total(s, lambda p: p.rss_anon_kib) / 1024,
        ),
        row(
            "RSS file-backed, workers (MiB)",
            lambda s: _workers_total(s, lambda p: p.rss_kib - p.rss_anon_kib) / 1024,
        ),
        row("threads, workers", lambda s: _workers_total(s, lambda p: p.threads)),
    ]
    kinds = sorted({k for s in calm for p in s.processes if p.role == "worker" for k in p.fd_kinds})
    for kind in kinds:
        found.append(row(f"fds {kind}, workers", _fds_of(kind)))
    return found
