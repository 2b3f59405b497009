"""Quantities in one unit, and numbers restated in digits."""

from __future__ import annotations

from decimal import Decimal

from cache.verify_numbers import in_base_units, without_restatements


def test_lengths_of_time_distance_and_mass_read_in_one_unit() -> None:
    """5 s is 5000 ms and 90 min is 1.5 h; other values keep their spelling."""
    assert in_base_units([("5", "s")]) == in_base_units([("5000", "ms")]) == [(Decimal(5), "s")]
    assert in_base_units([("90", "min")]) == in_base_units([("1.5", "h")])
    assert in_base_units([("1.10", "")]) == [("1.10", "")]


def test_two_values_in_one_unit_are_not_converted() -> None:
    """Which value is which would be lost: no conversion at all."""
    assert in_base_units([("5", "min"), ("60", "s")]) is None


def test_only_a_restated_number_is_dropped() -> None:
    """ "twelve (12) months" loses its "(12)"; "section (12)" and "five 5-dollar" keep theirs."""
    assert without_restatements("for twelve (12) months") == "for twelve months"
    assert without_restatements("see section (12)") == "see section (12)"
    assert without_restatements("five 5-dollar bills") == "five 5-dollar bills"
