"""The semantic stage inside the cache layer: serving in `on` mode, measuring in `shadow`."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from dataclasses import replace
from typing import Any

import numpy as np
import orjson

from cache.entry import CachedAnswer
from cache.error_bound import ErrorBound
from cache.exact import ExactCache
from cache.keys import KeyContext, SemanticQuery, semantic_query
from cache.layer import CacheLayer
from cache.memory_store import MemoryExactStore
from cache.semantic import SemanticCache
from cache.semantic_defaults import MAX_SEMANTIC_CHARS
from cache.settings import CacheSettings
from cache.types import CacheUnavailable, Vector
from cache.vector_index_memory import InMemoryVectorIndex
from cache.writeback import WriteBackQueue
from core.answers import Choice, Completion, Usage
from core.breaker import CircuitBreaker
from core.protocol import ChatCompletionRequest
from core.request_parsing import parse_request
from tests.cache.lookups import look, tenant_for

DIMENSIONS = 8


class WordEmbedder:
    """Bag-of-words vectors: texts with the same words are identical, others are not."""

    dimensions = DIMENSIONS

    async def embed(self, text: str) -> Vector:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for word in sorted(set(text.lower().strip("?").split())):
            vector[hashlib.sha256(word.encode()).digest()[0] % DIMENSIONS] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    async def aclose(self) -> None:
        pass


def _semantic(bound: ErrorBound | None = None) -> SemanticCache:
    return SemanticCache(
        WordEmbedder(),
        InMemoryVectorIndex(dimensions=DIMENSIONS),
        threshold=0.5,
        breaker=None,
        timeout_s=5,
        ttl_s=60,
        error_bound=bound,
    )


def _layer(mode: str, bound: ErrorBound | None = None) -> CacheLayer:
    return _layer_over(mode, _semantic(bound))


def _layer_over(mode: str, semantic: SemanticCache) -> CacheLayer:
    settings = replace(CacheSettings(), semantic=mode)
    exact = ExactCache(MemoryExactStore(100), None, timeout_s=1, ttl_s=60)
    writeback = WriteBackQueue(maxsize=10)
    writeback.start()
    return CacheLayer(settings, exact, semantic, writeback)


def _body(text: str, **fields: Any) -> ChatCompletionRequest:
    payload: dict[str, Any] = {"model": "m", "temperature": 0, **fields}
    payload["messages"] = [{"role": "user", "content": text}]
    return parse_request(orjson.dumps(payload), ChatCompletionRequest)


def _scope() -> str:
    """The semantic scope the layer gives `_body`'s requests (whatever their text)."""
    query = semantic_query(_body("any question"), KeyContext(tenant_for({})))
    assert query is not None
    return query.scope


SCOPE = _scope()


def _answer(text: str) -> Completion:
    return Completion([Choice(0, text, "stop")], Usage(3, 2))


async def _store(layer: CacheLayer, text: str, answer: str) -> None:
    outcome = await look(layer, layer.plan(_body(text), {}, tenant_for({})))
    layer.remember(outcome, _answer(answer))
    await layer.writeback.drain(5)


async def test_on_mode_serves_reordered_question() -> None:
    """In `on` mode a near-identical question is a semantic hit."""
    layer = _layer("on")
    await _store(layer, "reset my password how", "Use the link.")
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant_for({})))
    hit = outcome.answer
    assert outcome.status == "hit-semantic" and hit is not None
    assert hit.completion.choices[0].text == "Use the link."


async def test_verifier_blocks_negated_question() -> None:
    """A candidate that fails verification is not served, and the reason is counted."""
    layer = _layer("on")
    await _store(layer, "enable 2FA now", "Enabled.")
    outcome = await look(layer, layer.plan(_body("disable 2FA now"), {}, tenant_for({})))
    assert outcome.answer is None and outcome.status == "miss"
    assert layer.semantic is not None
    assert layer.semantic.stats.candidates == 1 and sum(layer.semantic.stats.rejected.values()) == 1


