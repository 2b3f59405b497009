"""Per-request cache decisions: hit, miss, bypass, error, and write-back."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson
import pytest

from cache.entry import CachedAnswer
from cache.exact import ExactCache
from cache.layer import CacheLayer
from cache.memory_store import MemoryExactStore
from cache.outcome import CacheOutcome
from cache.settings import CacheSettings
from cache.types import CacheUnavailable
from cache.writeback import WriteBackQueue
from core.answers import Choice, Completion, Usage
from core.breaker import CircuitBreaker
from core.protocol import ChatCompletionRequest, CompletionRequest
from core.request_parsing import parse_request
from tests.cache.lookups import look, tenant_for

ANSWER = Completion([Choice(0, "cached answer", "stop")], Usage(3, 2))


class DeadStore:
    """A store whose every call fails like an unreachable Redis."""

    async def get(self, namespace: str, key: str) -> bytes | None:
        raise ConnectionError("refused")

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None:
        raise ConnectionError("refused")

    async def aclose(self) -> None:
        pass


def _body(**fields: Any) -> ChatCompletionRequest:
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    return parse_request(orjson.dumps({**payload, **fields}), ChatCompletionRequest)


def _layer(settings: CacheSettings | None = None, store: Any = None) -> CacheLayer:
    breaker = (
        CircuitBreaker(failure_threshold=2, cooldown_s=60, unavailable=CacheUnavailable)
        if store is not None
        else None
    )
    exact = ExactCache(store or MemoryExactStore(100), breaker, timeout_s=1.0, ttl_s=60)
    writeback = WriteBackQueue(maxsize=10)
    writeback.start()
    return CacheLayer(settings or CacheSettings(), exact, None, writeback)


async def _write(layer: CacheLayer, headers: dict[str, str], **fields: Any) -> None:
    outcome = await look(layer, layer.plan(_body(**fields), headers, tenant_for(headers)))
    layer.remember(outcome, ANSWER)
    await layer.writeback.drain(5)


async def test_miss_then_hit() -> None:
    """A written answer is a hit for the same request."""
    layer = _layer()
    await _write(layer, {})
    outcome = await look(layer, layer.plan(_body(), {}, tenant_for({})))
    assert outcome.answer is not None and outcome.status == "hit-exact"


async def test_non_reproducible_requests_bypass() -> None:
    """Sampling without seed or temperature 0, or n > 1, is neither read nor written."""
    layer = _layer()
    for fields in ({"temperature": 0.7}, {"n": 2}):
        plan = layer.plan(_body(**fields), {}, tenant_for({}))
        assert (await look(layer, plan)).status == "bypass" and not plan.read and not plan.write
    assert (
        await look(layer, layer.plan(_body(temperature=0.7, seed=4), {}, tenant_for({})))
    ).status == "miss"


async def test_batched_prompts_bypass() -> None:
    """A batch of prompts is neither read nor written (as n > 1), however reproducible: an
    entry of its first prompt must never answer it, nor it a prompt alone."""
    layer = _layer()
    for prompt in (["a", "b"], [[1, 2], [3]]):
        raw = orjson.dumps({"model": "m", "prompt": prompt, "temperature": 0})
        plan = layer.plan(parse_request(raw, CompletionRequest), {}, tenant_for({}))
        assert (await look(layer, plan)).status == "bypass" and plan.key is None
    single = orjson.dumps({"model": "m", "prompt": ["a"], "temperature": 0})
    assert layer.plan(parse_request(single, CompletionRequest), {}, "t").key is not None


async def test_no_cache_reads_nothing_but_writes() -> None:
    """Cache-Control: no-cache skips the read and still writes."""
    layer = _layer()
    plan = layer.plan(
        _body(), {"cache-control": "no-cache"}, tenant_for({"cache-control": "no-cache"})
    )
    assert (await look(layer, plan)).status == "bypass" and plan.write and not plan.read


async def test_no_store_does_not_write() -> None:
    """Cache-Control: no-store leaves the cache unchanged."""
    layer = _layer()
    await _write(layer, {"cache-control": "no-store"})
    outcome = await look(layer, layer.plan(_body(), {}, tenant_for({})))
    assert outcome.answer is None and outcome.status == "miss"


async def test_max_age_refuses_older_entries() -> None:
    """max-age=N accepts only entries younger than N seconds."""
    now = [1000.0]
    layer = _layer()
    layer._clock = lambda: now[0]
    await _write(layer, {})
    now[0] += 30
    fresh = layer.plan(
        _body(), {"cache-control": "max-age=60"}, tenant_for({"cache-control": "max-age=60"})
    )
    stale = layer.plan(
        _body(), {"cache-control": "max-age=10"}, tenant_for({"cache-control": "max-age=10"})
    )
    assert (await look(layer, fresh)).answer is not None
    assert (await look(layer, stale)).status == "miss"


async def test_tenants_do_not_share() -> None:
    """An answer cached under one bearer token is invisible to another."""
    layer = _layer()
    await _write(layer, {"authorization": "Bearer alice"})
    plan = layer.plan(
        _body(), {"authorization": "Bearer bob"}, tenant_for({"authorization": "Bearer bob"})
    )
    assert (await look(layer, plan)).answer is None


async def test_dead_store_is_error_not_exception() -> None:
    """A failing store yields status error and no answer; writes fail silently."""
    layer = _layer(store=DeadStore())
    outcome = await look(layer, layer.plan(_body(), {}, tenant_for({})))
    assert outcome.answer is None and outcome.status == "error"
    layer.remember(outcome, ANSWER)
    await layer.writeback.drain(5)
    assert layer.writeback.failed == 1


@pytest.mark.parametrize(
    ("mode", "read", "write"), [("read-only", True, False), ("write-only", False, True)]
)
async def test_modes(mode: str, read: bool, write: bool) -> None:
    """read-only never writes; write-only never reads."""
    layer = _layer(replace(CacheSettings(), mode=mode))  # type: ignore[arg-type]
    plan = layer.plan(_body(), {}, tenant_for({}))
    assert (plan.read, plan.write) == (read, write)


async def test_off_bypasses() -> None:
    """GATEWAY_CACHE=off bypasses everything."""
    layer = _layer(replace(CacheSettings(), mode="off"))
    assert (await look(layer, layer.plan(_body(), {}, tenant_for({})))).status == "bypass"


async def test_unfinished_answers_are_not_written() -> None:
    """An answer that did not end with stop or length is not cached."""
    layer = _layer()
    outcome = await look(layer, layer.plan(_body(), {}, tenant_for({})))
    layer.remember(outcome, Completion([Choice(0, "x", "abort")], Usage(1, 1)))
    assert layer.writeback.submitted == 0


class CountingStore(MemoryExactStore):
    """A memory store that counts reads, standing in for a shared store."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(100, clock)
        self.reads = 0

    async def get(self, namespace: str, key: str) -> bytes | None:
        self.reads += 1
        return await super().get(namespace, key)


