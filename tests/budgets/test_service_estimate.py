"""The per-replica service estimate: its fitted line, its error margin, and its age."""

from __future__ import annotations

import pytest

from budgets.service_estimate import ServiceEstimate
from budgets.service_fit import ServiceFit


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _line(p: int, k: int) -> float:
    """0.1 s base, 0.2 ms per prompt token, 10 ms per output token after the first."""
    return 0.1 + 0.0002 * p + 0.01 * (k - 1)


def test_unknown_before_any_observation() -> None:
    """With nothing observed there is no fit and no prediction."""
    estimate = ServiceEstimate(FakeClock())
    assert estimate.fit() is None
    assert estimate.expected(10, 5) is None and estimate.upper(10, 5) is None


def test_recovers_an_exact_line_from_first_tokens_and_completions() -> None:
    """First tokens (k = 1) and whole answers of varied sizes give back base and both slopes."""
    estimate = ServiceEstimate(FakeClock())
    for p, k in [(100, 1), (500, 1), (100, 40), (900, 20), (300, 1), (600, 60), (50, 5)]:
        estimate.observe(p, k, _line(p, k))
    fit = estimate.fit()
    assert fit is not None
    assert fit.base_s == pytest.approx(0.1)
    assert fit.per_prompt_token_s == pytest.approx(0.0002)
    assert fit.per_output_token_s == pytest.approx(0.01)
    assert estimate.expected(2000, 100) == pytest.approx(_line(2000, 100))
    assert estimate.upper(2000, 100) == pytest.approx(_line(2000, 100))  # nothing scatters


def test_a_size_that_never_varies_keeps_its_cost_in_the_base() -> None:
    """With every prompt the same size the prompt slope stays 0 and the base absorbs it."""
    estimate = ServiceEstimate(FakeClock())
    for k in (1, 10, 30, 1, 20):
        estimate.observe(64, k, _line(64, k))
    fit = estimate.fit()
    assert fit is not None and fit.per_prompt_token_s == 0.0
    assert fit.per_output_token_s == pytest.approx(0.01)
    assert fit.at(64, 1) == pytest.approx(_line(64, 1))


# Seen in bench.scenarios.prefix, both refused a turn of about 1800-2300 tokens as needing
# 30-40 s to its first token: first turns 1350 and 1351 tokens long (by the gateway's estimate)
# whose times differ by noise, and first turns of 1405-1408 tokens served as a burst's queue
# drained (each admitted later than the last and served sooner).
_A_TOKEN_APART = [
    (1350, 1, 0.331), (1350, 16, 0.376), (1351, 1, 0.266), (1351, 16, 0.310),
    (1351, 1, 0.307), (1351, 16, 0.351), (1351, 1, 0.246), (1351, 16, 0.287),
    (1350, 1, 0.208), (1350, 16, 0.250), (1350, 1, 0.177), (1350, 16, 0.218),
]  # fmt: skip
_A_BURST_DRAINING = [
    (1407, 1, 0.665), (1407, 16, 1.233), (1407, 1, 0.605), (1407, 16, 1.141),
    (1408, 1, 0.529), (1408, 16, 1.066), (1406, 1, 0.466), (1406, 16, 1.012),
    (1407, 1, 0.456), (1407, 16, 0.992), (1405, 1, 0.385), (1405, 16, 0.920),
    (1405, 1, 0.364), (1405, 16, 0.862),
]  # fmt: skip


@pytest.mark.parametrize("observed", [_A_TOKEN_APART, _A_BURST_DRAINING])
def test_prompts_a_few_tokens_apart_give_no_prompt_slope(
    observed: list[tuple[int, int, float]],
) -> None:
    """Prompts of nearly one size cannot measure a prompt slope: a longer prompt is predicted
    about as long as they took, not minutes."""
    estimate = ServiceEstimate(FakeClock())
    for p, k, y in observed:
        estimate.observe(p, k, y)
    fit = estimate.fit()
    assert fit is not None and fit.per_prompt_token_s == 0.0
    upper = estimate.upper(2279, 1)
    assert upper is not None and upper < 1.0


def test_a_slope_noise_could_have_made_is_dropped() -> None:
    """Prompts of two sizes whose times differ less than they scatter give no prompt slope."""
    estimate = ServiceEstimate(FakeClock())
    for p, y in [(500, 0.25), (1500, 0.32), (500, 0.35), (1500, 0.28), (500, 0.2), (1500, 0.3)]:
        estimate.observe(p, 1, y)
    fit = estimate.fit()
    assert fit is not None and fit.per_prompt_token_s == 0.0
    assert estimate.expected(20000, 1) == pytest.approx(0.283, abs=0.01)


