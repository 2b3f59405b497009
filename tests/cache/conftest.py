"""Shared fixtures for the cache tests: one real embedder per session (loading takes seconds)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

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
