"""Units of measure: lengths of time, distance and mass in one base unit."""

from __future__ import annotations

from decimal import Decimal

from cache.verify_units import in_base_units, is_quantity


def test_lengths_of_time_distance_and_mass_read_in_one_unit() -> None:
    """5 s is 5000 ms and 90 min is 1.5 h; other values keep their spelling."""
    assert in_base_units([("5", "s")]) == in_base_units([("5000", "ms")]) == [(Decimal(5), "s")]
    assert in_base_units([("90", "min")]) == in_base_units([("1.5", "h")])
    assert in_base_units([("1.10", "")]) == [("1.10", "")]


def test_two_values_in_one_unit_are_not_converted() -> None:
    """Which value is which would be lost: no conversion at all."""
    assert in_base_units([("5", "min"), ("60", "s")]) is None


def test_a_quantity_is_digits_glued_to_a_known_unit() -> None:
    """ "16gb" and "7pm" are quantities; "2fa" and "h100" are names."""
    assert is_quantity("16gb") and is_quantity("7pm")
    assert not is_quantity("2fa") and not is_quantity("h100")
