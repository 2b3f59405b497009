"""The cache stages under their budgets: a hit, an overrun abandoned as `error`, and a stage
whose recent p95 no longer fits skipped up front as `skipped`."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import orjson

from budgets.request_budget import ClassBudgets, RequestBudget
from budgets.settings import BudgetSettings
from cache.entry import CachedAnswer
from cache.exact import ExactCache
from cache.layer import CacheLayer
from cache.memory_store import MemoryExactStore
from cache.semantic import SemanticCache
from cache.settings import CacheSettings
from cache.types import CacheUnavailable
from cache.vector_index_memory import InMemoryVectorIndex
from cache.writeback import WriteBackQueue
from core.answers import Choice, Completion, Usage
from core.breaker import CircuitBreaker
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from gateway.cache_stages import CacheStages
from obs.request_record import RequestRecord
from tests.cache.lookups import tenant_for
from tests.cache.test_semantic_layer import DIMENSIONS, WordEmbedder

ANSWER = Completion([Choice(0, "cached", "stop")], Usage(3, 1))


class SlowStore(MemoryExactStore):
    """A store that answers only after `delay_s`, like Redis behind a congested link."""

    def __init__(self) -> None:
        super().__init__(100)
        self.delay_s = 0.0
        self.reads = 0

    async def get(self, namespace: str, key: str) -> bytes | None:
        self.reads += 1
        await asyncio.sleep(self.delay_s)  # the behaviour under test: a slow store
        return await super().get(namespace, key)


def _body(text: str) -> ChatCompletionRequest:
    payload: dict[str, Any] = {"model": "m", "temperature": 0}
    payload["messages"] = [{"role": "user", "content": text}]
    return parse_request(orjson.dumps(payload), ChatCompletionRequest)


def _budget() -> RequestBudget:
    budgets = ClassBudgets(total_s=30.0, ttft_s=30.0, admission_s=30.0, stall_s=30.0)
    return RequestBudget.start("interactive", budgets, time.monotonic, time.monotonic())


def _record() -> RequestRecord:
    return RequestRecord("POST", "/v1/chat/completions", time.monotonic(), 0)


def _stages(
    store: SlowStore, semantic: SemanticCache | None = None
) -> tuple[CacheStages, CacheLayer]:
    exact = ExactCache(
        store,
        CircuitBreaker(failure_threshold=100, unavailable=CacheUnavailable),
        timeout_s=5.0,
        ttl_s=60,
    )
    settings = replace(CacheSettings(), semantic="off" if semantic is None else "on")
    layer = CacheLayer(settings, exact, semantic, WriteBackQueue(maxsize=10))
    # A clock that never moves: no probe ever re-runs a skipped stage during the test.
    return CacheStages(layer, BudgetSettings(exact_cache_s=0.05), lambda: 0.0), layer


async def test_hit_is_noted_once() -> None:
    """A stored answer is `hit-exact`; the record notes one exact lookup and the status."""
    store = SlowStore()
    stages, layer = _stages(store)
    plan = layer.plan(_body("q"), {}, tenant_for({}))
    assert plan.key is not None
    await store.set(plan.tenant, plan.key, CachedAnswer(ANSWER, 1.0).to_bytes(), 60)
    record = _record()
    outcome = await stages.run(plan, _budget(), record)
    assert outcome.status == "hit-exact" and outcome.answer is not None
    assert record.cache == "hit-exact" and record.cache_lookups == [("exact", "hit")]


async def test_overrun_is_error_then_the_stage_is_skipped() -> None:
    """A lookup past its budget is abandoned (`error`, an overrun). Once the stage's p95 no
    longer fits, the next request probes it once, and the one after skips it up front
    (`skipped`) without calling the store."""
    store = SlowStore()
    store.delay_s = 0.5
    stages, layer = _stages(store)
    first, probe, third = _record(), _record(), _record()
    overrun = await stages.run(layer.plan(_body("a"), {}, tenant_for({})), _budget(), first)
    assert overrun.status == "error" and first.overruns == ["exact_cache"]
    assert (
        await stages.run(layer.plan(_body("b"), {}, tenant_for({})), _budget(), probe)
    ).status == "error"
    skipped = await stages.run(layer.plan(_body("c"), {}, tenant_for({})), _budget(), third)
    assert skipped.status == "skipped" and third.cache == "skipped" and third.overruns == []
    assert third.cache_lookups == [("exact", "skipped")] and store.reads == 2


async def test_a_skipped_exact_stage_skips_the_semantic_one() -> None:
    """The exact stage skipped (its store too slow, or no time left) skips the semantic one
    too: its index is in the same store, and an embedding costs more than the skipped read."""
    store = SlowStore()
    store.delay_s = 0.5
    semantic = SemanticCache(
        WordEmbedder(), InMemoryVectorIndex(dimensions=DIMENSIONS), threshold=0.5, breaker=None,
        timeout_s=5, ttl_s=60,
    )  # fmt: skip
    stages, layer = _stages(store, semantic)
    for text in ("a", "b"):  # an overrun, then the probe: the stage's p95 no longer fits
        await stages.run(layer.plan(_body(text), {}, tenant_for({})), _budget(), _record())
    record = _record()
    outcome = await stages.run(layer.plan(_body("c"), {}, tenant_for({})), _budget(), record)
    assert outcome.status == "skipped" and record.cache_lookups == [("exact", "skipped")]
    assert semantic.stats.lookups == 0


async def test_bypass_runs_no_stage() -> None:
    """A request that may not read the cache runs no stage and says `bypass`."""
    stages, layer = _stages(SlowStore())
    record = _record()
    plan = layer.plan(
        _body("c"), {"cache-control": "no-cache"}, tenant_for({"cache-control": "no-cache"})
    )
    assert (await stages.run(plan, _budget(), record)).status == "bypass"
    assert record.cache_lookups == [] and record.cache == "bypass"
