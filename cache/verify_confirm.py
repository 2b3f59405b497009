"""The verifier with the model: settles the clauses that `cache.verify` left `pending`.

A rewritten slot inside a shared template ("Do you price match other retailers?" / "Will you
match a lower price I found at another store?") is compared by embedding the two clauses on
their own, so the template no longer dominates. The gateway embeds clauses with the clause
judge's model (`cache.clause_adapter`), which tells a reworded request from a different one far
better than the plain embedding model. Clause embeddings are cached: stored prompts recur across
lookups, and a hot template's slots repeat.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from cache.types import CacheUnavailable, Vector
from cache.verify import Verdict, VerifierStats, verify

SLOT_SIMILARITY = 0.91
"""Minimum cosine similarity of two rewritten slot clauses, each embedded alone by the clause
judge's model (all-MiniLM-L6-v2 with the trained adapter, `cache.clause_adapter`): the lowest
value with no false hit on the templated train halves (`python -m bench.semantic_quality`: the
templated set's train half and the blind set's dev half). The different request that sets it
scores 0.91 ("Do you sell gift cards" / "Can I pay with a gift card")."""

PLAIN_SLOT_SIMILARITY = 0.85
"""The same bar for clauses embedded by the plain embedding model
(`GATEWAY_SEMANTIC_CLAUSE_ADAPTER=off`), chosen the same way: the train half alone allowed 0.72
and 0.79 was kept as a margin; the blind set's dev half then showed a different request at
0.84 ("Introduce our new account manager, Leo Park, ... Leo will take over" / "... Leo Park is
leaving and that I will take over")."""

Embed = Callable[[str], Awaitable[Vector]]


class ClauseEmbeddings:
    """Embeddings of short clauses through the gateway's embedder, with an LRU cache."""

    def __init__(self, embed: Embed, max_entries: int = 4096) -> None:
        self._embed = embed
        self._max_entries = max_entries
        self._cache: OrderedDict[str, Vector] = OrderedDict()

    async def vectors(self, texts: list[str]) -> list[Vector]:
        """One vector per text; misses are embedded concurrently (the embedder batches them)."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        found = dict(zip(missing, await asyncio.gather(*map(self._embed, missing)), strict=True))
        vectors = [found[t] if t in found else self._cache[t] for t in texts]
        for text, vector in zip(texts, vectors, strict=True):
            self._cache[text] = vector
            self._cache.move_to_end(text)
        while len(self._cache) > self._max_entries:
            self._cache.popitem(last=False)
        return vectors

    async def similarity(self, a: str, b: str) -> float:
        va, vb = await self.vectors([a, b])
        return float(np.dot(va, vb))


async def confirm(verdict: Verdict, clauses: ClauseEmbeddings, threshold: float) -> Verdict:
    """`verdict`, or acceptance when every pending clause pair is at least `threshold` alike
    (carrying the lowest of their similarities)."""
    if verdict.ok or not verdict.pending:
        return verdict
    texts = [text for pair in verdict.pending for text in pair]
    try:
        vectors = await clauses.vectors(texts)
    except CacheUnavailable:
        return verdict  # without the model the rejection stands
    lowest = min(float(np.dot(vectors[i], vectors[i + 1])) for i in range(0, len(vectors), 2))
    if lowest < max(threshold, verdict.min_similarity):
        return verdict
    return Verdict(ok=True, clause_similarity=lowest)


class Closeable(Protocol):
    async def aclose(self) -> None: ...


INLINE_CHARS = 200
"""Pairs this short (both texts together) are judged on the event loop: their checks take
about half a millisecond (p50; ~1 ms at 200 characters), less than a busy loop may make a
thread hop wait. Longer ones, templated prompts above all (milliseconds to tens of
milliseconds), go to the verifier's thread (`python -m bench.semantic_quality` prints the
cost by length)."""


class ModelVerifier:
    """`verify`, then `confirm` with the embedder; counters as `Verifier`'s.

    A pair longer than `INLINE_CHARS` is judged on a thread of its own, one pair at a time,
    so that it does not stall the event loop. `owns` is closed with the verifier: the clause
    judge's own model, when it has one."""

    def __init__(
        self,
        embed: Embed,
        threshold: float = PLAIN_SLOT_SIMILARITY,
        *,
        owns: Closeable | None = None,
    ) -> None:
        self.clauses = ClauseEmbeddings(embed)
        self.threshold = threshold
        self.stats = VerifierStats()
        self._owns = owns
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="semantic-verify")
        self._closed = False

    async def aclose(self) -> None:
        # Judgements already queued still finish (their lookups are awaiting them); later
        # ones fail as the cache being unavailable.
        self._closed = True
        self._thread.shutdown(wait=False)
        if self._owns is not None:
            await self._owns.aclose()

    async def verify(self, query: str, candidate: str, siblings: Sequence[str] = ()) -> Verdict:
        if len(query) + len(candidate) <= INLINE_CHARS:
            verdict = verify(query, candidate, siblings=siblings)
        else:
            verdict = await self._on_thread(query, candidate, tuple(siblings))
        verdict = await confirm(verdict, self.clauses, self.threshold)
        self.stats.record(verdict)
        return verdict

    async def _on_thread(self, query: str, candidate: str, siblings: tuple[str, ...]) -> Verdict:
        if self._closed:  # the gateway is stopping
            raise CacheUnavailable("the semantic verifier is closed")
        judge = functools.partial(verify, query, candidate, siblings=siblings)
        return await asyncio.get_running_loop().run_in_executor(self._thread, judge)