async def test_shadow_mode_measures_but_never_serves() -> None:
    """Shadow mode answers from the backend and records whether the match would have agreed."""
    layer = _layer("shadow")
    await _store(layer, "reset my password how", "Use the link.")
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant_for({})))
    assert outcome.answer is None and outcome.status == "miss"
    assert outcome.shadow is not None
    await outcome.shadow
    layer.remember(outcome, _answer("Use the link."))
    stats = layer.semantic.stats if layer.semantic is not None else None
    assert stats is not None
    assert (stats.shadow_would_hit, stats.shadow_agreed, stats.shadow_disagreed) == (1, 1, 0)


async def test_a_semantic_entry_past_its_ttl_is_not_served() -> None:
    """An entry the index still holds past its TTL (lazy expiry) is refused by its own age."""
    semantic = _semantic()
    query = _semantic_query("how reset my password")
    answer = CachedAnswer(_answer("Use the link."), created_at=1_000.0)
    vector = await semantic.embed(query.text)
    await semantic.add(query, vector, "t", answer)
    assert await semantic.lookup(query, vector, "t", None, now=1_059.0) is not None
    assert await semantic.lookup(query, vector, "t", None, now=1_060.0) is None


def _semantic_query(text: str) -> SemanticQuery:
    query = semantic_query(_body(text), KeyContext("t"))
    assert query is not None
    return query


class FailingStore:
    """An exact store that always fails like a timed-out Redis."""

    async def get(self, namespace: str, key: str) -> bytes | None:
        raise ConnectionError("timeout")

    async def set(self, namespace: str, key: str, value: bytes, ttl_s: int) -> None:
        raise ConnectionError("timeout")

    async def aclose(self) -> None:
        pass


async def test_exact_cache_failure_skips_semantic_stage() -> None:
    """When the exact lookup fails, the request goes to the backend without embedding."""
    layer = _layer("on")
    layer._exact = ExactCache(
        FailingStore(), CircuitBreaker(unavailable=CacheUnavailable), timeout_s=1, ttl_s=60
    )
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant_for({})))
    assert outcome.answer is None and outcome.status == "error"
    assert layer.semantic is not None and layer.semantic.stats.lookups == 0


async def _shadow_judge(layer: CacheLayer, text: str, truth: str) -> None:
    outcome = await look(layer, layer.plan(_body(text), {}, tenant_for({})))
    assert outcome.shadow is not None
    await outcome.shadow
    layer.remember(outcome, _answer(truth))
    await layer.writeback.drain(5)


async def test_shadow_judgements_teach_the_error_bound() -> None:
    """Each shadow judgement is an observation of the matched entry, correct or wrong."""
    bound = ErrorBound(0.01)
    layer = _layer("shadow", bound)
    await _store(layer, "reset my password how", "Use the link.")
    await _shadow_judge(layer, "how reset my password", "Use the link.")
    await _shadow_judge(layer, "my password reset how", "Call support.")
    estimate = bound.estimate()
    assert (estimate.correct, estimate.wrong) == (1, 1)
    assert bound.threshold(tenant_for({}), SCOPE, "reset my password how") > 1.0 - 1e-6


async def test_on_mode_refuses_entry_judged_wrong_at_that_similarity() -> None:
    """An entry seen wrong in shadow mode is not served at that similarity once `on`."""
    bound = ErrorBound(0.01)
    shadow = _layer("shadow", bound)
    await _store(shadow, "reset my password how", "Use the link.")
    await _shadow_judge(shadow, "how reset my password", "Call support.")
    assert shadow.semantic is not None
    on = _layer_over("on", shadow.semantic)
    outcome = await look(on, on.plan(_body("my password reset how"), {}, tenant_for({})))
    assert outcome.answer is None and outcome.status == "miss"
    assert shadow.semantic.stats.rejected["error_bound"] == 1