async def test_near_cache_serves_hot_entries_without_the_store() -> None:
    """After the store confirmed an entry, repeats are answered from the near cache."""
    store = CountingStore()
    exact = ExactCache(store, None, timeout_s=1, ttl_s=60, near=MemoryExactStore(10))
    answer = CachedAnswer(ANSWER, created_at=1.0)
    await exact.put("t", "k", answer)
    assert await exact.get("t", "k") == answer
    assert await exact.get("t", "k") == answer
    assert store.reads == 0


class Clocks:
    """A wall clock (entry ages) and a monotonic one (in-process expiry), moved together."""

    def __init__(self) -> None:
        self.wall = 1_000.0
        self.mono = 50.0

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


async def test_a_near_copy_expires_with_the_entry_it_copies() -> None:
    """A copy made of an entry another gateway wrote 5 s into its 6 s TTL lives 1 s, not the
    near cache's 30: it is never served after the entry's TTL."""
    clocks = Clocks()
    store = CountingStore(clock=lambda: clocks.mono)
    near = MemoryExactStore(10, clock=lambda: clocks.mono)
    exact = ExactCache(
        store, None, timeout_s=1, ttl_s=6, near=near, near_ttl_s=30, clock=lambda: clocks.wall
    )
    await store.set("t", "k", CachedAnswer(ANSWER, created_at=clocks.wall).to_bytes(), 6)
    clocks.advance(5)
    assert await exact.get("t", "k") is not None
    assert await exact.near("t", "k") is not None
    clocks.advance(1.5)
    assert await exact.near("t", "k") is None
    assert await exact.get("t", "k") is None


