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


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (["sticker"], ["stick"]),
        (["sailors"], ["sails"]),
        (["reported"], ["reporter"]),
        (["jelly"], ["jell"]),
        (["movement"], ["move"]),
        (["portion"], ["port"]),
    ],
)
def test_an_ending_that_makes_another_word_is_no_form_of_it(
    left: list[str], right: list[str]
) -> None:
    """An agent or a tool ("sticker", "sailors"), "-y", "-ment", "-ion" on a short word: another
    thing, by any of the word rules (a suffix, a base form, a shared root)."""
    assert not interchangeable(left, right)


def test_chinese_sentences_sharing_a_start_are_not_one_root() -> None:
    """Unspaced text is one "word" to the splitter: its start is no root."""
    assert not interchangeable(["我想预订明天去北京的机票"], ["我想预订明天去北京的酒店"])
    assert interchangeable(["summary"], ["summarize"])


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


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Which bakeries deliver on Sunday?", "Which bakers deliver on Sunday?"),
        ("Can I bring batteries on a plane?", "Can I bring batter on a plane?"),
        ("Are there any eateries near the station?", "Are there any eaters near the station?"),
    ],
)
def test_a_plural_in_ies_is_its_y_not_another_word(a: str, b: str) -> None:
    """ "bakeries" is the plural of "bakery", not a form of "baker"."""
    assert not verify(a, b).ok


def test_a_plural_in_ies_is_still_its_singular() -> None:
    """ "bakeries" and "bakery" stay one word."""
    assert verify("Which bakeries open early?", "Which bakery opens early?").ok