async def test_on_mode_without_evidence_withholds_and_learns_from_the_fresh_answer() -> None:
    """With a bound and no evidence, a verified match is withheld (a miss), judged against the
    backend's answer; once the tenant's judgements certify its score, it is served."""
    bound = ErrorBound(0.05)
    layer = _layer("on", bound)
    await _store(layer, "reset my password how", "Use the link.")
    tenant = tenant_for({})
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant))
    assert outcome.status == "miss" and outcome.withheld is not None
    assert outcome.withheld.withheld == "error_bound"
    assert layer.tap(outcome) is not None  # judged even when nothing is to be written
    layer.remember(outcome, _answer("Use the link."))
    assert bound.estimate().correct == 1
    for i in range(100):  # other entries' judgements, at a perfect score
        bound.observe(tenant, SCOPE, f"entry {i}", 1.0, True)
    outcome = await look(layer, layer.plan(_body("my password reset how"), {}, tenant))
    assert outcome.status == "hit-semantic"


async def test_on_mode_audits_a_share_of_hits() -> None:
    """An audited would-be hit is answered fresh and judged instead of served."""
    bound = ErrorBound(0.05, audit_rate=0.5, random_source=lambda: 0.1)
    layer = _layer("on", bound)
    await _store(layer, "reset my password how", "Use the link.")
    tenant = tenant_for({})
    for i in range(100):
        bound.observe(tenant, SCOPE, f"entry {i}", 1.0, True)
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant))
    assert outcome.status == "miss" and outcome.withheld is not None
    assert outcome.withheld.withheld == "audit"
    layer.remember(outcome, _answer("Call support."))
    assert bound.estimate().wrong == 1
    # The wrong judgement holds this entry above the score it was judged at.
    assert not bound.allows(tenant, SCOPE, "reset my password how", outcome.withheld.score)


async def test_evidence_certifies_only_the_scope_it_was_judged_in() -> None:
    """Matches judged right under a one-value JSON schema (where every answer agrees) certify
    that scope alone: a free-text paraphrase in the same tenant is still withheld."""
    layer = _layer("on", ErrorBound(0.05))
    tenant, unstored = tenant_for({}), {"cache-control": "no-store"}
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"enum": ["yes"]}}}
    for stored, answer in [
        (_body("reset my account how", response_format=schema), '"yes"'),
        (_body("reset my password how"), "Use the link."),
    ]:
        layer.remember(await look(layer, layer.plan(stored, {}, tenant)), _answer(answer))
    await layer.writeback.drain(5)
    asked = _body("how reset my account", response_format=schema)
    for _ in range(80):
        outcome = await look(layer, layer.plan(asked, unstored, tenant))
        layer.remember(outcome, _answer('"yes"'))
    assert (await look(layer, layer.plan(asked, unstored, tenant))).status == "hit-semantic"
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant))
    assert outcome.status == "miss" and outcome.withheld is not None
    assert outcome.withheld.withheld == "error_bound"


_CODER = (
    "{} a function that {}. Handle edge cases such as empty input or a single element "
    "explicitly, add a one-line docstring, keep the function pure, and add three pytest test "
    "cases after it. {}"
)
_FIRST = ("You are a senior Python engineer. Write", "Use type hints. Return only code.")
_REWORDED = ("Act as an experienced Python developer. I need", "Reply with just the code.")


