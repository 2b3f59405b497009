"""Ranking held-out triplets: a triplet counts when its rewording is closer than its negative."""

from __future__ import annotations

import asyncio

import numpy as np

from bench.clause_ranking import Ranking, rank_triplets, ranking_section
from bench.clause_training import Triplet
from cache.types import Vector

AXES = {"ask": (1.0, 0.0), "same": (0.8, 0.6), "other": (0.6, 0.8), "far": (0.0, 1.0)}


class TwoAxes:
    """An embedder that places each text on a fixed unit vector of the plane."""

    async def embed(self, text: str) -> Vector:
        return np.asarray(AXES[text], dtype=np.float32)


def test_a_triplet_counts_when_the_rewording_is_closer() -> None:
    """Two triplets, one ranked right (same closer than far), one wrong (other closer)."""
    triplets = [Triplet("ask", "same", "far"), Triplet("ask", "far", "other")]
    ranked = asyncio.run(rank_triplets("toy", TwoAxes(), triplets))  # type: ignore[arg-type]
    assert ranked == Ranking("toy", 1, 2)


def test_the_section_names_each_model_with_its_share() -> None:
    """The report line gives each model's count and share; no rankings, no section."""
    lines = ranking_section([Ranking("plain model", 1, 4), Ranking("clause judge", 3, 4)])
    assert "plain model 1/4 (25.0%), clause judge 3/4 (75.0%)" in lines[-1]
    assert ranking_section([]) == []
