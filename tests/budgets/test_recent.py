"""The recent-window quantile behind optional-stage decisions."""

from __future__ import annotations

import pytest

from budgets.recent import RecentQuantile


def test_none_before_any_sample() -> None:
    """value() is None until the first sample arrives."""
    recent = RecentQuantile()
    assert recent.value() is None
    assert recent.value() is None


def test_single_sample_is_every_quantile() -> None:
    """With one sample, the quantile is that sample."""
    recent = RecentQuantile(q=0.5)
    recent.add(7.0)
    assert recent.value() == 7.0


def test_p95_of_one_to_hundred_is_95() -> None:
    """Nearest-rank p95 of 1..100 is 95."""
    recent = RecentQuantile(0.95, window=256, every=16)
    for i in range(1, 101):
        recent.add(float(i))
    assert recent.value() == 95.0


def test_p95_ignores_insertion_order() -> None:
    """Samples are sorted before picking the rank."""
    recent = RecentQuantile(0.95, window=256, every=1)
    for i in reversed(range(1, 101)):
        recent.add(float(i))
    assert recent.value() == 95.0


def test_low_quantile_picks_the_minimum() -> None:
    """A quantile below 1/n picks the smallest sample."""
    recent = RecentQuantile(0.01, window=10, every=1)
    for value in (5.0, 3.0, 9.0, 4.0):
        recent.add(value)
    assert recent.value() == 3.0


def test_window_forgets_old_samples() -> None:
    """Once the window is full, each new sample replaces the oldest."""
    recent = RecentQuantile(0.95, window=4, every=1)
    for value in (10.0, 20.0, 30.0, 40.0):
        recent.add(value)
    assert recent.value() == 40.0
    recent.add(1.0)  # replaces 10
    assert recent.value() == 40.0
    recent.add(2.0)  # replaces 20
    recent.add(3.0)  # replaces 30
    assert recent.value() == 40.0
    recent.add(4.0)  # replaces 40
    assert recent.value() == 4.0


def test_window_keeps_evicting_in_arrival_order() -> None:
    """Eviction wraps around: after two full turns only the last `window` samples count."""
    recent = RecentQuantile(0.5, window=3, every=1)
    for value in (100.0, 200.0, 300.0, 1.0, 2.0, 3.0, 50.0):
        recent.add(value)
    # last three: 2, 3, 50 -> nearest-rank median is 3
    assert recent.value() == 3.0


def test_first_value_is_always_fresh() -> None:
    """Before the first computation every sample counts, however few were added."""
    recent = RecentQuantile(0.95, window=100, every=16)
    recent.add(1.0)
    recent.add(2.0)
    recent.add(3.0)
    assert recent.value() == 3.0


def test_value_lags_by_fewer_than_every_samples() -> None:
    """With a well-filled window, the next every-1 samples are not reflected; the every-th is."""
    recent = RecentQuantile(0.95, window=64, every=4)
    for _ in range(64):
        recent.add(1.0)
    assert recent.value() == 1.0
    for _ in range(3):
        recent.add(10.0)
        assert recent.value() == 1.0
    recent.add(10.0)
    assert recent.value() == 10.0


def test_young_window_reflects_every_sample() -> None:
    """Before the window holds 16 samples per lag step, every new sample shows at once."""
    recent = RecentQuantile(0.95, window=256, every=16)
    recent.add(0.001)
    assert recent.value() == 0.001
    recent.add(5.0)
    assert recent.value() == 5.0


def test_recompute_happens_even_if_value_was_not_read_meanwhile() -> None:
    """Samples added while nobody reads are all included once `every` is reached."""
    recent = RecentQuantile(0.95, window=100, every=2)
    recent.add(1.0)
    assert recent.value() == 1.0
    for _ in range(5):
        recent.add(10.0)
    assert recent.value() == 10.0


@pytest.mark.parametrize(
    ("q", "window", "every"),
    [
        (0.0, 256, 16),
        (1.0, 256, 16),
        (-0.5, 256, 16),
        (1.5, 256, 16),
        (0.95, 0, 16),
        (0.95, -1, 16),
        (0.95, 256, 0),
        (0.95, 256, -3),
    ],
)
def test_invalid_arguments_raise(q: float, window: int, every: int) -> None:
    """q outside (0, 1), window < 1 or every < 1 raises ValueError."""
    with pytest.raises(ValueError, match="0 < q < 1"):
        RecentQuantile(q, window, every)
