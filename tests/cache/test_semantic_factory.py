"""The semantic cache's Redis index creates itself when missing: at first use, and again
after Redis came back empty."""

from __future__ import annotations

import asyncio
import uuid

import numpy as np
import pytest
from redis.asyncio import Redis

from cache.semantic_factory import EnsuredIndex
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