async def test_other_stored_prompts_show_the_slot_of_a_reworded_template() -> None:
    """A reworded template with another task is rejected as a slot change when another stored
    prompt of the candidate's template shows where its slot is."""
    layer = _layer("on")
    for task in ("flattens a nested list", "reverses a linked list"):
        stored = _body(_CODER.format(_FIRST[0], task, _FIRST[1]))
        layer.remember(await look(layer, layer.plan(stored, {}, tenant_for({}))), _answer(task))
    await layer.writeback.drain(5)  # the queue takes no more writes after a drain
    assert layer.semantic is not None
    stats = layer.semantic.stats
    before, seen = Counter(stats.rejected), stats.candidates
    query = _CODER.format(_REWORDED[0], "sorts a list of tuples", _REWORDED[1])
    outcome = await look(layer, layer.plan(_body(query), {}, tenant_for({})))
    assert outcome.answer is None and stats.candidates > seen
    assert stats.rejected - before == Counter(slot=stats.candidates - seen)


async def test_shadow_judgements_are_counted_without_a_bound() -> None:
    """Without an error bound, each shadow judgement still counts as correct or wrong."""
    layer = _layer("shadow")
    await _store(layer, "reset my password how", "Use the link.")
    await _shadow_judge(layer, "how reset my password", "Use the link.")
    await _shadow_judge(layer, "my password reset how", "Call support.")
    assert layer.semantic is not None
    assert layer.semantic.stats.judgements() == (1, 1)


async def test_withheld_judgements_are_counted() -> None:
    """A match the bound withheld, judged against the fresh answer, counts as a judgement."""
    layer = _layer("on", ErrorBound(0.05))
    await _store(layer, "reset my password how", "Use the link.")
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant_for({})))
    assert outcome.withheld is not None
    layer.remember(outcome, _answer("Call support."))
    assert layer.semantic is not None
    assert layer.semantic.stats.judgements() == (0, 1)


async def test_shadow_lookup_reports_a_would_be_hit_or_a_miss() -> None:
    """A shadow lookup's result is `hit` for a verified match (what `on` would serve), else
    `miss`; unknown while it runs."""
    layer = _layer("shadow")
    await _store(layer, "reset my password how", "Use the link.")
    hit = await look(layer, layer.plan(_body("how reset my password"), {}, tenant_for({})))
    miss = await look(layer, layer.plan(_body("enable 2FA now"), {}, tenant_for({})))
    assert hit.shadow is not None and miss.shadow is not None
    running = hit.shadow_result
    assert running is None
    await asyncio.wait((hit.shadow, miss.shadow))
    assert (hit.shadow_result, miss.shadow_result) == ("hit", "miss")


class DownEmbedder(WordEmbedder):
    """An embedder whose encoder is unavailable."""

    async def embed(self, text: str) -> Vector:
        raise CacheUnavailable("encoder queue full")


async def test_failed_shadow_lookup_is_an_error() -> None:
    """A shadow lookup that fails reports `error`, and nothing is judged."""
    semantic = SemanticCache(
        DownEmbedder(),
        InMemoryVectorIndex(dimensions=DIMENSIONS),
        threshold=0.5,
        breaker=None,
        timeout_s=5,
        ttl_s=60,
    )
    layer = _layer_over("shadow", semantic)
    outcome = await look(layer, layer.plan(_body("how reset my password"), {}, tenant_for({})))
    assert outcome.shadow is not None
    await asyncio.wait((outcome.shadow,))
    assert outcome.shadow_result == "error"
    layer.remember(outcome, _answer("Use the link."))
    assert semantic.stats.judgements() == (0, 0)


class RefusedIndex(InMemoryVectorIndex):
    """An index refused for another schema: nothing may be written into it."""

    mismatch = "another schema under the name"

    async def add(self, vector: Vector, **entry: Any) -> None:
        raise AssertionError("a refused index was written")


async def test_a_refused_index_is_not_written() -> None:
    """An answer is written to the exact cache only while the vector index is refused."""
    semantic = SemanticCache(
        WordEmbedder(),
        RefusedIndex(dimensions=DIMENSIONS),
        threshold=0.5,
        breaker=None,
        timeout_s=5,
        ttl_s=60,
    )
    layer = _layer_over("on", semantic)
    assert semantic.index_mismatch == RefusedIndex.mismatch
    await _store(layer, "reset my password how", "Use the link.")
    assert layer.writeback.failed == 0 and layer.writeback.written == 1


