"""The semantic cache's Redis index creates itself when missing: at first use, and again
after Redis came back empty; the models it loads at each precision."""

from __future__ import annotations

import asyncio
import logging
import uuid

import numpy as np
import pytest
from redis.asyncio import Redis

from cache.semantic_factory import INDEX_RECHECK_S, EnsuredIndex, build_semantic_cache
from cache.settings import CacheSettings
from cache.types import CacheUnavailable
from cache.vector_index_redis import RedisVectorIndex

DIMS = 8


async def _indexed(client: Redis, name: str) -> None:
    """Until Redis has indexed every existing hash (FT.INFO percent_indexed reaches 1)."""
    async with asyncio.timeout(30):
        while True:
            info = await client.ft(name).info()  # type: ignore[no-untyped-call]
            if float(info["percent_indexed"]) >= 1.0:
                return
            await asyncio.sleep(0.01)


async def test_an_index_lost_in_redis_is_created_again(client: Redis) -> None:
    """After the index is gone (Redis restarted empty, FLUSHALL), one lookup fails, the next
    creates the index again, over the entries already written."""
    vector = np.ones(DIMS, dtype=np.float32) / np.sqrt(DIMS)
    redis_index = RedisVectorIndex(client, dimensions=DIMS, name=f"test:ens:{uuid.uuid4().hex[:8]}")
    index = EnsuredIndex(redis_index)
    try:
        await index.add(
            vector, tenant="t", scope="s", text="q", payload=b"a", created_at=1.0, ttl_s=600
        )
        assert [hit.text for hit in await index.search(vector, tenant="t", scope="s", k=1)] == ["q"]
        await redis_index.drop(delete_entries=False)  # the index goes, its entries stay
        with pytest.raises(CacheUnavailable):
            await index.search(vector, tenant="t", scope="s", k=1)
        assert await index.search(vector, tenant="t", scope="s", k=1) is not None
        await _indexed(client, redis_index.name)  # existing hashes are indexed in the background
        hits = await index.search(vector, tenant="t", scope="s", k=1)
        assert [hit.text for hit in hits] == ["q"]
    finally:
        await redis_index.drop()


async def test_a_foreign_index_is_refused_loudly_until_it_is_gone(
    client: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """An index of another schema under the name fails every search and write (an error,
    never a miss), writes nothing under its prefix and is warned about once, naming it and
    what differs; once it is dropped, the gateway's index is created and used."""
    name = f"test:ens:{uuid.uuid4().hex[:8]}"
    await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", f"{name}:", "SCHEMA",
        "v", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", "8", "DISTANCE_METRIC", "COSINE",
    )  # fmt: skip
    vector = np.ones(DIMS, dtype=np.float32) / np.sqrt(DIMS)
    now = [0.0]
    index = EnsuredIndex(RedisVectorIndex(client, dimensions=DIMS, name=name), lambda: now[0])
    caplog.set_level(logging.WARNING, logger="gateway.cache")
    try:
        for _ in range(3):
            with pytest.raises(CacheUnavailable, match=name):
                await index.search(vector, tenant="t", scope="s", k=1)
            now[0] += INDEX_RECHECK_S  # each lookup checks the index again
        with pytest.raises(CacheUnavailable):
            await index.add(
                vector, tenant="t", scope="s", text="q", payload=b"a", created_at=1.0, ttl_s=600
            )
        assert await client.keys(f"{name}:*") == []
        assert index.mismatch is not None and "no tenant" in index.mismatch
        (warning,) = [r for r in caplog.records if name in r.getMessage()]
        assert warning.levelno == logging.WARNING
        await client.execute_command("FT.DROPINDEX", name)  # type: ignore[no-untyped-call]
        with pytest.raises(CacheUnavailable):  # refused without a round trip until the recheck
            await index.search(vector, tenant="t", scope="s", k=1)
        now[0] += INDEX_RECHECK_S
        assert await index.search(vector, tenant="t", scope="s", k=1) == []
        assert index.mismatch is None
    finally:
        await RedisVectorIndex(client, dimensions=DIMS, name=name).drop()


async def test_int8_quantizes_the_embedding_model_not_the_clause_judge() -> None:
    """With GATEWAY_EMBEDDING_PRECISION=int8 the vector search runs on the int8 copy (its own
    embedding space) while the clause judge stays fp32, where quantizing it lost hits."""
    settings = CacheSettings.from_env(
        {"GATEWAY_SEMANTIC_CACHE": "on", "GATEWAY_EMBEDDING_PRECISION": "int8"}
    )
    cache = await build_semantic_cache(settings)
    try:
        names = [encoder.sample().name for encoder in cache.encoders]
        assert names == ["embedder-onnx-int8", "clause-judge-onnx"]
    finally:
        await cache.aclose()
