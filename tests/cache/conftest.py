"""Shared fixtures for the cache tests: one real embedder per session (loading takes
seconds), and a client of the suite's per-module Redis (`redis_url`, tests/conftest.py)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis

from cache.embedder import SentenceEmbedder
from cache.semantic_factory import load_clause_embedder
from cache.settings import CacheSettings


@pytest.fixture(scope="session")
def minilm() -> Iterator[SentenceEmbedder]:
    """all-MiniLM-L6-v2 from the local package, offline; the worker thread serves any loop."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = SentenceEmbedder.load()
    yield embedder
    asyncio.run(embedder.aclose())


@pytest.fixture(scope="session")
def clause_judge() -> Iterator[SentenceEmbedder]:
    """The clause judge's model (all-MiniLM-L6-v2 with the shipped adapter), as the gateway
    loads it by default."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = load_clause_embedder(CacheSettings())
    yield embedder
    asyncio.run(embedder.aclose())


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    """A client of that Redis."""
    redis = Redis.from_url(redis_url)
    yield redis
    await redis.aclose()
