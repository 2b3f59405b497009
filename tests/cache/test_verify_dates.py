"""Clock times and dates read from text, and blanked out of it."""

from __future__ import annotations

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