async def test_no_near_copy_of_an_entry_at_the_end_of_its_life() -> None:
    """An entry read in the last second of its TTL (or past it, on a skewed clock) is served
    but not copied."""
    clocks = Clocks()
    store = CountingStore(clock=lambda: clocks.mono)
    near = MemoryExactStore(10, clock=lambda: clocks.mono)
    exact = ExactCache(store, None, timeout_s=1, ttl_s=6, near=near, clock=lambda: clocks.wall)
    created = clocks.wall - 5.5
    await store.set("t", "k", CachedAnswer(ANSWER, created_at=created).to_bytes(), 6)
    assert await exact.get("t", "k") is not None
    assert await exact.near("t", "k") is None


class TtlStore(MemoryExactStore):
    """Remembers the TTL of each write."""

    def __init__(self) -> None:
        super().__init__(10)
        self.ttls: list[int] = []

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None:
        self.ttls.append(ttl_s)
        await super().set(namespace, key, value, ttl_s)


async def test_an_old_answer_written_back_keeps_its_expiry() -> None:
    """An answer `age_s` old is stored for the TTL less its age; one past it, not at all."""
    store = TtlStore()
    exact = ExactCache(store, None, timeout_s=1, ttl_s=60)
    answer = CachedAnswer(ANSWER, created_at=1.0)
    await exact.put("t", "new", answer)
    await exact.put("t", "old", answer, age_s=45)
    await exact.put("t", "expired", answer, age_s=60)
    assert store.ttls == [60, 15]
    assert await exact.get("t", "expired") is None


async def test_near_cache_keeps_nothing_a_dead_store_refused() -> None:
    """A write the store refused is not served from the near cache either."""
    exact = ExactCache(
        DeadStore(),
        CircuitBreaker(cooldown_s=60, unavailable=CacheUnavailable),
        timeout_s=1,
        ttl_s=60,
        near=MemoryExactStore(10),
    )
    with pytest.raises(CacheUnavailable):
        await exact.put("t", "k", CachedAnswer(ANSWER, created_at=1.0))
    with pytest.raises(CacheUnavailable):
        await exact.get("t", "k")


async def test_near_lookup_never_calls_the_store() -> None:
    """The in-process part alone answers hot entries and never calls the store."""
    store = CountingStore()
    exact = ExactCache(
        store,
        CircuitBreaker(cooldown_s=60, unavailable=CacheUnavailable),
        timeout_s=1,
        ttl_s=60,
        near=MemoryExactStore(10),
    )
    answer = CachedAnswer(ANSWER, created_at=1.0)
    await exact.put("t", "hot", answer)
    assert await exact.near("t", "hot") == answer
    assert await exact.near("t", "cold") is None
    assert store.reads == 0


async def test_a_skipped_exact_stage_is_skipped_not_error() -> None:
    """With no time for the store, a near hit is a hit and anything else is `skipped`."""
    layer = _layer()
    layer._exact = ExactCache(
        CountingStore(),
        CircuitBreaker(unavailable=CacheUnavailable),
        timeout_s=1,
        ttl_s=60,
        near=MemoryExactStore(10),
    )
    await _write(layer, {})
    hot = layer.plan(_body(), {}, tenant_for({}))
    cold = layer.plan(_body(temperature=0, seed=9), {}, tenant_for({}))
    assert (await layer.lookup_near(hot, layer.now())).result == "hit"
    skipped = await layer.lookup_near(cold, layer.now())
    assert skipped.result == "skipped"
    assert CacheOutcome(cold, skipped).status == "skipped"


async def test_an_empty_prompt_version_header_is_the_default_version() -> None:
    """`X-Prompt-Version:` sent empty keys as the configured version, so it cannot reach the
    entries that version retired; a version sent keys apart."""
    layer = _layer(CacheSettings(prompt_version="v2"))
    default = layer.plan(_body(), {}, "t").key
    assert layer.plan(_body(), {"x-prompt-version": ""}, "t").key == default
    assert layer.plan(_body(), {"x-prompt-version": "v1"}, "t").key != default


async def test_a_models_answer_shape_keys_its_entries() -> None:
    """Settings that shape a model's answers (parsers, special tokens) key its entries apart:
    an answer made under others never serves."""
    plain = _layer(CacheSettings(answer_shapes={"m": "||split|auto|"}))
    other = _layer(CacheSettings(answer_shapes={"m": "||control|auto|"}))
    assert plain.plan(_body(), {}, "t").key != other.plan(_body(), {}, "t").key


async def test_no_store_on_a_line_of_its_own_is_honoured() -> None:
    """`Cache-Control` lines are one list: `no-store` next to a `max-age` line still holds."""
    plan = _layer().plan(_body(), {"cache-control": "no-store, max-age=600"}, "t")
    assert not plan.write and plan.read
