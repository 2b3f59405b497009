"""Tests for cache.verify_compounds: words written as one or as two."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_compounds import joined, may_join


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Is it OK to work out every day?", "Is it okay to workout everyday?"),
        ("How do I set up a home gym?", "How do I setup a home gym?"),
        ("Why can not I sign in?", "Why cannot I sign in?"),
    ],
)
def test_a_compound_written_apart_is_the_same_word(a: str, b: str) -> None:
    """Two words the other text writes as one are joined, and the pair is served."""
    assert verify(a, b).ok


def test_short_compounds_and_identifiers_stay_apart() -> None:
    """ "a part" is not "apart", and "first name" is not the identifier "firstName"."""
    assert joined("Take it a part", "Take it apart") == ("Take it a part", "Take it apart")
    assert joined("Select first name", "Select firstName")[0] == "Select first name"


def test_the_cheap_test_finds_only_splittable_words() -> None:
    """`may_join` is true only when a word of one side splits into two words of the other."""
    assert may_join(frozenset({"work", "out"}), frozenset({"workout"}))
    assert not may_join(frozenset({"work", "in"}), frozenset({"workout"}))
