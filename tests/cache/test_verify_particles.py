"""The same word taking "in" in one text and "out" in the other."""

from __future__ import annotations

import pytest

from cache.verify_particles import opposite_particles


@pytest.mark.parametrize(
    ("a", "b", "opposite"),
    [
        ("how do i zoom in on a pdf", "how do i zoom out on a pdf", True),
        ("how do i get in to my flat", "how do i get out of my flat", True),
        ("can i leave the dough out", "can i leave the dough in", True),
        ("breathing in through the nose", "breathing out through the nose", True),
        ("what should i see in rome", "what should i check out in rome", False),
        ("how do i fill in a tax form", "how do i fill out a tax form", False),
        ("is it cheaper to eat in or eat out", "is it cheaper to eat out or eat in", False),
        ("where do i work out in london", "where can i work out in london", False),
    ],
)
def test_in_against_out_after_the_same_word(a: str, b: str, opposite: bool) -> None:
    """ "zoom in" / "zoom out" are opposite; an "in" of place, "fill in" / "fill out", and a
    text holding both are not."""
    assert opposite_particles(a.split(), b.split()) is opposite
