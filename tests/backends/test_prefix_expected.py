"""Blocks expected on a replica because a prompt was sent there: held until confirmed or lapsed."""

from __future__ import annotations

from backends.prefix.expected import ExpectedBlocks


def test_an_expectation_holds_one_to_two_windows() -> None:
    """A key counts for at least a window after it was sent and is gone after two."""
    expected = ExpectedBlocks(window_s=10.0)
    expected.add([1], now=100.0)
    expected.add([2], now=109.0)
    assert expected.holds(1, 109.9) and expected.holds(2, 118.9)
    assert not expected.holds(1, 120.0) and not expected.holds(3, 105.0)


def test_sending_again_renews_a_key() -> None:
    """A key sent again counts from the last send."""
    expected = ExpectedBlocks(window_s=10.0)
    expected.add([1], now=100.0)
    expected.add([1], now=112.0)
    assert expected.holds(1, 121.0)


def test_a_long_silence_forgets_everything() -> None:
    """Both generations lapse when nothing was sent for two windows."""
    expected = ExpectedBlocks(window_s=10.0)
    expected.add([1], now=100.0)
    expected.add([2], now=111.0)
    assert not expected.holds(1, 135.0) and not expected.holds(2, 135.0)
    assert len(expected) == 0


def test_confirmed_and_cleared_keys_stop_counting() -> None:
    """A key the engine reported is left to its events; clear forgets everything."""
    expected = ExpectedBlocks(window_s=10.0)
    expected.add([1, 2], now=0.0)
    expected.confirm(1)
    assert not expected.holds(1, 1.0) and expected.holds(2, 1.0)
    expected.clear()
    assert len(expected) == 0 and not expected.holds(2, 1.0)


def test_the_count_is_bounded() -> None:
    """Past the limit a generation is swapped early: at most two generations' keys stay."""
    expected = ExpectedBlocks(window_s=10.0, limit=3)
    expected.add([1, 2], now=0.0)
    expected.add([3, 4], now=1.0)
    expected.add([5, 6], now=2.0)
    expected.add([7, 8], now=3.0)
    assert len(expected) <= 2 * expected.limit
    assert expected.holds(5, 3.5) and not expected.holds(1, 3.5)
