"""How well a model tells a reworded request from a different one sharing its words: on the
held-out triplets of the clause adapter's data (`bench.clause_training`), how often the
rewording is the closer of the two. `bench.semantic_quality` reports it for the plain model
and the clause judge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.clause_training import Triplet
from bench.semantic_scoring import embed_all
from cache.embedder import SentenceEmbedder


@dataclass(frozen=True, slots=True)
class Ranking:
    model: str
    right: int
    total: int


async def rank_triplets(name: str, model: SentenceEmbedder, triplets: Sequence[Triplet]) -> Ranking:
    """How many triplets `model` ranks right: the rewording closer to the request than the
    hard negative is."""
    texts = [t for x in triplets for t in (x.anchor, x.positive, x.negative)]
    vectors = await embed_all(texts, model)
    right = sum(
        float(np.dot(vectors[t.anchor], vectors[t.positive]))
        > float(np.dot(vectors[t.anchor], vectors[t.negative]))
        for t in triplets
    )
    return Ranking(name, right, len(triplets))


def ranking_section(ranked: Sequence[Ranking]) -> list[str]:
    if not ranked:
        return []
    cells = ", ".join(f"{r.model} {r.right}/{r.total} ({r.right / r.total:.1%})" for r in ranked)
    return [
        "## Clause judge on held-out triplets",
        "A request, the same request reworded and a different request on the same topic (the "
        "held-out tenth of the files the shipped adapter trained on, `SHIPPED_DATA` in "
        "bench.clause_training, not trained on): how often the rewording is the closer of "
        f"the two. {cells}.",
    ]
