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
