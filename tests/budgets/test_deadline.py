"""Deadlines on an injectable clock."""

from __future__ import annotations

import pytest

from budgets.deadline import Deadline, DeadlineExceeded


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_remaining_counts_down_and_never_goes_negative() -> None:
    """remaining() shrinks with the clock and stops at zero."""
    clock = FakeClock()
    deadline = Deadline.after(2.0, clock=clock)
    clock.now += 0.5
    assert deadline.remaining() == pytest.approx(1.5)
    clock.now += 5
    assert deadline.remaining() == 0.0 and deadline.expired


def test_child_takes_the_earlier_instant_and_its_name() -> None:
    """A child capped below its parent is named after its own stage."""
    clock = FakeClock()
    parent = Deadline.after(10.0, "total", clock)
    child = parent.child(1.0, "ttft")
    assert child.stage == "ttft" and child.remaining() == pytest.approx(1.0)


def test_child_keeps_parent_when_parent_binds() -> None:
    """A child whose cap exceeds the parent is the parent, so errors name the total."""
    clock = FakeClock()
    parent = Deadline.after(1.0, "total", clock)
    assert parent.child(5.0, "ttft") is parent


def test_check_raises_with_stage() -> None:
    """check() raises DeadlineExceeded naming the stage once expired."""
    clock = FakeClock()
    deadline = Deadline.after(1.0, "ttft", clock)
    deadline.check()
    clock.now += 1.0
    with pytest.raises(DeadlineExceeded) as info:
        deadline.check()
    assert info.value.stage == "ttft"
