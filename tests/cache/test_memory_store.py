"""The in-process LRU store."""

from __future__ import annotations

from cache.memory_store import MemoryExactStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_get_set_and_namespaces() -> None:
    """Values are found by namespace and key only."""
    store = MemoryExactStore(10)
    await store.set("a", "k", b"1", ttl_s=60)
    assert await store.get("a", "k") == b"1"
    assert await store.get("b", "k") is None


async def test_expiry() -> None:
    """An entry past its TTL is gone."""
    clock = Clock()
    store = MemoryExactStore(10, clock)
    await store.set("a", "k", b"1", ttl_s=5)
    clock.now = 5.0
    assert await store.get("a", "k") is None


async def test_lru_eviction() -> None:
    """The least recently used entry is evicted first."""
    store = MemoryExactStore(2)
    await store.set("a", "1", b"1", ttl_s=60)
    await store.set("a", "2", b"2", ttl_s=60)
    await store.get("a", "1")
    await store.set("a", "3", b"3", ttl_s=60)
    assert await store.get("a", "2") is None
    assert await store.get("a", "1") == b"1" and len(store) == 2
