"""`python -m bench --scenario cache`: the gateway's caches against Redis Stack, in one run.

Redis Stack and the vLLM stand-in share the upstream core, the gateway (GATEWAY_REDIS_URL set,
GATEWAY_CACHE=on, GATEWAY_SEMANTIC_CACHE=on) and a bare Starlette JSON endpoint (the floor of
an exact hit) share the server core, and this process drives the load from the client core
(aiohttp closed loops; wrk counting `X-Cache` for peak throughput). Workloads: exact hits (c=1
latency, peak req/s), semantic hits on paraphrases (c=1 latency, beside the embedding alone in
this process), Zipf-distributed prompts against an all-miss run, and all-miss runs at the
throughput concurrencies, where concurrent embeddings queue on the gateway's encoder (its
`/metrics` say how many semantic lookups ran, were skipped for their budget, or overran).
"""

from __future__ import annotations

import asyncio
import functools
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.config import BenchConfig
from bench.harness import interrupts
from bench.harness.probes import HOST, free_port
from bench.harness.processes import ProcessGroup, ProcessSpec
from bench.harness.redis_stack import ping, server_command
from bench.harness.run import ScenarioRun
from bench.load.stats import Summary
from bench.report.format import ms
from bench.scenarios.cache.client import (
    closed_loop,
    once,
    run_wrk,
    semantic_lookups,
    until_looked_up,
    warm,
)
from bench.scenarios.cache.report import render, targets
from bench.scenarios.cache.results import CacheResults, Measured
from bench.scenarios.cache.workloads import (
    EXACT_PROMPT,
    PARAPHRASES,
    ZIPF_PROMPTS,
    ZIPF_S,
    chat_body,
    new_prompts,
    repeat_fraction,
    zipf_prompts,
    zipf_sequence,
)
from bench.servers.start import sim_backend, start_gateway, start_reference, start_sim
from cache.settings import CacheSettings, EmbeddingBackend, EmbeddingPrecision

PATH = "/v1/chat/completions"
THROUGHPUT_LEVELS = (16, 64)
_MAX_C1_REQUESTS = 20_000
_EMBED_SAMPLES = 200
_REFERENCE_MIN_DURATION_S = 1.0


def gateway_env(config: BenchConfig) -> dict[str, str]:
    """The run's gateway environment with both caches on (GATEWAY_REDIS_URL is added later)."""
    return {**config.gateway_env, "GATEWAY_CACHE": "on", "GATEWAY_SEMANTIC_CACHE": "on"}


def start_cache_stack(
    config: BenchConfig, group: ProcessGroup, say: Callable[[str], None]
) -> tuple[str, str]:
    """Redis Stack and the stand-in on the upstream core; gateway and bare Starlette on the
    server core; each waited for until ready. The gateway's and bare Starlette's URLs."""
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        port = free_port()
        argv, env = server_command(port, Path(tempfile.mkdtemp(prefix="redis-", dir=group.log_dir)))
        redis = group.start(ProcessSpec("redis-stack", argv, cpu=config.upstream_cpu, env=env))
        took = redis.wait_ready(lambda: ping(port), config.startup_timeout_s, "PING")
        say(f"redis stack ready on :{port} ({took:.1f} s)")
        redis_url = f"redis://{HOST}:{port}/0"
    sim = start_sim(config, group).ready(config, say)
    env = {**gateway_env(config), "GATEWAY_REDIS_URL": redis_url}
    gateway = start_gateway(config, group, sim_backend(sim.port), env)
    bare = start_reference(config, group, "bare-starlette", "bench.servers.bare_starlette")
    bare.ready(config, say)
    gateway.ready(config, say, " with the caches on")
    return gateway.url(PATH), bare.url(PATH)


def embedding_settings(config: BenchConfig) -> CacheSettings:
    """The run's gateway cache settings, as the gateway reads them (`--gateway-env` may choose
    the embedding backend and precision)."""
    return CacheSettings.from_env(gateway_env(config))


async def _embedding_alone(
    texts: Sequence[str],
    samples: int,
    backend: EmbeddingBackend,
    precision: EmbeddingPrecision = "fp32",
) -> Summary:
    from cache.embedder import SentenceEmbedder

    load = functools.partial(SentenceEmbedder.load, backend=backend, precision=precision, threads=1)
    embedder = await asyncio.to_thread(load)
    try:
        for text in texts:
            await embedder.embed(text)
        took: list[float] = []
        for i in range(samples):
            interrupts.check()
            start = time.perf_counter()
            await embedder.embed(texts[i % len(texts)])
            took.append(time.perf_counter() - start)
        return Summary.of(took)
    finally:
        await embedder.aclose()


