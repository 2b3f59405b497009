"""The soak's charts over time, fault windows shaded: throughput, p50/p99, errors by kind, RSS
per process, open descriptors, asyncio tasks; one PNG each and `soak.png` with all six."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.scenarios.soak.faults import FaultWindow
from bench.scenarios.soak.samples import Sample

_FAULT_COLORS = {
    "replica-partition": "tab:red",
    "redis-blackhole": "tab:purple",
    "replica-errors": "tab:orange",
    "replica-reset": "tab:brown",
}
Panel = Callable[[Any, Sequence[Sample]], None]


def _times(samples: Sequence[Sample]) -> list[float]:
    return [s.t_s for s in samples]


def _throughput(ax: Any, samples: Sequence[Sample]) -> None:
    t = _times(samples)
    ax.plot(t, [s.throughput_rps for s in samples], label="answered")
    ax.plot(t, [s.ok_rps for s in samples], label="ok")
    ax.set_ylabel("req/s")
    ax.set_title("throughput")


def _latency(ax: Any, samples: Sequence[Sample]) -> None:
    t = _times(samples)
    ax.plot(t, [s.p50_ms for s in samples], label="p50")
    ax.plot(t, [s.p99_ms for s in samples], label="p99")
    ax.set_yscale("log")
    ax.set_ylabel("ms (successful answers)")
    ax.set_title("latency")


def _errors(ax: Any, samples: Sequence[Sample]) -> None:
    t = _times(samples)
    labels = sorted({k for s in samples for k in s.outcomes if k != "ok"})
    for label in labels:
        style = {"color": "tab:gray", "linestyle": "--"} if label == "4xx expected" else {}
        ys = [s.outcomes.get(label, 0) / s.interval_s for s in samples]
        ax.plot(t, ys, label=label, **style)
    ax.set_ylabel("per second")
    ax.set_title("answers other than ok, by kind")


def _per_process(value: Callable[[Any], float], title: str, unit: str) -> Panel:
    def draw(ax: Any, samples: Sequence[Sample]) -> None:
        roles = {p.pid: p.role for s in samples for p in s.processes}
        for pid in sorted(roles, key=lambda p: (roles[p] != "parent", roles[p], p)):
            points = [(s.t_s, value(p)) for s in samples for p in s.processes if p.pid == pid]
            ax.plot([x for x, _ in points], [y for _, y in points], label=f"{roles[pid]} {pid}")
        ax.set_ylabel(unit)
        ax.set_title(title)

    return draw


def _tasks(ax: Any, samples: Sequence[Sample]) -> None:
    pids = sorted({pid for s in samples if s.tasks for pid in s.tasks})
    for pid in pids:
        ys = [math.nan if not s.tasks else s.tasks.get(pid, math.nan) for s in samples]
        ax.plot(_times(samples), ys, label=f"worker {pid}")
    if not pids:
        ax.text(0.5, 0.5, "not exported by the gateway\n(gateway_event_loop_tasks)",
                ha="center", va="center", transform=ax.transAxes)  # fmt: skip
    ax.set_ylabel("tasks")
    ax.set_title("asyncio tasks per worker")


PANELS: dict[str, Panel] = {
    "throughput": _throughput,
    "latency": _latency,
    "errors": _errors,
    "rss": _per_process(lambda p: p.rss_kib / 1024, "RSS per gateway process", "MiB"),
    "fds": _per_process(lambda p: p.fds, "open file descriptors per process", "fds"),
    "tasks": _tasks,
}


def _decorate(
    ax: Any, faults: Sequence[FaultWindow], warmup_s: float, end_s: float, key: bool
) -> None:
    """Fault windows shaded, the end of the warm-up marked; named in the legend if `key`."""
    seen: set[str] = set()
    for w in faults:
        label = None if w.kind in seen or not key else w.kind
        seen.add(w.kind)
        ax.axvspan(w.start_s, w.end_s, color=_FAULT_COLORS[w.kind], alpha=0.15, label=label)
    ax.axvline(warmup_s, color="tab:gray", linestyle=":", label="end of warm-up" if key else None)
    ax.set_xlim(0, end_s)
    ax.set_xlabel("seconds")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="x-small", loc="upper left", ncol=2)


def write_plots(
    samples: Sequence[Sample], faults: Sequence[FaultWindow], warmup_s: float, out_dir: Path
) -> list[Path]:
    """<panel>.png for each panel and soak.png with all of them; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end = max((s.t_s for s in samples), default=1.0)
    written: list[Path] = []
    for name, draw in PANELS.items():
        fig, ax = plt.subplots(figsize=(9, 3.6))
        draw(ax, samples)
        _decorate(ax, faults, warmup_s, end, key=True)
        fig.tight_layout()
        written.append(out_dir / f"{name}.png")
        fig.savefig(written[-1], dpi=90)
        plt.close(fig)
    fig, axes = plt.subplots(3, 2, figsize=(13, 10.5))
    for i, (ax, draw) in enumerate(zip(axes.flat, PANELS.values(), strict=True)):
        draw(ax, samples)
        _decorate(ax, faults, warmup_s, end, key=i == 0)
    fig.tight_layout()
    written.append(out_dir / "soak.png")
    fig.savefig(written[-1], dpi=72)
    plt.close(fig)
    return written
