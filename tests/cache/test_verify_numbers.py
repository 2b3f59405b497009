"""Quantities in one unit, and numbers restated in digits."""

from __future__ import annotations

from decimal import Decimal

from cache.verify import verify
from cache.verify_numbers import in_base_units, without_list_markers, without_restatements


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


def test_the_numbers_of_a_numbered_list_are_not_quantities() -> None:
    """Markers 1, 2, ... opening lines or sentences go; a lone "3." after a colon, or numbers
    out of order, stay."""
    assert without_list_markers("Rules: 1. Be brief. 2. Cite it.") == "Rules:  Be brief.  Cite it."
    assert without_list_markers("Steps:\n1) open\n2) close") == "Steps:\n open\n close"
    assert without_list_markers("Total: 3. Next") == "Total: 3. Next"
    assert without_list_markers("I need 2. Then 3. Go") == "I need 2. Then 3. Go"


def test_a_template_reworded_into_a_numbered_list_keeps_its_numbers() -> None:
    """A rule list numbered on one side only is the same prompt; another limit is not."""
    prose = "Never diagnose. Keep answers under 150 words. Can my dog eat grapes?"
    listed = "Rules: 1. Never diagnose. 2. Keep answers under 150 words. Can my dog eat grapes?"
    assert verify(prose, listed).reason != "number"
    assert verify(prose, listed.replace("150", "100")).reason == "number"
