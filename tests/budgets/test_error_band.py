"""The exponentially weighted band of a prediction's recent errors."""

from __future__ import annotations

import pytest

from budgets.error_band import ErrorBand


def test_error_band_mean_spread_and_margin() -> None:
    """The band's margin is its mean plus z spreads, weighted towards recent errors."""
    band = ErrorBand(half_life=1e9)  # no decay: plain mean and deviation
    for error in (1.0, 3.0):
        band.add(error)
    assert band.mean() == pytest.approx(2.0) and band.spread() == pytest.approx(1.0)
    assert band.margin(2.0) == pytest.approx(4.0) and band.count == pytest.approx(2.0)
    fading = ErrorBand(half_life=1)
    fading.add(10.0)
    fading.add(0.0)
    assert fading.mean() == pytest.approx(10.0 / 3)  # the older error weighs a half


def test_the_margin_fades_with_the_age_of_its_errors() -> None:
    """Errors that stopped coming justify less and less: the margin halves every
    `half_life_s`, and the next error outweighs the old ones by as much."""
    band = ErrorBand(half_life=1e9, half_life_s=5.0)
    for error in (1.0, 1.0):
        band.add(error, now=100.0)
    assert band.margin(now=100.0) == pytest.approx(1.0)
    assert band.margin(now=105.0) == pytest.approx(0.5)
    assert band.margin(now=110.0) == pytest.approx(0.25)
    band.add(0.0, now=110.0)  # the two old errors weigh a half together now
    assert band.mean() == pytest.approx(1.0 / 3)
