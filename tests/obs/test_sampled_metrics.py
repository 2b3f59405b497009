"""Sampled totals advance their counters by the difference, and restart from zero."""

from __future__ import annotations

from obs.sampled_metrics import added


def test_a_total_advances_by_its_difference() -> None:
    """A cumulative total adds what it gained since the last sample."""
    assert added(7, 2) == 5
    assert added(7, 7) == 0


def test_a_total_below_the_last_is_a_new_source_counted_from_zero() -> None:
    """A restarted queue or bound reports a smaller total: all of it is new."""
    assert added(3, 7) == 3