def test_a_real_slope_survives_noise() -> None:
    """Prompts of many sizes with noisy times still give the prompt slope, near its truth."""
    estimate = ServiceEstimate(FakeClock())
    for i in range(60):
        p, k = 100 + 37 * i, 1 + (i % 3) * 20
        estimate.observe(p, k, _line(p, k) * (1.1 if i % 2 else 0.9))
    fit = estimate.fit()
    assert fit is not None
    assert fit.per_prompt_token_s == pytest.approx(0.0002, rel=0.2)
    assert fit.per_output_token_s == pytest.approx(0.01, rel=0.2)


def test_no_slope_from_as_few_observations_as_the_line_has_terms() -> None:
    """Two observations fit any slope exactly: they predict nothing for other sizes (their
    average would take the sizes for noise); a slope is kept once a third agrees with it."""
    estimate = ServiceEstimate(FakeClock())
    estimate.observe(100, 1, 0.2)
    estimate.observe(900, 1, 0.3)
    assert estimate.expected(2000, 1) is None
    assert estimate.remembered(2000, 1) == pytest.approx(0.25, abs=0.01)
    estimate = ServiceEstimate(FakeClock())
    for p in (100, 900, 500):
        estimate.observe(p, 1, _line(p, 1))
    assert estimate.expected(2000, 1) == pytest.approx(_line(2000, 1))


@pytest.mark.parametrize("lull_s", [15, 20, 25, 28])
def test_after_a_lull_one_answer_of_a_new_size_predicts_no_scatter(lull_s: float) -> None:
    """A 2 s answer of 100 tokens after a lull faded many millisecond ones of a few tokens: a
    flat average of the two took the sizes for scatter and predicted up to 3.2 s for the next
    one, refusing a 3 s deadline; now the evidence carries a slope or nothing is predicted."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, evidence_half_life_s=5)
    for k in (17, 2) * 25:
        clock.now += 0.05
        estimate.observe(7, k, 0.002 + 0.0001 * k)
    clock.now += lull_s
    estimate.observe(7, 101, 2.0)
    upper = estimate.upper(7, 101)
    assert upper is None or upper < 2.5
    clock.now += 0.01
    estimate.observe(7, 101, 2.01)
    upper = estimate.upper(7, 101)
    assert upper is not None and 1.9 < upper < 2.5


def test_a_single_observation_predicts_itself() -> None:
    """One observation is a flat line through it, of its one output length."""
    estimate = ServiceEstimate(FakeClock())
    estimate.observe(10, 20, 0.4)
    assert estimate.fit() == ServiceFit(0.4, 0.0, 0.0, one_output_size=19.0)
    assert estimate.expected(5000, 1) == pytest.approx(0.4)


def test_negative_slopes_are_dropped() -> None:
    """Longer prompts that happened to be faster never give a negative per-token cost."""
    estimate = ServiceEstimate(FakeClock())
    for p, k, y in [(100, 1, 0.30), (900, 1, 0.10), (100, 30, 0.60), (900, 30, 0.40)]:
        estimate.observe(p, k, y)
    fit = estimate.fit()
    assert fit is not None and fit.per_prompt_token_s == 0.0 and fit.per_output_token_s > 0.0


def test_noise_widens_the_upper_estimate() -> None:
    """The upper estimate adds two standard deviations of the observations around the fit."""
    estimate = ServiceEstimate(FakeClock())
    for i in range(40):
        estimate.observe(10, 1, 0.2 + (0.02 if i % 2 else -0.02))
    expected, upper = estimate.expected(10, 1), estimate.upper(10, 1)
    assert expected == pytest.approx(0.2, abs=0.005)
    assert upper is not None and expected is not None
    assert 0.03 < upper - expected < 0.06


def test_adapts_when_the_replica_slows_down() -> None:
    """Older observations fade: after a slowdown the estimate follows within a few half-lives."""
    estimate = ServiceEstimate(FakeClock(), half_life=8)
    for _ in range(50):
        estimate.observe(10, 1, 0.1)
    for _ in range(40):
        estimate.observe(10, 1, 0.5)
    assert estimate.expected(10, 1) == pytest.approx(0.5, abs=0.02)


def test_a_stale_estimate_is_not_trusted() -> None:
    """With no observation for max_age_s the estimate is unknown until the next one."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, max_age_s=30)
    estimate.observe(10, 1, 0.1)
    clock.now += 30
    assert estimate.expected(10, 1) == pytest.approx(0.1)
    clock.now += 0.5
    assert estimate.expected(10, 1) is None and estimate.upper(10, 1) is None
    estimate.observe(10, 1, 0.1)
    assert estimate.expected(10, 1) is not None


