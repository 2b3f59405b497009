"""InMemoryVectorIndex: isolation, ordering, TTL on an injected clock, bounded size."""

from __future__ import annotations

import numpy as np
import pytest

from cache.types import Vector
from cache.vector_index_memory import InMemoryVectorIndex

DIMS = 8


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def unit(*values: float) -> Vector:
    vector = np.zeros(DIMS, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


async def _add(
    index: InMemoryVectorIndex,
    vector: Vector,
    text: str,
    *,
    tenant: str = "t1",
    scope: str = "s1",
    created_at: float = 1.0,
    ttl_s: int = 60,
) -> None:
    await index.add(
        vector,
        tenant=tenant,
        scope=scope,
        text=text,
        payload=text.encode(),
        created_at=created_at,
        ttl_s=ttl_s,
    )


async def test_search_returns_k_nearest_sorted() -> None:
    """Hits come back best first, at most k, with cosine similarity and the stored fields."""
    index = InMemoryVectorIndex(dimensions=DIMS)
    for i, text in enumerate(["far", "near", "nearest", "mid"]):
        await _add(index, unit(1.0, [3.0, 0.5, 0.1, 1.0][i]), text, created_at=float(i))
    hits = await index.search(unit(1.0, 0.0), tenant="t1", scope="s1", k=3)
    assert [h.text for h in hits] == ["nearest", "near", "mid"]
    assert [h.payload for h in hits] == [b"nearest", b"near", b"mid"]
    assert hits[0].similarity == pytest.approx(float(unit(1.0, 0.1) @ unit(1.0, 0.0)))
    assert hits[0].created_at == 2.0


async def test_tenant_and_scope_are_isolated() -> None:
    """An entry is only ever found under its own tenant and scope."""
    index = InMemoryVectorIndex(dimensions=DIMS)
    await _add(index, unit(1.0), "t1s1")
    await _add(index, unit(1.0), "t2s1", tenant="t2")
    await _add(index, unit(1.0), "t1s2", scope="s2")
    for tenant, scope in (("t1", "s1"), ("t2", "s1"), ("t1", "s2")):
        hits = await index.search(unit(1.0), tenant=tenant, scope=scope, k=10)
        assert [h.text for h in hits] == [f"{tenant}{scope}"]
    assert await index.search(unit(1.0), tenant="t2", scope="s2", k=10) == []


async def test_entries_expire_on_read() -> None:
    """An entry is served until its TTL elapses on the index clock, then never again."""
    clock = Clock()
    index = InMemoryVectorIndex(dimensions=DIMS, clock=clock)
    await _add(index, unit(1.0), "short", ttl_s=10)
    await _add(index, unit(1.0, 0.1), "long", ttl_s=100)
    clock.now += 9.9
    assert len(await index.search(unit(1.0), tenant="t1", scope="s1", k=5)) == 2
    clock.now += 0.1
    assert [h.text for h in await index.search(unit(1.0), tenant="t1", scope="s1", k=5)] == ["long"]
    assert len(index) == 1


async def test_oldest_entries_are_evicted_beyond_capacity() -> None:
    """The index holds at most max_entries; the oldest write goes first."""
    index = InMemoryVectorIndex(dimensions=DIMS, max_entries=3)
    for i in range(5):
        await _add(index, unit(1.0, i), f"e{i}", scope=f"s{i % 2}")
    assert len(index) == 3
    texts = {
        h.text
        for scope in ("s0", "s1")
        for h in await index.search(unit(1.0), tenant="t1", scope=scope, k=10)
    }
    assert texts == {"e2", "e3", "e4"}


async def test_same_text_replaces_entry() -> None:
    """Writing the same prompt again replaces its entry rather than duplicating it."""
    index = InMemoryVectorIndex(dimensions=DIMS)
    await _add(index, unit(1.0), "q", created_at=1.0)
    await _add(index, unit(1.0), "q", created_at=2.0)
    hits = await index.search(unit(1.0), tenant="t1", scope="s1", k=10)
    assert [(h.text, h.created_at) for h in hits] == [("q", 2.0)]
    assert len(index) == 1


async def test_stored_vector_is_a_copy() -> None:
    """Mutating the caller's array after add does not change the index."""
    index = InMemoryVectorIndex(dimensions=DIMS)
    vector = unit(1.0)
    await _add(index, vector, "q")
    vector[:] = unit(0.0, 1.0)
    hits = await index.search(unit(1.0), tenant="t1", scope="s1", k=1)
    assert hits[0].similarity == pytest.approx(1.0)


async def test_invalid_arguments() -> None:
    """Wrong dimensions and non-positive TTLs are programming errors."""
    index = InMemoryVectorIndex(dimensions=DIMS)
    with pytest.raises(ValueError, match="dimensions"):
        await _add(index, np.ones(DIMS + 1, dtype=np.float32), "q")
    with pytest.raises(ValueError, match="ttl"):
        await _add(index, unit(1.0), "q", ttl_s=0)
    assert await index.search(unit(1.0), tenant="t1", scope="s1", k=0) == []
