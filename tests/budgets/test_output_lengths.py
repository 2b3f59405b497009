"""Recent uncapped output lengths: their quantile, and one probe a second while none is heard."""

from __future__ import annotations

from budgets.output_lengths import OutputLengths


def test_the_quantile_of_recent_lengths() -> None:
    """None before the first answer, then the quantile of the answers heard."""
    lengths = OutputLengths(0.9)
    assert lengths.value() is None
    for tokens in range(1, 11):
        lengths.add(tokens * 10)
    assert lengths.value() == 90


def test_one_probe_per_interval_while_no_answer_is_heard() -> None:
    """No probe within a second of an answer; then one, and the next a second later."""
    now = [10.0]
    lengths = OutputLengths(0.9, lambda: now[0])
    lengths.add(100)
    now[0] += 0.5
    assert not lengths.probe()
    now[0] += 0.5
    assert lengths.probe()
    assert not lengths.probe()
    now[0] += 0.99
    assert not lengths.probe()
    now[0] += 0.01
    assert lengths.probe()
    lengths.add(5)
    now[0] += 0.5
    assert not lengths.probe()
