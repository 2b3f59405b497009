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


def _stale_long_lengths(now: list[float]) -> OutputLengths:
    lengths = OutputLengths(0.9, lambda: now[0])
    for _ in range(100):
        lengths.add(400)
    return lengths


def test_three_short_probe_answers_in_a_row_replace_the_old_lengths() -> None:
    """Answers that grew short show in the probes: three in a row under half the quantile
    forget the long ones at once (a probe a second took five minutes through 256 answers)."""
    now = [10.0]
    lengths = _stale_long_lengths(now)
    for answer in (16, 20, 18):
        now[0] += 1.0
        assert lengths.probe()
        lengths.add(answer)
        assert lengths.value() == (400 if answer != 18 else 20)


def test_short_answers_that_came_without_probes_are_no_change() -> None:
    """Answers heard while nothing was refused, or a probe's long answer between two short
    ones, leave the quantile to count them as it does."""
    now = [10.0]
    lengths = _stale_long_lengths(now)
    for answer in (16, 20, 18):
        lengths.add(answer)
    assert lengths.value() == 400
    for answer in (16, 400, 20, 18):
        now[0] += 1.0
        assert lengths.probe()
        lengths.add(answer)
    assert lengths.value() == 400


def test_a_run_out_longer_than_the_quantile_counts_as_that_long() -> None:
    """Answers grew past the deadlines: requests that ran out 300 tokens along are the only
    lengths heard, and move the quantile up to them; the probe waits a second after each."""
    now = [10.0]
    lengths = OutputLengths(0.9, lambda: now[0])
    for _ in range(20):
        lengths.add(16)
    for _ in range(20):
        lengths.at_least(301)
    assert lengths.value() == 301
    now[0] += 0.5
    assert not lengths.probe()


def test_a_run_out_shorter_than_the_quantile_teaches_nothing() -> None:
    """A request cut off 5 tokens along (a hung replica) says nothing of how long answers
    are: the quantile stays, and the probe is not put off."""
    now = [10.0]
    lengths = OutputLengths(0.9, lambda: now[0])
    lengths.add(100)
    now[0] += 1.0
    for _ in range(50):
        lengths.at_least(6)
    assert lengths.value() == 100
    assert lengths.probe()


def test_probes_that_run_out_at_the_quantile_back_off() -> None:
    """Answers grew past the deadlines: each probe runs out as long as the quantile says,
    so the next waits twice as long, up to eight seconds; an answer brings back one a second."""
    now = [10.0]
    lengths = OutputLengths(0.9, lambda: now[0])
    lengths.add(300)
    gaps = []
    for _ in range(6):
        waited = 0.0
        while not lengths.probe():
            now[0] += 0.25
            waited += 0.25
        gaps.append(waited)
        now[0] += 1.0  # the probe runs out a second later
        lengths.at_least(301)
    assert gaps == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    lengths.add(20)
    now[0] += 1.0
    assert lengths.probe()


def test_run_outs_that_are_no_probes_or_fall_short_still_back_off() -> None:
    """A probe cut a token short of the quantile, an uncounted probe run-out, and a request
    admitted at the edge that ran out as long as the quantile all confirm the refusals: the
    wait for the next probe keeps doubling instead of falling back to a second."""
    now = [10.0]
    lengths = OutputLengths(0.9, lambda: now[0])
    lengths.add(300)
    gaps = []
    for run_out in ("short", "uncounted", "admitted", "short"):
        waited = 0.0
        while not lengths.probe():
            now[0] += 0.25
            waited += 0.25
        gaps.append(waited)
        now[0] += 1.0
        if run_out == "short":
            lengths.at_least(299)
        elif run_out == "uncounted":
            lengths.uncounted()
        else:
            lengths.at_least(299)  # the probe's
            lengths.at_least(300)  # an admitted request's, at the quantile
    assert gaps == [1.0, 2.0, 4.0, 8.0]