async def _exact(
    config: BenchConfig, out: CacheResults, gw: str, bare: str, say: Callable[[str], None]
) -> None:
    body = chat_body(EXACT_PROMPT, config.workload.output_tokens)
    value = await warm(config, gw, body)
    if value != "hit-exact":
        out.notes.append(f"the exact prompt never became a hit (last X-Cache: {value})")
    say(f"exact prompt warmed: X-Cache {value}")
    hit = frozenset({"hit-exact"})
    c1_max = min(config.max_requests, _MAX_C1_REQUESTS)
    for path, url in (("bare starlette", bare), ("gateway", gw)):
        m = await closed_loop(
            config, Measured("exact hit", path, 1, "aiohttp"), url, lambda _i: body, hit,
            config.warmup_s, c1_max,
        )  # fmt: skip
        out.measured.append(m)
        say(f"exact c=1 {path}: p50 {ms(m.latency.p50)} ms, X-Cache {m.xcache}")
    for level in THROUGHPUT_LEVELS:
        for path, url in (("bare starlette", bare), ("gateway", gw)):
            if config.wrk is not None:
                m = run_wrk(config, Measured("exact hit", path, level, "wrk"), url, body)
            else:
                m = await closed_loop(
                    config, Measured("exact hit", path, level, "aiohttp"), url, lambda _i: body,
                    hit, config.warmup_s, config.max_requests,
                )  # fmt: skip
            out.measured.append(m)
            say(f"exact c={level} {path}: {m.rps:.0f} req/s, X-Cache {m.xcache}")


async def _semantic(
    config: BenchConfig, out: CacheResults, gw: str, say: Callable[[str], None]
) -> list[str]:
    tokens = config.workload.output_tokens
    for stored, _asked in PARAPHRASES:
        value = await warm(config, gw, chat_body(stored, tokens))
        if value != "hit-exact":
            out.notes.append(f"stored question {stored!r} never became a hit ({value})")
    fresh = new_prompts(f"ready-{os.getpid()}-{time.time_ns()}", 200)
    ready = await until_looked_up(config, gw, (chat_body(text, tokens) for text in fresh))
    if ready != "miss":
        out.notes.append(f"the semantic stage did not run within its budget ({ready})")
    for _stored, asked in PARAPHRASES:
        out.semantic_checked[asked] = await once(config, gw, chat_body(asked, tokens))
    good = [asked for asked, value in out.semantic_checked.items() if value == "hit-semantic"]
    say(f"paraphrases answered hit-semantic: {len(good)} of {len(PARAPHRASES)}")
    if not good:
        out.notes.append("no paraphrase was answered hit-semantic: semantic hits unmeasured")
        return good
    bodies = [chat_body(text, tokens) for text in good]
    m = await closed_loop(
        config, Measured("semantic hit", "gateway", 1, "aiohttp"), gw,
        lambda i: bodies[i % len(bodies)], frozenset({"hit-semantic"}), config.warmup_s,
        min(config.max_requests, _MAX_C1_REQUESTS),
    )  # fmt: skip
    out.measured.append(m)
    say(f"semantic c=1: p50 {ms(m.latency.p50)} ms, X-Cache {m.xcache}")
    return good


async def _mixed(
    config: BenchConfig, out: CacheResults, gw: str, say: Callable[[str], None]
) -> None:
    """Zipf-distributed prompts, then as many prompts never seen before."""
    tokens = config.workload.output_tokens
    c1_max = min(config.max_requests, _MAX_C1_REQUESTS)
    prompts = zipf_prompts(ZIPF_PROMPTS)
    sequence = zipf_sequence(ZIPF_PROMPTS, min(config.max_requests, 100_000), ZIPF_S)
    mixed = await closed_loop(
        config, Measured("mixed (Zipf)", "gateway", 1, "aiohttp"), gw,
        lambda i: chat_body(prompts[sequence[i % len(sequence)]], tokens), None, 0.0,
        min(c1_max, len(sequence)),
    )  # fmt: skip
    drawn = sequence[: mixed.requests + mixed.errors]
    mixed.note = (
        f"{ZIPF_PROMPTS} prompts, s={ZIPF_S}; the {len(drawn)} draws repeat an earlier one"
        f" {repeat_fraction(drawn) * 100:.0f}% of the time"
    )
    misses = new_prompts(f"{os.getpid()}-{time.time_ns()}", 2000)
    miss = await closed_loop(
        config, Measured("all miss", "gateway", 1, "aiohttp"), gw,
        lambda i: chat_body(misses[i % len(misses)], tokens), frozenset({"miss"}), 0.0,
        min(c1_max, len(misses)),
    )  # fmt: skip
    miss.note = (
        "every prompt new (random words + a run nonce); only responses answered `miss` are"
        " counted (a new prompt can still be a semantic hit on an earlier one)"
    )
    out.measured += [mixed, miss]
    say(f"mixed: X-Cache {mixed.xcache}; all-miss: X-Cache {miss.xcache}")


