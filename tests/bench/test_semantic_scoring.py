"""The semantic-cache benchmark's scoring: what the verifier accepts, what the gateway serves."""

from __future__ import annotations

from bench.semantic_scoring import Scored, rates
from bench.semantic_sets import Pair
from cache.semantic_defaults import MAX_SEMANTIC_CHARS
from cache.verify import ACCEPT


def _scored(text: str, *, same: bool, reachable: bool) -> Scored:
    pair = Pair(a=text, b=text + "?", same=same, kind="k", split="test")
    return Scored(pair, similarity=0.95, verdict=ACCEPT, reachable=reachable)


def test_a_pair_the_gateway_does_not_look_up_is_a_hit_but_never_served() -> None:
    """A pair over the length limit counts in the verifier's rates, not in the served ones."""
    short = _scored("a" * 10, same=True, reachable=True)
    long = _scored("a" * (MAX_SEMANTIC_CHARS + 1), same=True, reachable=False)
    wrong = _scored("b" * (MAX_SEMANTIC_CHARS + 1), same=False, reachable=False)
    assert long.hit(0.9) and not long.served(0.9) and short.served(0.9)
    measured = rates([short, long, wrong], 0.9)
    assert measured.hit_verified == 1.0 and measured.hit_served == 0.5
    assert measured.false_hit_verified == 1.0 and measured.false_hit_served == 0.0
