"""The markdown report: targets first, then throughput and the latency tables per path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.config import GRPC_PATHS, HTTP_PATHS, MODES, BenchConfig, Scenario
from bench.diagnostics import notes
from bench.format import ms, num, pct
from bench.runner import PhaseRecord
from bench.stats import Summary
from bench.targets import Records, Target


def _verdict(passed: bool | None) -> str:
    return {True: "PASS", False: "**FAIL**", None: "n/a"}[passed]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _targets_section(targets: Sequence[Target]) -> list[str]:
    rows = [[t.scenario, t.name, t.measured, t.threshold, _verdict(t.passed)] for t in targets]
    header = ["scenario", "target", "measured", "threshold", "result"]
    return ["## Targets", "", *_table(header, rows)]


def _throughput_section(config: BenchConfig, records: Records) -> list[str]:
    rows = []
    for scenario in config.scenarios:
        paths = HTTP_PATHS if scenario == "http" else GRPC_PATHS
        floor_path = "floor" if scenario == "http" else "grpc-floor"
        for mode in MODES:
            floor = records.peak(scenario, mode, floor_path)
            for path in paths:
                peak = records.peak(scenario, mode, path)
                if peak is None:
                    rows.append([scenario, mode, path, "-", "-", "-", "-", "-", "-"])
                    continue
                ratio = peak.rps / floor.rps if floor is not None and path != "direct" else None
                cpu = peak.cpu_us_per_request
                capacity = 1e6 / cpu if cpu else None
                rows.append(
                    [
                        scenario,
                        mode,
                        path,
                        f"{peak.rps:.0f}",
                        str(peak.concurrency),
                        peak.tool,
                        num(ratio, ".2f"),
                        num(cpu),
                        num(capacity),
                    ]
                )
    header = [
        "scenario",
        "mode",
        "path",
        "max req/s",
        "at c",
        "driven by",
        "vs floor",
        "server CPU us/req",
        "req/s per busy core",
    ]
    return [
        "## Throughput (best phase of each path)",
        "",
        *_table(header, rows),
        "",
        "Best over every phase of the path: the aiohttp sweep at each concurrency and, where"
        " installed, wrk at the highest concurrency (wrk spends ~40 us of CPU per request on"
        " the shared client core against ~230 us for aiohttp, so it saturates the server"
        " rather than itself). `server CPU us/req` is the CPU the server under test spent per"
        " request in that phase; `req/s per busy core` = 1e6 / that: the capacity if its core"
        " were fully busy, which does not depend on what else shares the machine. For the"
        " gRPC floor the server under test is the bare client process itself.",
    ]


def _baseline(records: Records, scenario: Scenario, rec: PhaseRecord) -> PhaseRecord | None:
    base_path = "direct" if scenario == "http" else "grpc-floor"
    if rec.key.path == base_path:
        return None
    return records.find(scenario, rec.key.mode, rec.key.concurrency, base_path)


def _added(value: Summary, base: Summary, stat: str) -> str:
    return ms(getattr(value, stat) - getattr(base, stat))


def _latency_section(
    config: BenchConfig, scenario: Scenario, records: Records, title: str, base_name: str
) -> list[str]:
    paths = HTTP_PATHS if scenario == "http" else GRPC_PATHS
    rows = []
    for mode in MODES:
        for c in config.concurrency:
            for path in paths:
                rec = records.find(scenario, mode, c, path)
                if rec is None:
                    continue
                res = rec.result
                base = _baseline(records, scenario, rec)
                stream = mode == "stream"
                rows.append(
                    [
                        mode,
                        str(c),
                        path,
                        f"{res.throughput:.0f}",
                        ms(res.latency.p50),
                        ms(res.latency.p99),
                        _added(res.latency, base.result.latency, "p50") if base else "-",
                        _added(res.latency, base.result.latency, "p99") if base else "-",
                        ms(res.ttft.p50) if stream else "-",
                        ms(res.ttft.p99) if stream else "-",
                        _added(res.ttft, base.result.ttft, "p99") if base and stream else "-",
                        ms(res.itl.p99) if stream else "-",
                        f"{res.ok}/{res.errors}",
                        pct(rec.sut_cpu_fraction),
                        num(rec.sut_cpu_us_per_request),
                        *(pct(f) for f in rec.core_busy[:2]),
                    ]
                )
    header = [
        "mode",
        "c",
        "path",
        "req/s",
        "p50 ms",
        "p99 ms",
        "added p50",
        "added p99",
        "TTFT p50",
        "TTFT p99",
        "added TTFT p99",
        "ITL p99",
        "ok/err",
        "server CPU %",
        "server us/req",
        "cpu0 busy %",
        "cpu1 busy %",
    ]
    return [
        title,
        "",
        f"`added` = the path minus {base_name} at the same mode and concurrency (difference of"
        " percentiles). Times in ms. `cpu0`/`cpu1` busy counts every process on that core.",
        "",
        *_table(header, rows),
    ]


def _wrk_section(records: Records) -> list[str]:
    rows = []
    for rec in records.with_tool("wrk"):
        res = rec.result
        rows.append(
            [
                rec.key.scenario,
                rec.key.mode,
                rec.key.path,
                str(rec.key.concurrency),
                f"{res.throughput:.0f}",
                ms(res.latency.p50),
                ms(res.latency.p99),
                f"{res.ok}/{res.errors}",
                pct(rec.sut_cpu_fraction),
                num(rec.sut_cpu_us_per_request),
                pct(rec.client_cpu_fraction),
                *(pct(f) for f in rec.core_busy[:2]),
            ]
        )
    if not rows:
        return []
    header = [
        "scenario",
        "mode",
        "path",
        "c",
        "req/s",
        "p50 ms",
        "p99 ms",
        "ok/err",
        "server CPU %",
        "server us/req",
        "wrk CPU %",
        "cpu0 busy %",
        "cpu1 busy %",
    ]
    return [
        "## Peak throughput driven by wrk",
        "",
        "wrk does not time SSE events: for streams its latency is the whole answer.",
        "",
        *_table(header, rows),
        "",
    ]


def render(
    config: BenchConfig,
    records: Sequence[PhaseRecord],
    targets: Sequence[Target],
    meta: Mapping[str, str],
) -> str:
    lookup = Records(records)
    pin = (
        f"servers under test (gateway, floor proxy, bare gRPC client) on CPU {config.sut_cpu};"
        f" load generators (aiohttp, wrk) on CPU {config.client_cpu}; OpenAI mock and vLLM"
        f" stand-in on CPU {config.upstream_cpu}"
        if config.sut_cpu is not None
        else "not pinned (--no-pin, or no taskset / second CPU): numbers are less isolated"
    )
    lines = [
        f"# Gateway benchmark {meta.get('timestamp', '')}",
        "",
        f"- command: `{config.command}`",
        *(f"- {k}: {v}" for k, v in meta.items() if k != "timestamp"),
        f"- pinning: {pin}",
        "- gateway environment: "
        + (", ".join(f"`{k}={v}`" for k, v in sorted(config.gateway_env.items())) or "defaults"),
        f"- workload: {config.workload.output_tokens} output tokens; upstream TTFT"
        f" {config.ttft_ms:g} ms, ITL {config.itl_ms:g} ms; HTTP path: chat request to model"
        f" `mock`; gRPC path: gateway `/v1/{config.grpc_api}` on model `sim`"
        + (
            f" with {config.workload.prompt_tokens} prompt token ids (the floor sends the same)"
            if config.grpc_api == "completions"
            else " (chat template + tokenization in the gateway; the floor sends token ids)"
        ),
        f"- phases: {config.warmup_s:g} s warm-up + {config.duration_s:g} s measured, closed"
        f" loop at concurrency {', '.join(map(str, config.concurrency))}"
        + (
            f"; {config.rounds} interleaved rounds, each statistic the median over them"
            if config.rounds > 1
            else ""
        )
        + "; gRPC channels"
        f" {config.grpc_channels} (gateway and floor alike)",
        "",
        *_targets_section(targets),
        "",
        *_throughput_section(config, lookup),
        "",
        *_wrk_section(lookup),
    ]
    if "http" in config.scenarios:
        lines += _latency_section(
            config,
            "http",
            lookup,
            "## OpenAI-HTTP path: mock direct vs floor proxy vs gateway",
            "calling the mock directly",
        )
        lines.append("")
    if "grpc" in config.scenarios:
        lines += _latency_section(
            config,
            "grpc",
            lookup,
            "## vLLM gRPC path: bare grpc.aio client vs gateway (model `sim`)",
            "the bare gRPC client",
        )
        lines.append("")
    lines += notes(config, records, lookup)
    return "\n".join(lines) + "\n"
