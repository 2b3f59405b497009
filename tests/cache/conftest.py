"""Shared fixtures for the cache tests: one real embedder per session (loading takes seconds)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from cache.embedder import SentenceEmbedder


@pytest.fixture(scope="session")
def minilm() -> Iterator[SentenceEmbedder]:
    """all-MiniLM-L6-v2 from the local package, offline; the worker thread serves any loop."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embedder = SentenceEmbedder.load()
    yield embedder
    asyncio.run(embedder.aclose())
