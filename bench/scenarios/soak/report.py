"""report.md of a soak: the setup, the verdict with its figures, the traffic per phase and
per fault, and the charts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.report.format import num
from bench.report.markdown import env_list, table
from bench.scenarios.soak.config import SoakConfig
from bench.scenarios.soak.faults import DESCRIPTIONS, FaultWindow
from bench.scenarios.soak.mix import WEIGHTS
from bench.scenarios.soak.tasks import METRIC
from bench.scenarios.soak.totals import Totals
from bench.scenarios.soak.verdict import Verdict

PER_RUN = frozenset(
    ("GATEWAY_HOST", "GATEWAY_PORT", "GATEWAY_BACKENDS", "GATEWAY_REDIS_URL",
     "GATEWAY_TOKENIZER_CACHE_DIR")
)  # fmt: skip


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {n}" for k, n in counts.items()) or "-"


def _totals_rows(rows: Sequence[Totals]) -> list[list[str]]:
    return [
        [
            t.name, str(t.answered), num(t.rps, ".1f"), str(t.ok), str(t.errors),
            num(t.p50_ms, ".1f"), num(t.p99_ms, ".1f"), num(t.max_ms, ".0f"),
            _counts(t.outcomes),
        ]
        for t in rows
    ]  # fmt: skip


TOTALS_HEADER = ["slice", "answered", "req/s", "ok", "errors", "p50 ms", "p99 ms", "max ms",
                 "answers by kind"]  # fmt: skip


def breakdown_table(rows: Sequence[tuple[str, float, float]]) -> list[str]:
    cells = [
        [name, num(head, ".1f"), num(tail, ".1f"), f"{tail - head:+.1f}"]
        for name, head, tail in rows
    ]
    return table(["figure", "after warm-up", "at the end", "change"], cells)


def verdict_table(verdict: Verdict) -> list[str]:
    rows = [
        [c.name, num(c.head, ".1f"), num(c.tail, ".1f"), c.change, c.limit,
         "-" if c.passed is None else "pass" if c.passed else "FAIL"]
        for c in verdict.checks
    ]  # fmt: skip
    return table(["figure", "after warm-up", "at the end", "change", "limit", "result"], rows)


def render(
    config: SoakConfig,
    meta: Mapping[str, str],
    env: Mapping[str, str],
    verdict: Verdict,
    phases: Sequence[Totals],
    faults: Sequence[Totals],
    windows: Sequence[FaultWindow],
    sent: int,
    lag_s: float,
    breakdown: Sequence[tuple[str, float, float]] = (),
) -> str:
    mix = ", ".join(f"{k} {v:.0%}" for k, v in WEIGHTS.items())
    kinds = sorted({w.kind for w in windows})
    lines = [
        f"# Soak {meta.get('timestamp', '')}",
        "",
        f"- command: `{config.command}`",
        *(f"- {k}: {v}" for k, v in meta.items() if k != "timestamp"),
        f"- traffic: {config.duration_s:g} s of Poisson arrivals at {config.rate:g} req/s"
        f" ({sent} sent; the client fell at most {lag_s * 1000:.0f} ms behind schedule),"
        f" mix: {mix}; every request with `X-Request-Timeout-Ms: {config.budget_ms}`",
        f"- gateway: {config.workers} uvicorn workers,"
        f" {env_list({k: v for k, v in env.items() if k not in PER_RUN})}",
        "- upstreams: two vLLM stand-ins and Redis Stack, each behind a fault proxy",
        f"- faults: every {config.fault_every_s:g} s for {config.fault_s:g} s, in rotation: "
        + "; ".join(f"{k}: {DESCRIPTIONS[k]}" for k in kinds),
        f"- samples every {config.sample_s:g} s; warm-up: the first"
        f" {config.warmup_fraction:.0%} ({config.warmup_s:g} s)",
        "",
        f"## Verdict: {verdict.word}",
        "",
        f"After the warm-up, leaving out samples during a fault and {verdict.recovery_s:g} s after"
        f" it ({verdict.steady_samples} steady samples), the median of the first"
        f" {verdict.window_samples} is compared with the median of the last"
        f" {verdict.window_samples}: RSS must grow < 5%, open fds (less client connections"
        " open at both ends: the load generator's pool) and asyncio tasks stay flat.",
        "",
        *verdict_table(verdict),
        *(["", *(f"- {note}" for note in verdict.notes)] if verdict.notes else []),
        "",
        *(
            [
                "Where it went (the same windows, summed over the workers; descriptors by the"
                " port at the other end):",
                "",
                *breakdown_table(breakdown),
                "",
            ]
            if breakdown
            else []
        ),
        "## Traffic",
        "",
        "Latency counts from the scheduled instant, of successful answers (200, streams with"
        " output and `[DONE]`); `4xx expected` are the deliberately bad requests.",
        "",
        *table(TOTALS_HEADER, _totals_rows(phases)),
        "",
        f"Cache results of the successful answers (whole run): {_counts(phases[0].cache)}",
        "",
        "## Faults",
        "",
        *table(TOTALS_HEADER, _totals_rows(faults)),
        "",
        "## Charts",
        "",
        "![soak](soak.png)",
        "",
        "`throughput.png`, `latency.png`, `errors.png`, `rss.png`, `fds.png`, `tasks.png`;"
        " every sample in `samples.json` and `samples.csv`, every answer in `requests.csv`.",
    ]
    if not any(c.name.startswith("asyncio tasks") and c.passed is not None for c in verdict.checks):
        lines += [
            "",
            f"Asyncio tasks are not measured: the gateway exported no `{METRIC}` gauge"
            " (per worker, set to `len(asyncio.all_tasks())` by the metrics sampler).",
        ]
    return "\n".join(lines) + "\n"
