"""Semantic-cache quality on the labelled pairs: the default threshold keeps false hits <= 1%."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from bench.semantic_quality import Scored, choose_threshold, load_pairs, rates, score
from cache.embedder import SentenceEmbedder
from cache.semantic_defaults import DEFAULT_SIMILARITY_THRESHOLD

MAX_FALSE_HIT = 0.01
MIN_HIT_RATE = 0.70  # measured 81.9% (all pairs); a regression below this needs a look


@pytest.fixture(scope="module")
def scored(minilm: SentenceEmbedder) -> list[Scored]:
    """Every pair with its similarity and verdict (embedded once per module)."""
    return asyncio.run(score(load_pairs(), minilm))


def test_labelled_set_is_large_and_varied() -> None:
    """At least 300 pairs, both labels well represented, every hard-negative kind present."""
    pairs = load_pairs()
    kinds = Counter(p.kind for p in pairs if not p.same)
    assert len(pairs) >= 300
    assert 0.35 <= sum(p.same for p in pairs) / len(pairs) <= 0.65
    assert set(kinds) == {
        "negation",
        "number",
        "entity",
        "antonym",
        "language",
        "unrelated",
        "topic",
    }
    assert all(p.kind == "paraphrase" for p in pairs if p.same)
    assert len({(p.a, p.b) for p in pairs}) == len(pairs)


@pytest.mark.parametrize("split", ["all", "dev", "holdout"])
def test_false_hits_at_default_threshold(scored: list[Scored], split: str) -> None:
    """With the verifier, at most 1% of different-answer pairs are served at the default."""
    chosen = [s for s in scored if split in ("all", s.pair.split)]
    measured = rates(chosen, DEFAULT_SIMILARITY_THRESHOLD)
    print(f"\n{split}: {measured}")
    assert measured.false_hit_verified <= MAX_FALSE_HIT


def test_hit_rate_at_default_threshold(scored: list[Scored]) -> None:
    """The default still serves most true paraphrases."""
    assert rates(scored, DEFAULT_SIMILARITY_THRESHOLD).hit_verified >= MIN_HIT_RATE


def test_default_is_the_lowest_safe_threshold(scored: list[Scored]) -> None:
    """The benchmark's choice on the dev split is the constant in cache.semantic_defaults."""
    dev = [s for s in scored if s.pair.split == "dev"]
    assert choose_threshold(dev, max_false_hit=MAX_FALSE_HIT) == DEFAULT_SIMILARITY_THRESHOLD


def test_threshold_alone_is_unsafe(scored: list[Scored]) -> None:
    """Without the verifier the default would serve many hard negatives (why it exists)."""
    assert rates(scored, DEFAULT_SIMILARITY_THRESHOLD).false_hit > 0.2
