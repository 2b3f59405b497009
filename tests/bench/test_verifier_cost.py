"""The verifier's CPU per candidate, by the longer prompt's length."""

from __future__ import annotations

from bench.semantic_sets import Pair
from bench.verifier_cost import verifier_cost


def test_each_length_with_pairs_gets_a_row() -> None:
    """Pairs land in the row of their longer prompt; rows without pairs are left out."""
    short = Pair(
        a="How do I reset my password?",
        b="How can I reset my password?",
        same=True,
        kind="k",
        split="test",
    )
    long = Pair(a="x " * 700, b="y " * 700, same=False, kind="k", split="test")
    table = verifier_cost([short, long], warm_up=[short])
    rows = [line.split(" | ")[:2] for line in table.splitlines()[2:]]
    assert rows == [["| 0-1000", "1"], ["| 1000-2000", "1"]]
