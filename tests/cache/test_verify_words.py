"""Tests for cache.verify_words: when two changed word runs say the same, and the opposite."""

from __future__ import annotations

import pytest

from cache.verify import verify
from cache.verify_words import interchangeable, opposite


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (["containers"], ["container"]),
        (["intro"], ["introductory"]),
        (["summary"], ["summarize"]),
        (["colour"], ["color"]),
        (["backup"], ["back", "up"]),
        (["k8s"], ["kubernetes"]),
    ],
)
def test_forms_of_one_word_are_interchangeable(left: list[str], right: list[str]) -> None:
    """Inflections, roots, spellings, one word written as two, numeronyms."""
    assert interchangeable(left, right)


@pytest.mark.parametrize(
    ("left", "right"),
    [(["buttermilk"], ["butter"]), (["notebook"], ["book"]), (["password"], ["pass"])],
)
def test_a_compound_names_another_thing(left: list[str], right: list[str]) -> None:
    """A word joined with another whole word is not a form of it, however long the start."""
    assert not interchangeable(left, right)
    assert not verify(
        f"What's a good substitute for {left[0]}?", f"What's a good substitute for {right[0]}?"
    ).ok


def test_poles_and_negating_prefixes_are_opposite() -> None:
    """Import/export, round up/down and paid/unpaid take opposite sides."""
    assert opposite(["import"], ["export"])
    assert opposite(["up"], ["down"])
    assert opposite(["paid"], ["unpaid"])
    assert not opposite(["send"], ["send"])
    assert (
        verify(
            "How do I round a number up in Excel?", "How do I round a number down in Excel?"
        ).reason
        == "antonym"
    )
