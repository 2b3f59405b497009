"""Spelled-out quantities, and numbers restated in digits."""

from __future__ import annotations

from cache.verify_features import extract
from cache.verify_numbers import without_restatements
from cache.verify_units import in_base_units


def _numbers(text: str) -> list[tuple[str, str]]:
    return list(extract(text).numbers)


def test_only_a_restated_number_is_dropped() -> None:
    """ "twelve (12) months" loses its "(12)"; "section (12)" and "five 5-dollar" keep theirs."""
    assert without_restatements("for twelve (12) months") == "for twelve months"
    assert without_restatements("see section (12)") == "see section (12)"
    assert without_restatements("five 5-dollar bills") == "five 5-dollar bills"


def test_a_fraction_is_a_part_of_the_unit_after_it() -> None:
    """ "half an hour" is 30 minutes; "half a cup" is a half of no known unit."""
    half_hour = in_base_units(_numbers("How long is half an hour in seconds?"))
    assert half_hour == in_base_units(_numbers("How long are 30 minutes in seconds?"))
    assert _numbers("calories in half a cup of rice") == [("0.5", "")]
    assert _numbers("What's a quarter of 80?") == [("0.25", ""), ("80", "")]


def test_a_or_an_before_a_unit_counts_one_of_it() -> None:
    """ "within an hour" is "within 60 minutes"; "a cup" and "a second bag" count nothing."""
    hour = in_base_units(_numbers("Can I cancel within an hour?"))
    assert hour == in_base_units(_numbers("Can I cancel within 60 minutes?"))
    assert _numbers("Can I cancel within a week?") == [("1", "wk")]
    assert _numbers("a cup of rice") == []
    assert _numbers("Can I bring a second bag?") == []


def test_the_per_unit_of_a_rate_is_no_count() -> None:
    """ "twice a day", "8 hours a night", "60 miles an hour": the "a" says "per"."""
    assert _numbers("Take it twice a day") == [("2", "x")]
    assert _numbers("Should I sleep 8 hours a day?") == [("8", "h")]
    assert _numbers("driving 60 miles an hour") == [("60", "mi")]


def test_multiples_and_a_fortnight_are_numbers() -> None:
    """ "double" is "twice"; "a fortnight" is two weeks."""
    assert _numbers("double the dose") == _numbers("twice the dose")
    assert _numbers("How do I triple a recipe?") == [("3", "x")]
    assert _numbers("a refund after a fortnight") == _numbers("a refund after two weeks")


def test_a_counted_thing_before_a_unit_makes_a_rate() -> None:
    """ "3 workouts a week" is "3 workouts per week"; "3 days or a week" is two durations."""
    assert _numbers("three personalized workouts a week") == _numbers("3 workouts per week")
    assert _numbers("Is it 3 days or a week?") == [("1", "wk"), ("3", "d")]


def test_one_restated_in_digits_is_one_of_the_unit() -> None:
    """ "one (1) year terms" are "1-year terms"."""
    assert _numbers("renews for one (1) year terms") == _numbers("renews for 1-year terms")


def test_a_decimal_comma_with_grouping_dots_is_read() -> None:
    """ "12.400,00 €" is "€12,400.00"; "12.400" alone is left as written."""
    assert _numbers("Total: 12.400,00 €") == _numbers("Total: €12,400.00") == [("12400.00", "eur")]
    assert _numbers("Total: 12.400") == [("12.400", "")]
