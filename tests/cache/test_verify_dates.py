"""Clock times and dates read from text, and blanked out of it."""

from __future__ import annotations

from cache.verify import verify
from cache.verify_dates import times_and_dates


def test_clock_times_are_read_as_hh_mm() -> None:
    """12-hour times with a meridiem and 24-hour times read alike; a bare time as written."""
    found, _ = times_and_dates("at 7pm, 7:30 am or 19:00")
    assert found == [("19:00", "clock"), ("07:30", "clock"), ("19:00", "clock")]


def test_dates_are_read_as_mm_dd_and_blanked_out() -> None:
    """Month-day, day-month and ISO dates (lowercase text) read as MM-DD, the year its own
    number; the text left for the number pattern no longer holds them."""
    found, rest = times_and_dates("due march 3rd, or the 3rd of march, or 2024-03-03")
    assert sorted(found) == [("03-03", "date")] * 3 + [("2024", "")]
    assert "3" not in rest and "2024" not in rest


def test_slashed_dates_are_read_when_they_read_one_way_only() -> None:
    """ "7/19" and "19/7" after a word that names a day, or with a year, are July 19 (a two-digit
    year is this century's); "7/6" may be either, "1/2" a fraction, "24/7" an idiom: those
    stay numbers."""
    found, rest = times_and_dates("due fri 7/19, on 19/7/2024 or 12/25/23")
    assert found == [("07-19", "date"), ("07-19", "date"), ("2024", ""), ("12-25", "date"),
                     ("2023", "")]  # fmt: skip
    assert not any(c.isdigit() for c in rest)
    for text in ("on 7/6", "1/2 cup", "24/7 support", "v1.7/19"):
        assert times_and_dates(text) == ([], text)


def test_a_fraction_before_a_unit_is_not_a_date() -> None:
    """Without a word naming a day before it, or with a unit after it, a slashed pair is a
    quantity, and its unit is compared: "5/16 inch", "5/15 mg", "by 5/16 of an inch"."""
    for text in ("how many mm is 5/16 inch?", "give 5/15 mg", "by 5/16 of an inch", "on 5/16-inch"):
        assert times_and_dates(text) == ([], text)
    assert verify("How many mm is 5/16 inch?", "How many mm is 5/16 cm?").ok is False
    assert verify("Give the child 5/15 mg per kg", "Give the child 5/15 g per kg").ok is False