_VARIED = [(100, 1), (500, 1), (100, 40), (900, 20), (300, 1), (600, 60), (50, 5)]


def test_a_busy_replica_is_no_lull() -> None:
    """Calls that end untaught (they waited in a full engine) keep the line trusted and its
    evidence from fading: under a sustained overload no call starts at once, and a line gone
    stale then stopped admission from refusing anything."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, max_age_s=30, evidence_half_life_s=5)
    for p, k in _VARIED:
        estimate.observe(p, k, _line(p, k))
    weight = estimate.evidence()
    for _ in range(60):
        clock.now += 1
        estimate.heard_of()
    assert estimate.expected(10, 40) == pytest.approx(_line(10, 40))
    assert estimate.evidence() == pytest.approx(weight)
    assert not estimate.probe()  # heard of just now
    clock.now += 31
    assert estimate.expected(10, 40) is None


def test_a_line_over_one_output_length_does_not_judge_much_shorter_answers() -> None:
    """Answers of one length give no cost per token: the line predicts that length's time for
    any other, and a much shorter request is not judged by it (a 16-token request served in
    90 ms was refused for the 2 s of the 400-token answers around it); a longer one is."""
    estimate = ServiceEstimate(FakeClock())
    for p in (10, 10, 10, 10):
        estimate.observe(p, 400, 2.0)
    fit = estimate.fit()
    assert fit is not None and fit.one_output_size == 399
    assert estimate.upper(10, 16) is None and estimate.upper(10, 1) is None
    assert estimate.upper(10, 300) == pytest.approx(2.0)
    assert estimate.expected(10, 16) == pytest.approx(2.0)  # what admission holds a slot for


def test_routing_remembers_a_stale_line_and_how_much_stands_behind_it() -> None:
    """A stale line is still remembered; its evidence counts observations, fading with time."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, half_life=1e9, max_age_s=30, evidence_half_life_s=5)
    assert estimate.remembered(10, 1) is None and estimate.evidence() == 0.0
    for _ in range(4):
        estimate.observe(10, 1, 0.4)
    assert estimate.evidence() == pytest.approx(4.0)
    clock.now += 100
    assert estimate.expected(10, 1) is None
    assert estimate.remembered(10, 1) == pytest.approx(0.4)
    assert estimate.evidence() == pytest.approx(4.0 * 0.5**20)


def test_after_a_lull_new_observations_outweigh_old_ones() -> None:
    """With evidence fading by time, the first observations after a lull move the line most
    (two of them: a third in a row so far off the line would be taken for a change of speed)."""
    clock = FakeClock()
    fading, counting = ServiceEstimate(clock, evidence_half_life_s=5), ServiceEstimate(clock)
    for estimate in (fading, counting):
        for _ in range(100):
            estimate.observe(10, 1, 0.5)
    clock.now += 30
    for estimate in (fading, counting):
        for _ in range(2):
            estimate.observe(10, 1, 0.1)
    assert fading.remembered(10, 1) == pytest.approx(0.25, abs=0.03)
    assert counting.remembered(10, 1) == pytest.approx(0.49, abs=0.01)


def test_ignores_impossible_observations() -> None:
    """Negative durations and zero tokens are not observations."""
    estimate = ServiceEstimate(FakeClock())
    estimate.observe(10, 1, -0.5)
    estimate.observe(10, 0, 0.5)
    assert estimate.fit() is None


def _slow(k: int) -> float:
    """The stand-in slowed: 0.2 s to the first token, 80 ms per token after it."""
    return 0.2 + 0.08 * (k - 1)


def _fast(k: int) -> float:
    """The stand-in fast again: 20 ms per token."""
    return 0.2 + 0.02 * (k - 1)


def _learn_slow(estimate: ServiceEstimate) -> None:
    for _ in range(3):
        for k in (1, 5, 10, 20, 30):
            estimate.observe(10, k, _slow(k))


