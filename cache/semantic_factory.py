"""Builds the semantic cache: the embedding model (loaded once, in a thread) and a vector
index in Redis (RedisVL) or in process."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path

from cache.clause_adapter import AdapterMismatch, adapted_model, misfit
from cache.embedder import SentenceEmbedder
from cache.embedder_base import default_model_path
from cache.error_bound import ErrorBound
from cache.factory_redis import breaker_for, semantic_redis_client
from cache.semantic import SemanticCache
from cache.settings import CacheSettings, EmbeddingPrecision
from cache.types import CacheUnavailable, Vector, VectorHit, VectorIndex
from cache.vector_index_memory import InMemoryVectorIndex
from cache.vector_index_redis import IndexMismatch, RedisVectorIndex
from cache.verify_confirm import PLAIN_SLOT_SIMILARITY, SLOT_SIMILARITY, ModelVerifier
from cache.verify_vocab import known_words
from core.breaker import CircuitBreaker

log = logging.getLogger("gateway.cache")


# While the index under the gateway's name has another schema, how often a lookup looks at
# it again (the others fail at once, without a round trip).
INDEX_RECHECK_S = 5.0


class EnsuredIndex:
    """A Redis vector index that creates itself on first use, so a Redis that was down when
    the gateway started does not disable the semantic cache for good; and again after a failed
    search, so a Redis that comes back empty (a restart without persistence, a failover to an
    empty replica, FLUSHALL) gets its index back, over the entries written since.

    An index of another schema under its name (another application's, an older gateway's with
    other dimensions) is refused: every search and write fails (`CacheUnavailable`, so a
    lookup is an `error`, never a silent miss), it is neither written into nor dropped, one
    warning per process names it and what differs, and `mismatch` says why for the metrics.
    Once it is gone (dropped, renamed), the next check creates the gateway's own."""

    def __init__(self, index: RedisVectorIndex, clock: Callable[[], float] = time.monotonic):
        self._index = index
        self._clock = clock
        self._ready = False
        self._checked_at = -math.inf
        self._warned = False
        self.mismatch: str | None = None

    async def ensure(self) -> None:
        """Create the index if missing; CacheUnavailable if Redis fails or the index there
        has another schema."""
        if self._ready:
            return
        if self.mismatch is not None and self._clock() - self._checked_at < INDEX_RECHECK_S:
            raise CacheUnavailable(self.mismatch)
        self._checked_at = self._clock()
        try:
            await self._index.ensure_index()
        except IndexMismatch as exc:
            self._refuse(str(exc))
            raise CacheUnavailable(str(exc)) from exc
        if self.mismatch is not None:
            log.warning("semantic index %r now has the gateway's schema: using it", self.name)
            self.mismatch = None
        self._ready = True

    @property
    def name(self) -> str:
        return self._index.name

    def _refuse(self, why: str) -> None:
        self.mismatch = why
        if not self._warned:  # every lookup fails while it lasts: say so once
            self._warned = True
            log.warning("semantic cache lookups fail until this is fixed: %s", why)

    async def search(self, vector: Vector, *, tenant: str, scope: str, k: int) -> list[VectorHit]:
        await self.ensure()
        try:
            return await self._index.search(vector, tenant=tenant, scope=scope, k=k)
        except CacheUnavailable:
            self._ready = False  # the next lookup checks the index first
            raise

    async def add(
        self,
        vector: Vector,
        *,
        tenant: str,
        scope: str,
        text: str,
        payload: bytes,
        created_at: float,
        ttl_s: int,
    ) -> None:
        await self.ensure()
        await self._index.add(
            vector, tenant=tenant, scope=scope, text=text, payload=payload,
            created_at=created_at, ttl_s=ttl_s,
        )  # fmt: skip

    async def aclose(self) -> None:
        await self._index.aclose()


def _load_embedder(
    settings: CacheSettings, model: Path | None, role: str, precision: EmbeddingPrecision
) -> SentenceEmbedder:
    return SentenceEmbedder.load(
        model,
        backend=settings.embedding_backend,
        precision=precision,
        threads=settings.embedding_threads,
        cache_dir=settings.embedding_cache_dir,
        role=role,
    )


