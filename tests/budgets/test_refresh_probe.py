"""A refusing prediction lets one request through per interval while it hears nothing."""

from __future__ import annotations

from budgets.refresh_probe import RefreshProbe


def test_one_request_per_interval_while_nothing_is_heard() -> None:
    """The first ask goes through; the next only an interval after it, or after the last
    thing heard, whichever is later."""
    probe = RefreshProbe(1.0)
    assert probe.take(0.0)
    assert not probe.take(0.5)
    assert probe.take(1.0)
    probe.heard(2.0)
    assert not probe.take(2.5)
    assert probe.take(3.0)


def test_probes_that_confirm_the_refusal_back_off() -> None:
    """Each probe that ran out as predicted doubles the wait for the next, up to the
    longest; anything new heard brings it back to the interval."""
    probe = RefreshProbe(1.0, longest_s=4.0)
    assert probe.take(0.0)
    probe.confirmed(1.0)
    assert not probe.take(2.9) and probe.take(3.0)
    probe.confirmed(4.0)
    assert not probe.take(7.9) and probe.take(8.0)
    probe.confirmed(9.0)
    assert not probe.take(12.9) and probe.take(13.0)
    probe.heard(14.0)
    assert probe.take(15.0)
