"""RedisVectorIndex against a real Redis Stack: isolation, TTL, ordering, parity, failures."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import numpy as np
import pytest
from redis.asyncio import Redis

from bench.harness.probes import free_port
from cache.types import CacheUnavailable, Vector
from cache.vector_index_memory import InMemoryVectorIndex
from cache.vector_index_redis import IndexMismatch, RedisVectorIndex

DIMS = 16


@pytest.fixture
async def index(client: Redis) -> AsyncIterator[RedisVectorIndex]:
    """A fresh index (unique name) with an exhaustive ef_runtime, dropped afterwards."""
    vector_index = await RedisVectorIndex.open(
        client, dimensions=DIMS, name=f"test:sem:{uuid.uuid4().hex[:8]}", ef_runtime=500
    )
    yield vector_index
    await vector_index.drop()


def unit(seed: int) -> Vector:
    vector = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
    return vector / np.linalg.norm(vector)


async def _add(
    index: RedisVectorIndex | InMemoryVectorIndex,
    vector: Vector,
    text: str,
    *,
    tenant: str = "t1",
    scope: str = "s1",
    ttl_s: int = 600,
) -> None:
    await index.add(
        vector,
        tenant=tenant,
        scope=scope,
        text=text,
        payload=b"\x00\xffbody:" + text.encode(),
        created_at=1700000000.5,
        ttl_s=ttl_s,
    )


async def test_roundtrip_with_binary_payload(index: RedisVectorIndex) -> None:
    """A stored entry comes back with similarity ~1, its text, binary payload and timestamp."""
    await _add(index, unit(1), "héllo wörld")
    [hit] = await index.search(unit(1), tenant="t1", scope="s1", k=5)
    assert hit.similarity == pytest.approx(1.0, abs=1e-5)
    assert hit.text == "héllo wörld"
    assert hit.payload == b"\x00\xffbody:h\xc3\xa9llo w\xc3\xb6rld"
    assert hit.created_at == 1700000000.5


async def test_k_results_sorted_by_similarity(index: RedisVectorIndex) -> None:
    """At most k hits, best first, similarity = 1 - cosine distance."""
    query = unit(0)
    for i in range(1, 20):
        await _add(index, unit(i), f"e{i}")
    hits = await index.search(query, tenant="t1", scope="s1", k=5)
    expected = sorted((float(unit(i) @ query), f"e{i}") for i in range(1, 20))[::-1][:5]
    assert [h.text for h in hits] == [text for _, text in expected]
    assert [h.similarity for h in hits] == pytest.approx([s for s, _ in expected], abs=1e-5)


@pytest.mark.parametrize(
    ("tenant", "other"),
    [("t1", "t2"), ("abc", "ab"), ("ABC", "abc"), ("acme-corp.eu:1/x y", "acme-corp.eu:1/x")],
)
async def test_tenants_are_isolated(index: RedisVectorIndex, tenant: str, other: str) -> None:
    """Tag filters are exact: no prefix, case-folding or punctuation leaks across tenants."""
    await _add(index, unit(1), "mine", tenant=tenant)
    await _add(index, unit(1), "theirs", tenant=other)
    hits = await index.search(unit(1), tenant=tenant, scope="s1", k=10)
    assert [h.text for h in hits] == ["mine"]


async def test_scopes_are_isolated(index: RedisVectorIndex) -> None:
    """An entry is only found under its own scope."""
    await _add(index, unit(1), "s1 entry", scope="s1")
    await _add(index, unit(1), "s2 entry", scope="s2")
    assert [h.text for h in await index.search(unit(1), tenant="t1", scope="s2", k=9)] == [
        "s2 entry"
    ]
    assert await index.search(unit(1), tenant="t1", scope="s3", k=9) == []


@pytest.mark.parametrize("bad", ["", "a,b"])
async def test_unsafe_tag_values_are_rejected(index: RedisVectorIndex, bad: str) -> None:
    """An empty tag would match every tenant and a comma splits tags: both raise ValueError."""
    with pytest.raises(ValueError, match="tenant"):
        await index.search(unit(1), tenant=bad, scope="s1", k=1)
    with pytest.raises(ValueError, match="scope"):
        await _add(index, unit(1), "x", scope=bad)


async def test_entries_carry_their_ttl(index: RedisVectorIndex, client: Redis) -> None:
    """Each hash gets the entry's TTL, and an expired hash leaves the index."""
    await _add(index, unit(1), "short", ttl_s=30)
    await _add(index, unit(2), "long", ttl_s=3000)
    short = index.key(tenant="t1", scope="s1", text="short")
    assert 0 < await client.ttl(short) <= 30
    assert 30 < await client.ttl(index.key(tenant="t1", scope="s1", text="long")) <= 3000
    await client.pexpireat(short, 1)  # a time in the past: expires now
    hits = await index.search(unit(1), tenant="t1", scope="s1", k=5)
    assert [h.text for h in hits] == ["long"]


