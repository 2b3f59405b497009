"""The cache scenario's targets (exact-hit latency and throughput, semantic-hit latency) and
its markdown report."""

from __future__ import annotations

import math

from bench.config import BenchConfig
from bench.report.format import ms, num
from bench.report.markdown import UNPINNED, Target, env_list, header, table, targets_section
from bench.scenarios.cache.results import CacheResults, Measured
from bench.servers.start import SIM_MODEL

EXACT_P50_MS = 1.0
EXACT_P99_MS = 3.0
EXACT_RPS = 2500.0
SEMANTIC_P50_MS = 10.0


def _latency_target(name: str, m: Measured | None, stat: str, limit_ms: float) -> Target:
    value = getattr(m.latency, stat) * 1000 if m and m.counted else math.nan
    passed = None if math.isnan(value) else value <= limit_ms
    return Target("cache", name, f"{num(value, '.3f')} ms", f"<= {limit_ms:g} ms", passed)


def targets(results: CacheResults) -> list[Target]:
    """Exact-hit latency and throughput, semantic-hit latency."""
    exact = results.find("exact hit", "gateway", 1)
    rows = [
        _latency_target("exact hit p50 at c=1", exact, "p50", EXACT_P50_MS),
        _latency_target("exact hit p99 at c=1", exact, "p99", EXACT_P99_MS),
    ]
    peak, floor = results.best("gateway"), results.best("bare starlette")
    name, threshold = "exact hit max throughput", f">= {EXACT_RPS:.0f} req/s"
    if peak is None:
        rows.append(Target("cache", name, "-", threshold, None))
    else:
        ratio = f"; {peak.counted_rps / floor.counted_rps:.2f} x bare Starlette" if floor else ""
        measured = f"{peak.counted_rps:.0f} req/s at c={peak.concurrency} {peak.tool}{ratio}"
        rows.append(Target("cache", name, measured, threshold, peak.counted_rps >= EXACT_RPS))
    semantic = results.find("semantic hit", "gateway")
    rows.append(_latency_target("semantic hit p50 at c=1", semantic, "p50", SEMANTIC_P50_MS))
    return rows


def _xcache(m: Measured) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(m.xcache.items())) or "-"


def _notes(config: BenchConfig, results: CacheResults) -> list[str]:
    lines = []
    sem = results.find("semantic hit", "gateway")
    checked = results.semantic_checked
    if checked:
        hits = sum(v == "hit-semantic" for v in checked.values())
        lines.append(
            f"- semantic check: {hits} of {len(checked)} paraphrases answered hit-semantic"
            " before measuring ("
            + "; ".join(f"{q!r}: {v}" for q, v in checked.items())
            + "); only hit-semantic responses are counted"
            + (f"; measured hit fraction {sem.hit_rate * 100:.0f}%" if sem else "")
        )
    embedding = results.embedding
    if embedding is not None:
        share = (
            f", {embedding.p50 / sem.latency.p50 * 100:.0f}% of the semantic-hit p50"
            if sem and sem.counted
            else ""
        )
        lines.append(
            f"- embedding alone: p50 {ms(embedding.p50)} ms, p99 {ms(embedding.p99)} ms{share}"
            f" ({results.embedding_note}; the gateway embeds on its own thread on CPU"
            f" {config.sut_cpu}, sharing that core with its event loop)"
        )
        reference = results.embedding_torch
        if reference is not None:
            lines.append(
                f"- the same model on torch (sentence-transformers), same process and texts:"
                f" p50 {ms(reference.p50)} ms, p99 {ms(reference.p99)} ms"
                f" ({embedding.p50 / reference.p50:.2f} x torch at p50)"
            )
    else:
        lines.append(f"- embedding alone: {results.embedding_note}")
    lines += [f"- {m.workload}: {m.note}" for m in results.measured if m.note]
    for m in results.measured:
        if m.semantic:
            counts = ", ".join(f"{k} {n}" for k, n in sorted(m.semantic.items()))
            lines.append(
                f"- {m.workload} at c={m.concurrency}: the gateway's semantic lookups while it"
                f" ran ({counts}): `skipped`, the stage's recent p95 did not fit its budget;"
                " `error`, a lookup failed or overran its time (the stage's budget or"
                " `GATEWAY_SEMANTIC_TIMEOUT_MS`)"
            )
    lines.append(
        "- exact-hit throughput: bare Starlette and gateway back to back at each concurrency;"
        " `counted` is the responses that were hits (the bare endpoint always says hit-exact)"
    )
    for m in results.measured:
        if m.workload == "exact hit" and m.counted < m.requests:
            lines.append(
                f"- **exact hit, {m.path} at c={m.concurrency}: {m.requests - m.counted} of"
                f" {m.requests} responses were not hit-exact** ({_xcache(m)}); throughput"
                " targets use hits per second only"
            )
    return lines + [f"- note: {n}" for n in results.notes]


def render(
    config: BenchConfig, results: CacheResults, meta: dict[str, str], env: dict[str, str]
) -> str:
    """The markdown report: targets, then every workload's table."""
    pin = (
        f"gateway and bare Starlette on CPU {config.sut_cpu}; load (aiohttp, wrk) and this"
        f" process on CPU {config.client_cpu}; Redis Stack and the stand-in on CPU"
        f" {config.upstream_cpu}"
        if config.sut_cpu is not None
        else UNPINNED
    )
    rows = []
    for m in results.measured:
        latency = [ms(m.latency.p50), ms(m.latency.p99), num(m.rps), num(m.hit_rate * 100)]
        cells = [str(m.concurrency), m.tool, str(m.requests), _xcache(m), str(m.counted)]
        rows.append([m.workload, m.path, *cells, *latency])
    head = ["workload", "path", "c", "driven by", "requests", "X-Cache", "counted", "p50 ms"]
    head += ["p99 ms", "req/s", "hit rate %"]
    lines = [
        *header(": cache scenario", config.command, meta, pin),
        f"- gateway environment: {env_list(env)}",
        f"- workload: non-streaming chat requests (temperature 0) to model `{SIM_MODEL}` (vLLM"
        f" stand-in over gRPC), {config.workload.output_tokens} output tokens; c=1 phases"
        f" {config.warmup_s:g} s warm-up + {config.duration_s:g} s measured",
        "",
        *targets_section(targets(results)),
        "",
        "## Cache",
        "",
        *table(head, rows),
        "",
        *_notes(config, results),
    ]
    return "\n".join(lines) + "\n"