def _layer_with_store(store: MemoryExactStore, semantic: SemanticCache) -> CacheLayer:
    settings = replace(CacheSettings(), semantic="on")
    writeback = WriteBackQueue(maxsize=10)
    writeback.start()
    return CacheLayer(settings, ExactCache(store, None, timeout_s=1, ttl_s=60), semantic, writeback)


async def _lost_exact_entry(text: str) -> tuple[CacheLayer, MemoryExactStore]:
    """A fresh layer over the caches of one that answered `text` and then lost its exact
    entry (a Redis restarted empty, or an exact write that failed while the semantic one
    succeeded)."""
    store = MemoryExactStore(100)
    semantic = _semantic()
    await _store(_layer_with_store(store, semantic), text, "Use the link.")
    layer = _layer_with_store(store, semantic)
    plan = layer.plan(_body(text), {}, tenant_for({}))
    assert plan.key is not None and await store.delete(plan.tenant, plan.key)
    return layer, store


async def test_a_semantic_hit_on_the_same_request_restores_its_exact_entry() -> None:
    """A semantic hit whose entry was stored for exactly this request writes the exact entry
    back, so the next repeat is an exact hit (with the answer's original age)."""
    layer, _ = await _lost_exact_entry("reset my password how")
    plan = layer.plan(_body("reset my password how"), {}, tenant_for({}))
    first = await look(layer, plan)
    assert first.status == "hit-semantic"
    await layer.writeback.drain(5)
    again = await look(layer, plan)
    assert again.status == "hit-exact" and again.answer is not None and first.answer is not None
    assert again.answer.completion.choices[0].text == "Use the link."
    assert again.answer.created_at == first.answer.created_at


async def test_a_semantic_hit_on_a_similar_prompt_writes_no_exact_entry() -> None:
    """A paraphrase served from another prompt's entry never gets an exact entry of its own."""
    layer, store = await _lost_exact_entry("reset my password how")
    plan = layer.plan(_body("how reset my password"), {}, tenant_for({}))
    assert (await look(layer, plan)).status == "hit-semantic"
    await layer.writeback.drain(5)
    assert len(store) == 0
    assert (await look(layer, plan)).status == "hit-semantic"


async def test_a_semantic_hit_restores_nothing_when_the_request_forbids_storing() -> None:
    """`Cache-Control: no-store` holds for the restored exact entry too."""
    layer, store = await _lost_exact_entry("reset my password how")
    headers = {"cache-control": "no-store"}
    plan = layer.plan(_body("reset my password how"), headers, tenant_for(headers))
    assert (await look(layer, plan)).status == "hit-semantic"
    await layer.writeback.drain(5)
    assert len(store) == 0


async def test_a_last_message_over_the_limit_has_no_semantic_query() -> None:
    """The plan of a prompt longer than `GATEWAY_SEMANTIC_MAX_CHARS` (default
    `MAX_SEMANTIC_CHARS`) keeps its exact key but is never looked up or stored by meaning; one
    at the limit is, and a raised limit takes the longer one in."""
    layer = _layer("on")
    at_limit = "x" * MAX_SEMANTIC_CHARS
    assert layer.plan(_body(at_limit), {}, tenant_for({})).semantic is not None
    over = layer.plan(_body(at_limit + "y"), {}, tenant_for({}))
    assert over.semantic is None and over.key is not None
    settings = replace(CacheSettings(), semantic="on", semantic_max_chars=MAX_SEMANTIC_CHARS + 1)
    exact = ExactCache(MemoryExactStore(100), None, timeout_s=1, ttl_s=60)
    raised = CacheLayer(settings, exact, _semantic(), WriteBackQueue(maxsize=10))
    assert raised.plan(_body(at_limit + "y"), {}, tenant_for({})).semantic is not None