async def test_same_text_replaces_entry(index: RedisVectorIndex) -> None:
    """Writing a prompt again overwrites its entry and refreshes its TTL."""
    await _add(index, unit(1), "q")
    await _add(index, unit(2), "q")
    hits = await index.search(unit(2), tenant="t1", scope="s1", k=5)
    assert [(h.text, round(h.similarity, 4)) for h in hits] == [("q", 1.0)]


async def test_same_results_as_memory_index(index: RedisVectorIndex) -> None:
    """On the same data the Redis and in-memory indexes return the same hits."""
    memory = InMemoryVectorIndex(dimensions=DIMS)
    for i in range(60):
        for target in (index, memory):
            await _add(target, unit(i), f"e{i}", tenant=f"t{i % 2}", scope=f"s{i % 3}")
    for seed in range(100, 110):
        for tenant, scope in (("t0", "s0"), ("t1", "s2")):
            from_redis = await index.search(unit(seed), tenant=tenant, scope=scope, k=4)
            from_memory = await memory.search(unit(seed), tenant=tenant, scope=scope, k=4)
            assert [h.text for h in from_redis] == [h.text for h in from_memory]
            assert [h.similarity for h in from_redis] == pytest.approx(
                [h.similarity for h in from_memory], abs=1e-5
            )


async def test_reopening_keeps_the_index(client: Redis) -> None:
    """open() on an existing index reuses it and its entries."""
    name = f"test:sem:{uuid.uuid4().hex[:8]}"
    first = await RedisVectorIndex.open(client, dimensions=DIMS, name=name)
    await _add(first, unit(1), "kept")
    second = await RedisVectorIndex.open(client, dimensions=DIMS, name=name)
    assert [h.text for h in await second.search(unit(1), tenant="t1", scope="s1", k=1)] == ["kept"]
    with pytest.raises(ValueError, match="16-dimensional"):
        await RedisVectorIndex.open(client, dimensions=DIMS * 2, name=name)
    await second.drop()


async def test_unreachable_redis_raises_cache_unavailable() -> None:
    """Connection failures surface as CacheUnavailable from every call."""
    dead = Redis.from_url(f"redis://127.0.0.1:{free_port()}", socket_connect_timeout=0.5)
    index = RedisVectorIndex(dead, dimensions=DIMS, name="test:dead")
    with pytest.raises(CacheUnavailable):
        await index.ensure_index()
    with pytest.raises(CacheUnavailable):
        await index.search(unit(1), tenant="t1", scope="s1", k=1)
    with pytest.raises(CacheUnavailable):
        await _add(index, unit(1), "x")
    await dead.aclose()


async def test_concurrent_opens_all_succeed(client: Redis) -> None:
    """Replicas starting together race to create the index; every one of them succeeds."""
    name = f"test:sem:{uuid.uuid4().hex[:8]}"
    indexes = await asyncio.gather(
        *(RedisVectorIndex.open(client, dimensions=DIMS, name=name) for _ in range(8))
    )
    await indexes[0].drop()


_TAGS = "tenant TAG CASESENSITIVE scope TAG CASESENSITIVE created_at NUMERIC"
_VECTOR = f"embedding VECTOR FLAT 6 TYPE FLOAT32 DIM {DIMS} DISTANCE_METRIC"
FOREIGN = [
    ("gw:", "v VECTOR FLAT 6 TYPE FLOAT32 DIM 8 DISTANCE_METRIC COSINE", "no tenant, scope"),
    ("gw:", f"{_VECTOR} COSINE", "no tenant"),  # searches would miss silently
    ("gw:", f"{_TAGS} {_VECTOR} L2", "L2"),
    ("other:", f"{_TAGS} {_VECTOR} COSINE", "prefix"),
]


@pytest.mark.parametrize(("prefix", "schema", "why"), FOREIGN)
async def test_an_index_of_another_schema_is_refused(
    client: Redis, prefix: str, schema: str, why: str
) -> None:
    """An index under the name with another schema is refused, naming it and what differs,
    even one that searches would silently miss in; it is left as it was."""
    name = f"test:sem:{uuid.uuid4().hex[:8]}"
    key_prefix = f"{name}:" if prefix == "gw:" else f"{name}-{prefix}"
    await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", key_prefix, "SCHEMA", *schema.split()
    )
    try:
        with pytest.raises(IndexMismatch, match=why) as refused:
            await RedisVectorIndex.open(client, dimensions=DIMS, name=name)
        assert repr(name) in str(refused.value)
    finally:
        await client.execute_command("FT.DROPINDEX", name)  # type: ignore[no-untyped-call]