def test_a_run_of_faster_observations_replaces_the_old_line() -> None:
    """Three answers in a row well under the band mean the replica sped up: the line follows."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, evidence_half_life_s=5)
    _learn_slow(estimate)
    for _ in range(3):
        clock.now += 1.0
        estimate.observe(10, 30, _fast(30))
    upper = estimate.upper(10, 30)
    assert upper is not None and upper < 1.2  # a 1.2 s deadline fits again (slow: 2.5 s)


def test_a_run_is_judged_against_the_line_from_before_it() -> None:
    """The first fast answer widens the band of the slow line a lot (a flat line with a wide
    margin once it is mixed in): the next ones still count as surprises against the old line."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, evidence_half_life_s=5)
    for k in (1, 1, 5, 5, 10, 10, 20, 20, 30, 30, 1, 10, 30):
        clock.now += 0.5
        estimate.observe(14, k, _slow(k))
    for _ in range(3):  # probes, one every 1.8 s
        clock.now += 1.8
        estimate.observe(14, 30, _fast(30))
    upper = estimate.upper(14, 30)
    assert upper is not None and upper < 1.2


def test_sizes_both_speeds_serve_alike_do_not_hide_a_change() -> None:
    """One-token answers take as long slow as fast (the first token did not slow): in between
    the faster longer ones they neither count for the change nor break the run."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, evidence_half_life_s=5)
    for k in (1, 1, 5, 5, 10, 10, 20, 20, 30, 30, 1, 10, 30):
        clock.now += 0.5
        estimate.observe(14, k, _slow(k))
    for k in (20, 1, 10, 1, 5):
        clock.now += 1.0
        estimate.observe(14, k, _fast(k))
    upper = estimate.upper(14, 30)
    assert upper is not None and upper < 1.2


def test_a_millisecond_of_jitter_is_no_change() -> None:
    """Three 3 ms first tokens where the line expects 4 ms miss it by a quarter, but by less
    than the event loop's jitter: the history stays."""
    estimate = ServiceEstimate(FakeClock())
    for _ in range(40):
        estimate.observe(10, 1, 0.004)
    for _ in range(3):
        estimate.observe(10, 1, 0.003)
    assert estimate.evidence() > 30


def test_two_surprises_are_not_a_change() -> None:
    """Fewer than three surprises among six observations in a row only nudge the line."""
    estimate = ServiceEstimate(FakeClock())
    _learn_slow(estimate)
    for _ in range(2):
        estimate.observe(10, 30, _fast(30))
    for _ in range(4):  # inside the band: the run runs out
        estimate.observe(10, 1, _slow(1))
    estimate.observe(10, 30, _fast(30))
    expected = estimate.expected(10, 30)
    assert expected is not None and expected > 1.5  # a change would have made it 0.78 s


def test_a_timeout_teaches_that_the_replica_is_slower() -> None:
    """A call that failed for lack of time at 0.6 s moves a line that expected 0.38 s up."""
    estimate = ServiceEstimate(FakeClock())
    for _ in range(2):
        for k in (1, 5, 10, 20, 30):
            estimate.observe(10, k, _fast(k))
    before = estimate.expected(10, 10)
    assert before == pytest.approx(0.38)
    estimate.observe(10, 10, 0.6, at_least=True)
    after = estimate.expected(10, 10)
    assert after is not None and before is not None and after > before
    for _ in range(2):
        estimate.observe(10, 10, 0.6, at_least=True)
    upper = estimate.upper(10, 10)
    assert upper is not None and upper >= 0.6  # a 0.6 s deadline is no longer predicted to fit


def test_a_timeout_sooner_than_the_line_teaches_nothing() -> None:
    """A call that gave up before the line expected its answer says nothing about its speed."""
    estimate = ServiceEstimate(FakeClock())
    for k in (1, 5, 10, 20, 30):
        estimate.observe(10, k, _fast(k))
    fit = estimate.fit()
    estimate.observe(10, 30, 0.3, at_least=True)
    assert estimate.fit() == fit


def test_a_timeout_alone_teaches_nothing() -> None:
    """With no line yet a lower bound has nothing to correct."""
    estimate = ServiceEstimate(FakeClock())
    estimate.observe(10, 10, 0.6, at_least=True)
    assert estimate.fit() is None


def test_probes_once_a_second_while_nothing_is_heard() -> None:
    """A refused request goes through once per probe interval, and only after a quiet one."""
    clock = FakeClock()
    estimate = ServiceEstimate(clock, probe_interval_s=1.0)
    estimate.observe(10, 1, 0.2)
    assert not estimate.probe()  # just heard from
    clock.now += 1.0
    assert estimate.probe()
    assert not estimate.probe()  # one per interval
    clock.now += 0.5
    estimate.observe(10, 30, 0.5, at_least=True)  # heard, though it taught nothing
    clock.now += 0.9
    assert not estimate.probe()
    clock.now += 0.1
    assert estimate.probe()