def load_embedding_model(settings: CacheSettings) -> SentenceEmbedder:
    """The model whose vectors the index searches, at `GATEWAY_EMBEDDING_PRECISION`."""
    return _load_embedder(
        settings, settings.embedding_model_path, "embedder", settings.embedding_precision
    )


def load_clause_embedder(settings: CacheSettings) -> SentenceEmbedder:
    """The clause judge's model: the embedding model with the shipped adapter merged."""
    model = settings.embedding_model_path or default_model_path()
    try:
        adapted = adapted_model(model, settings.embedding_cache_dir)
    except AdapterMismatch as exc:
        raise misfit(model, exc) from exc
    # Always fp32: quantized, it lost 3 of 43 held-out templated hits.
    return _load_embedder(settings, adapted, "clause-judge", "fp32")


async def clause_verifier(
    settings: CacheSettings, embedder: SentenceEmbedder
) -> tuple[ModelVerifier, SentenceEmbedder | None]:
    """The verifier's clause comparisons: by the adapted model (its own encoder, closed with
    the verifier, returned too), or with the adapter off by the embedding model itself."""
    if not settings.semantic_clause_adapter:
        return ModelVerifier(embedder.embed, PLAIN_SLOT_SIMILARITY), None
    clauses = await asyncio.to_thread(load_clause_embedder, settings)
    return ModelVerifier(clauses.embed, SLOT_SIMILARITY, owns=clauses), clauses


async def build_semantic_cache(settings: CacheSettings) -> SemanticCache:
    start = time.monotonic()
    embedder = await asyncio.to_thread(load_embedding_model, settings)
    await asyncio.to_thread(known_words)  # read once here, not on a request's event loop
    verifier: ModelVerifier | None = None
    clauses: SentenceEmbedder | None = None
    try:
        verifier, clauses = await clause_verifier(settings, embedder)
        log.info(
            "embedding model%s loaded on %s in %.1f s",
            " and clause judge" if settings.semantic_clause_adapter else "",
            settings.embedding_backend,
            time.monotonic() - start,
        )
        index, breaker = await _vector_index(settings, embedder.dimensions)
    except BaseException:  # a failed start leaves no encoder thread behind
        if verifier is not None:
            await verifier.aclose()
        await embedder.aclose()
        raise
    log.info(
        "semantic cache %s: threshold %.2f cosine similarity, %d-dimensional embeddings",
        settings.semantic,
        settings.semantic_threshold,
        embedder.dimensions,
    )
    return SemanticCache(
        embedder,
        index,
        threshold=settings.semantic_threshold,
        breaker=breaker,
        timeout_s=settings.semantic_timeout_s,
        ttl_s=settings.ttl_s,
        verifier=verifier,
        error_bound=error_bound_for(settings),
        encoders=(embedder,) if clauses is None else (embedder, clauses),
        space=embedder.space,
    )


async def _vector_index(
    settings: CacheSettings, dimensions: int
) -> tuple[VectorIndex, CircuitBreaker | None]:
    """The RedisVL index (created now if Redis answers) and its breaker, or the in-process one."""
    if not settings.redis_url:
        index = InMemoryVectorIndex(
            dimensions=dimensions, max_entries=settings.semantic_max_entries
        )
        return index, None
    client = semantic_redis_client(settings)  # a Redis Cluster stops the gateway
    named = RedisVectorIndex(client, dimensions=dimensions, name=settings.semantic_index)
    ensured = EnsuredIndex(named)
    try:
        await ensured.ensure()
    except CacheUnavailable as exc:
        if ensured.mismatch is None:  # else it was just said
            log.warning("semantic index not created yet (will retry on use): %s", exc)
    except BaseException:
        await ensured.aclose()
        raise
    return ensured, breaker_for(settings, "redis-semantic")


def error_bound_for(settings: CacheSettings) -> ErrorBound | None:
    """The learned error bound, if `GATEWAY_SEMANTIC_MAX_ERROR_RATE` sets one."""
    if settings.semantic_max_error_rate <= 0:
        return None
    return ErrorBound(
        settings.semantic_max_error_rate,
        audit_rate=settings.semantic_audit_rate,
        max_entries=settings.semantic_max_entries,
    )
