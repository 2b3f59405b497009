"""The number check: the same quantities, however each text writes them."""

from __future__ import annotations

import pytest

from cache.verify_features import extract
from cache.verify_quantities import same_numbers


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("a 5-second timeout", "a 5000 ms timeout"),
        ("a 5 pound roast", "a 5 lb roast"),
        ("the 1st floor", "the first floor"),
        ("1 bitcoin", "one bitcoin"),
        ("enable 2FA", "enable two-factor authentication"),
        ("half an hour", "30 minutes"),
    ],
)
def test_one_quantity_written_two_ways_agrees(a: str, b: str) -> None:
    """Units, words and initialisms holding a number word do not make another quantity."""
    assert same_numbers(extract(a), extract(b))
    assert same_numbers(extract(b), extract(a))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("a 5-second timeout", "a 500 ms timeout"),
        ("the 2nd floor", "the first floor"),
        ("half an hour", "an hour"),
        ("a month", "30 days"),
    ],
)
def test_other_quantities_disagree(a: str, b: str) -> None:
    """Other values, or units without one exact ratio (a month is no number of days)."""
    assert not same_numbers(extract(a), extract(b))
