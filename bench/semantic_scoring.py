"""Scoring the labelled prompt pairs for the semantic-cache benchmark: each pair's
similarity (embedded as the gateway embeds prompts) and the verifier's verdict, the rates at a
threshold, and the thresholds chosen on a train half (`bench.semantic_quality` reports them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from bench.semantic_sets import Pair
from cache.embedder import SentenceEmbedder
from cache.keys import compared_text, embedded_text
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD, looked_up
from cache.types import Vector
from cache.verify import Verdict, verify
from cache.verify_confirm import SLOT_SIMILARITY

GRID = tuple(round(0.5 + 0.01 * i, 2) for i in range(50))
SLOT_GRID = tuple(round(0.6 + 0.01 * i, 2) for i in range(36))


@dataclass(frozen=True, slots=True)
class Scored:
    """A pair with its similarity, the verifier's verdict without the model, the lowest
    similarity of the clause pairs the verdict left pending (None when none were), and whether
    the gateway's semantic stage looks up both prompts at all (`looked_up`: not too long)."""

    pair: Pair
    similarity: float
    verdict: Verdict
    slot_similarity: float | None = None
    reachable: bool = True

    def verified(self, slot_threshold: float = SLOT_SIMILARITY) -> bool:
        """The verifier's decision once the pending clauses are compared."""
        if self.verdict.ok:
            return True
        needed = max(slot_threshold, self.verdict.min_similarity)
        return self.slot_similarity is not None and self.slot_similarity >= needed

    def hit(self, threshold: float, slot_threshold: float = SLOT_SIMILARITY) -> bool:
        """The match and the verifier's consent: what the gateway would serve if it looked up
        prompts of any length."""
        return self.similarity >= threshold and self.verified(slot_threshold)

    def served(self, threshold: float, slot_threshold: float = SLOT_SIMILARITY) -> bool:
        """What the running gateway serves: a hit whose prompts it looks up."""
        return self.reachable and self.hit(threshold, slot_threshold)


@dataclass(frozen=True, slots=True)
class Rates:
    """Acceptance rates at one threshold; `*_verified` also require the verifier's consent,
    `*_served` also that the gateway looks the prompts up (`Scored.served`)."""

    threshold: float
    hit: float
    false_hit: float
    hit_verified: float
    false_hit_verified: float
    same: int
    different: int
    hit_served: float = 0.0
    false_hit_served: float = 0.0


async def embed_all(texts: Sequence[str], embedder: SentenceEmbedder) -> dict[str, Vector]:
    unique = sorted(set(texts))
    vectors: dict[str, Vector] = {}
    for start in range(0, len(unique), 256):
        chunk = unique[start : start + 256]
        vectors.update(zip(chunk, await asyncio.gather(*map(embedder.embed, chunk)), strict=True))
    return vectors


async def score(
    pairs: Sequence[Pair],
    embedder: SentenceEmbedder,
    *,
    clauses: SentenceEmbedder,
    skip_rejected: bool = False,
) -> list[Scored]:
    """Similarity and verdict of every pair: prompts are embedded as the gateway embeds them
    (`embedded_text`), pending clauses alone by `clauses` (the clause judge's model, whose bar
    `SLOT_SIMILARITY` the rates default to), 256 texts at a time.

    `skip_rejected` leaves out the prompts of pairs the verifier rejects without the model
    (their similarity reads -1: only the "+ verifier" rates are then meaningful).
    """
    verdicts = [verify(p.a, p.b, siblings=p.siblings) for p in pairs]
    embedded = [
        p for p, v in zip(pairs, verdicts, strict=True) if not skip_rejected or v.ok or v.pending
    ]
    views = {t: embedded_text(t) for p in embedded for t in (p.a, p.b)}
    vectors = await embed_all(list(views.values()), embedder)
    clause_texts = [t for v in verdicts for pair in v.pending for t in pair]
    clause_vectors = await embed_all(clause_texts, clauses)
    scored = []
    for pair, verdict in zip(pairs, verdicts, strict=True):
        similarity = -1.0
        if pair.a in views and pair.b in views:
            similarity = float(np.dot(vectors[views[pair.a]], vectors[views[pair.b]]))
        slot = min(
            (float(np.dot(clause_vectors[x], clause_vectors[y])) for x, y in verdict.pending),
            default=None,
        )
        reachable = looked_up(compared_text(pair.a)) and looked_up(compared_text(pair.b))
        scored.append(Scored(pair, similarity, verdict, slot, reachable))
    return scored


def _share(group: Sequence[Scored], accepted: Iterable[bool]) -> float:
    return sum(accepted) / len(group) if group else 0.0


def rates(
    scored: Sequence[Scored], threshold: float, slot_threshold: float = SLOT_SIMILARITY
) -> Rates:
    """Hit and false-hit rates at `threshold` (similarity >= threshold is a hit)."""
    same = [s for s in scored if s.pair.same]
    different = [s for s in scored if not s.pair.same]
    return Rates(
        threshold,
        hit=_share(same, (s.similarity >= threshold for s in same)),
        false_hit=_share(different, (s.similarity >= threshold for s in different)),
        hit_verified=_share(same, (s.hit(threshold, slot_threshold) for s in same)),
        false_hit_verified=_share(different, (s.hit(threshold, slot_threshold) for s in different)),
        same=len(same),
        different=len(different),
        hit_served=_share(same, (s.served(threshold, slot_threshold) for s in same)),
        false_hit_served=_share(
            different, (s.served(threshold, slot_threshold) for s in different)
        ),
    )


def choose_threshold(
    scored: Sequence[Scored], grid: Iterable[float] = GRID, max_false_hit: float = 0.01
) -> float | None:
    """The lowest threshold whose false-hit rate with the verifier is <= `max_false_hit`."""
    for threshold in sorted(grid):
        if rates(scored, threshold).false_hit_verified <= max_false_hit:
            return threshold
    return None


def choose_slot_threshold(
    scored: Sequence[Scored], grid: Iterable[float] = SLOT_GRID, max_false_hit: float = 0.0
) -> float | None:
    """The lowest clause similarity whose false-hit rate (at the default threshold) is at most
    `max_false_hit`."""
    for slot in sorted(grid):
        found = rates(scored, DEFAULT_SIMILARITY_THRESHOLD, slot)
        if found.false_hit_verified <= max_false_hit:
            return slot
    return None
