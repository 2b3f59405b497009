"""Markdown tables of scored pairs: what the verifier accepts beside what the gateway serves."""

from __future__ import annotations

from bench.semantic_scoring import Scored
from bench.semantic_sets import Pair
from bench.semantic_tables import served_table
from cache.verify import ACCEPT


def _scored(text: str, *, same: bool, reachable: bool) -> Scored:
    pair = Pair(a=text, b=text + "?", same=same, kind="k", split="test")
    return Scored(pair, similarity=0.95, verdict=ACCEPT, reachable=reachable)


def test_served_table_counts_long_pairs_as_accepted_but_not_served() -> None:
    """A pair the gateway never looks up counts in the verifier's columns only."""
    scored = [
        _scored("a", same=True, reachable=True),
        _scored("b", same=True, reachable=False),
        _scored("c", same=False, reachable=False),
    ]
    row = served_table([("set", scored)]).splitlines()[-1]
    assert row == "| set | 2/3 (66.7%) | 2/2 (100.0%) | 1/2 (50.0%) | 1/1 (100.0%) | 0/1 (0.0%) |"
