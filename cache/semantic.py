"""The semantic cache: embed the last user message, search near entries in the same scope,
and serve one only if the verifier agrees it asks the same thing."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace

from cache.entry import CachedAnswer
from cache.error_bound import ErrorBound, match_score
from cache.keys import SemanticQuery, embedded_text
from cache.types import (
    CacheUnavailable,
    Embedder,
    EncoderProbe,
    RefusableIndex,
    Vector,
    VectorHit,
    VectorIndex,
)
from cache.verify_confirm import ModelVerifier
from core.breaker import CircuitBreaker


@dataclass
class SemanticStats:
    """Counters for metrics: what the semantic stage saw and decided, and how the matches
    judged against the fresh answer fared (shadow matches, and matches withheld from serving:
    by the error bound, or for audit)."""

    lookups: int = 0
    candidates: int = 0
    hits: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    shadow_would_hit: int = 0
    shadow_agreed: int = 0
    shadow_disagreed: int = 0
    withheld_agreed: int = 0
    withheld_disagreed: int = 0

    def judgements(self) -> tuple[int, int]:
        """Every match judged so far, with or without an error bound: (correct, wrong)."""
        return (
            self.shadow_agreed + self.withheld_agreed,
            self.shadow_disagreed + self.withheld_disagreed,
        )


@dataclass(frozen=True, slots=True)
class SemanticMatch:
    """A verified entry. `score` is what the error bound judges it by: the similarity, or the
    changed clauses' similarity when the verifier compared clauses and it is lower; `scope`
    is the query's, whose segment's evidence judges it. `withheld` says why a match was not
    served: "error_bound" (the evidence does not certify its score) or "audit" (sampled to be
    answered fresh and judged)."""

    answer: CachedAnswer
    similarity: float
    candidate_text: str
    scope: str
    score: float
    withheld: str | None = None


class SemanticCache:
    """Near-duplicate lookup over a vector index; `threshold` is a cosine similarity."""

    def __init__(
        self,
        embedder: Embedder,
        index: VectorIndex,
        *,
        threshold: float,
        breaker: CircuitBreaker | None,
        timeout_s: float,
        ttl_s: int,
        candidates: int = 3,
        verifier: ModelVerifier | None = None,
        error_bound: ErrorBound | None = None,
        encoders: Sequence[EncoderProbe] = (),
        space: str = "",
    ) -> None:
        """`verifier` defaults to the candidate verifier with `embedder` for slot clauses (at
        `PLAIN_SLOT_SIMILARITY`); it is closed with the cache.
        `error_bound`, if given, holds each entry to the similarity its judgements certify.
        `encoders` are the models behind `embedder` and `verifier`, sampled for metrics.
        `space` names `embedder`'s embedding space (model and precision): entries are filed
        under it, so gateways embedding differently never compare their vectors (an index
        shared with them keeps each one's entries apart)."""
        self._embedder = embedder
        self._verifier = verifier if verifier is not None else ModelVerifier(embedder.embed)
        self._index = index
        self.threshold = threshold
        self._breaker = breaker
        self._timeout_s = timeout_s
        self._ttl_s = ttl_s
        self._k = candidates
        self.error_bound = error_bound
        self.encoders = tuple(encoders)
        self.stats = SemanticStats()
        self._space = space.encode()

    @property
    def breaker(self) -> CircuitBreaker | None:
        return self._breaker

    @property
    def index_mismatch(self) -> str | None:
        """Why the vector index is refused (another schema under its name in Redis), or None."""
        index = self._index
        return index.mismatch if isinstance(index, RefusableIndex) else None

    async def embed(self, text: str) -> Vector:
        """The embedding of what the model can read of `text` (see `embedded_text`)."""
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._embedder.embed(embedded_text(text))
        except TimeoutError as exc:
            raise CacheUnavailable("embedding timed out") from exc

    async def lookup(
        self,
        query: SemanticQuery,
        vector: Vector,
        tenant: str,
        max_age: int | None,
        now: float,
        *,
        bounded: bool = True,
    ) -> SemanticMatch | None:
        """The best verified entry at or above the threshold, if any.

        With `bounded` and an error bound, a match must also score at or above what its
        evidence certifies; the best one that does not, or one sampled for audit, comes back
        `withheld`, to be judged against the fresh answer (shadow lookups pass False: every
        verified match is judged, none served)."""
        self.stats.lookups += 1
        hits = await self._search(vector, tenant, self._filed_scope(query.scope))
        bound = self.error_bound if bounded else None
        withheld: SemanticMatch | None = None
        texts = [hit.text for hit in hits]  # each candidate's siblings (itself shows no slot)
        for hit in sorted(hits, key=lambda h: h.similarity, reverse=True):
            if hit.similarity < self.threshold:
                break
            self.stats.candidates += 1
            verdict = await self._verifier.verify(query.text, hit.text, texts)
            if not verdict.ok:
                self.stats.rejected[verdict.reason or "unknown"] += 1
                continue
            answer = CachedAnswer.from_bytes(hit.payload)
            if answer is None:
                continue
            # An index may keep an entry a moment past its TTL (Redis expires lazily, a
            # write lands after the answer was made): the entry's own age decides.
            too_old = max_age is not None and answer.age(now) > max_age
            if too_old or now - answer.created_at >= self._ttl_s:
                self.stats.rejected["age"] += 1
                continue
            score = match_score(hit.similarity, verdict.clause_similarity)
            match = SemanticMatch(answer, hit.similarity, hit.text, query.scope, score)
            if bound is not None:
                if not bound.allows(tenant, query.scope, hit.text, score):
                    self.stats.rejected["error_bound"] += 1
                    withheld = withheld or replace(match, withheld="error_bound")
                    continue
                if bound.audit():
                    self.stats.rejected["audit"] += 1
                    return replace(match, withheld="audit")
            self.stats.hits += 1
            return match
        return withheld

    def _filed_scope(self, scope: str) -> str:
        """The scope an entry is filed under in the index: the query's, within the space."""
        if not self._space:
            return scope
        return hashlib.blake2b(self._space + b"\0" + scope.encode(), digest_size=20).hexdigest()

    async def _search(self, vector: Vector, tenant: str, scope: str) -> list[VectorHit]:
        def search() -> Awaitable[list[VectorHit]]:
            return self._index.search(vector, tenant=tenant, scope=scope, k=self._k)

        if self._breaker is None:
            return await search()
        return await self._breaker.call(search, self._timeout_s)

    async def add(
        self, query: SemanticQuery, vector: Vector | None, tenant: str, answer: CachedAnswer
    ) -> None:
        if vector is None:
            vector = await self.embed(query.text)

        def add() -> Awaitable[None]:
            return self._index.add(
                vector,
                tenant=tenant,
                scope=self._filed_scope(query.scope),
                text=query.text,
                payload=answer.to_bytes(),
                created_at=answer.created_at,
                ttl_s=self._ttl_s,
            )

        if self._breaker is None:
            await add()
        else:
            await self._breaker.call(add, self._timeout_s)

    async def aclose(self) -> None:
        await self._index.aclose()
        await self._embedder.aclose()
        await self._verifier.aclose()
