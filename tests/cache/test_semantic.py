"""The semantic cache over its index: entries are filed under the embedding space that made them."""

from __future__ import annotations

from cache.entry import CachedAnswer
from cache.keys import SemanticQuery
from cache.semantic import SemanticCache
from cache.vector_index_memory import InMemoryVectorIndex
from core.answers import Choice, Completion, Usage
from tests.cache.test_semantic_layer import DIMENSIONS, WordEmbedder

QUERY = SemanticQuery("how do i reset my password", "scope-a")


def _cache(index: InMemoryVectorIndex, space: str) -> SemanticCache:
    return SemanticCache(
        WordEmbedder(), index, threshold=0.5, breaker=None, timeout_s=5, ttl_s=60, space=space
    )


def _answer() -> CachedAnswer:
    return CachedAnswer(Completion([Choice(0, "Use the reset link.", "stop")], Usage(5, 4)), 100.0)


async def test_another_embedding_space_never_sees_the_entry() -> None:
    """Vectors of another model or precision sharing the index are never compared: a lookup
    finds only the entries its own space wrote, whatever the vectors."""
    index = InMemoryVectorIndex(dimensions=DIMENSIONS)
    fp32, int8, again = _cache(index, "m1"), _cache(index, "m1-int8"), _cache(index, "m1")
    vector = await fp32.embed(QUERY.text)
    await fp32.add(QUERY, vector, "tenant", _answer())
    assert await int8.lookup(QUERY, vector, "tenant", None, 101.0) is None
    found = await again.lookup(QUERY, vector, "tenant", None, 101.0)
    assert found is not None and found.answer.completion.choices[0].text == "Use the reset link."
    assert found.scope == QUERY.scope  # the error bound judges the query's own scope


async def test_without_a_space_the_scope_is_filed_as_it_is() -> None:
    """A cache built without a space (tests, tools) files entries under the query's scope."""
    index = InMemoryVectorIndex(dimensions=DIMENSIONS)
    cache = _cache(index, "")
    vector = await cache.embed(QUERY.text)
    await cache.add(QUERY, vector, "tenant", _answer())
    hits = await index.search(vector, tenant="tenant", scope=QUERY.scope, k=1)
    assert [hit.text for hit in hits] == [QUERY.text]