def _nth_body(prompts: Sequence[str], max_tokens: int, i: int) -> bytes:
    return chat_body(prompts[i % len(prompts)], max_tokens)


async def _concurrent_misses(
    config: BenchConfig, out: CacheResults, gw: str, say: Callable[[str], None]
) -> None:
    """Prompts never seen before from many clients at once: every one is embedded, so the
    encoder's queue, not Redis, decides how many lookups fit their budget."""
    metrics = gw.removesuffix(PATH) + "/metrics"
    tokens = config.workload.output_tokens
    for level in THROUGHPUT_LEVELS:
        count = min(config.max_requests, _MAX_C1_REQUESTS)
        misses = new_prompts(f"c{level}-{os.getpid()}-{time.time_ns()}", count)
        before = await semantic_lookups(config, metrics)
        m = await closed_loop(
            config, Measured("all miss", "gateway", level, "aiohttp"), gw,
            functools.partial(_nth_body, misses, tokens),
            frozenset({"miss"}), 0.0, len(misses),
        )  # fmt: skip
        after = await semantic_lookups(config, metrics)
        m.semantic = {result: n - before[result] for result, n in after.items()}
        out.measured.append(m)
        say(f"all miss c={level}: {m.rps:.0f} req/s, semantic lookups {m.semantic}")


async def measure(
    config: BenchConfig, gw: str, bare: str, say: Callable[[str], None]
) -> CacheResults:
    """Every workload, in order: exact hits, semantic hits, mixed, concurrent misses; then the
    embedding alone."""
    out = CacheResults()
    await _exact(config, out, gw, bare, say)
    good = await _semantic(config, out, gw, say)
    await _mixed(config, out, gw, say)
    await _concurrent_misses(config, out, gw, say)
    # the embedding alone, in this process (client core), on the measured paraphrases
    texts = good or [asked for _stored, asked in PARAPHRASES]
    settings = embedding_settings(config)
    backend, precision = settings.embedding_backend, settings.embedding_precision
    try:
        out.embedding = await _embedding_alone(texts, _EMBED_SAMPLES, backend, precision)
        out.embedding_note = (
            f"SentenceEmbedder.load(backend={backend!r}, precision={precision!r}, threads=1)"
            " in the bench process"
            f" (CPU {config.client_cpu}), {_EMBED_SAMPLES} embeds of the {len(texts)}"
            " paraphrases one at a time"
        )
    except Exception as exc:  # the gateway measurements stand without it
        out.embedding_note = f"could not measure: {type(exc).__name__}: {exc}"
    # The same model on torch, as a ratio within this run; quick runs skip its seconds of load.
    if backend == "onnx" and config.duration_s >= _REFERENCE_MIN_DURATION_S:
        try:
            out.embedding_torch = await _embedding_alone(texts, _EMBED_SAMPLES, "torch")
        except Exception as exc:
            out.notes.append(f"torch reference embedding not measured: {exc!r}")
    return out


def execute(config: BenchConfig) -> int:
    """Run the cache scenario end to end; the process exit status."""
    run = ScenarioRun(config.out_dir)
    results = CacheResults()
    with run.processes(config.client_cpu) as group:
        gw, bare = start_cache_stack(config, group, run.say)
        results = asyncio.run(measure(config, gw, bare, run.say))
    if not results.measured:
        return run.status
    env = {**gateway_env(config), "GATEWAY_REDIS_URL": "(private Redis Stack)"}
    run.finish(
        config.command,
        render(config, results, run.meta, env),
        {
            "cache": [m.to_json() for m in results.measured],
            "semantic_checked": results.semantic_checked,
            "embedding": results.embedding.to_json() if results.embedding else None,
            "embedding_torch": (
                results.embedding_torch.to_json() if results.embedding_torch else None
            ),
            "targets": [t.to_json() for t in targets(results)],
        },
    )
    if any(m.requests == 0 for m in results.measured):
        run.unmeasured("some cache workloads had no successful response")
    return run.status
