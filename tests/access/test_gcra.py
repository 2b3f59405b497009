"""GCRA: bursts up to the limit, then one unit per interval; all limits charged or none;
refunds move the limit back, never before now."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from access.gcra import SWEEP_S, Limit, LocalLimiter, decide, refund

RPM = Limit("rpm", "requests", 60, 60.0, "key:k")  # one a second, bursts of 60
TPM = Limit("tpm", "tokens", 1000, 60.0, "key:k")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_burst_then_one_per_interval() -> None:
    """60 requests pass at once, the 61st waits one interval, and one more passes per second."""
    clock = Clock()
    limiter = LocalLimiter(clock)
    assert all(limiter.admit([RPM], [1]).allowed for _ in range(60))
    refused = limiter.admit([RPM], [1])
    assert not refused.allowed and refused.limited_by == RPM
    assert refused.retry_after_s == pytest.approx(1.0)
    clock.now += 1.0
    assert limiter.admit([RPM], [1]).allowed
    assert not limiter.admit([RPM], [1]).allowed


def test_remaining_and_reset_for_headers() -> None:
    """After 10 requests 50 remain, and the limit is rested 10 intervals later."""
    limiter = LocalLimiter(Clock())
    decisions = [limiter.admit([RPM], [1]) for _ in range(10)]
    (state,) = decisions[-1].states
    assert state.remaining == 50 and state.reset_s == pytest.approx(10.0)


def test_all_limits_or_none() -> None:
    """A request refused by its token limit is not charged to its request limit either."""
    limiter = LocalLimiter(Clock())
    assert limiter.admit([RPM, TPM], [1, 900]).allowed
    refused = limiter.admit([RPM, TPM], [1, 200])
    assert not refused.allowed and refused.limited_by == TPM
    assert refused.states[0].remaining == 59  # the refused request took no request unit


def test_refund_gives_back_unused_tokens_but_not_the_past() -> None:
    """Giving back unused tokens makes room at once; a refund never banks credit."""
    clock = Clock()
    limiter = LocalLimiter(clock)
    assert limiter.admit([TPM], [1000]).allowed
    assert not limiter.admit([TPM], [10]).allowed
    limiter.refund(TPM, 600)
    assert limiter.admit([TPM], [600]).allowed
    assert refund(TPM, tat=clock.now, units=10_000, now=clock.now) == clock.now


def test_an_excess_charged_once_the_limit_has_rested_counts_from_now() -> None:
    """More used than reserved, settled after the reservation's TAT has passed: the whole
    excess is charged from now, none of it lost to the time already gone."""
    clock = Clock()
    limiter = LocalLimiter(clock)
    assert limiter.admit([RPM], [10]).allowed  # rested in 10 s
    clock.now += 20.0
    limiter.refund(RPM, -60)  # it used 70
    assert not limiter.admit([RPM], [1]).allowed
    assert refund(RPM, tat=clock.now - 5.0, units=-10, now=clock.now) == clock.now + 10.0


def test_callers_do_not_share() -> None:
    """Each owner (API key or tenant) has its own limit."""
    limiter = LocalLimiter(Clock())
    for _ in range(60):
        limiter.admit([RPM], [1])
    assert limiter.admit([dataclasses.replace(RPM, owner="key:other")], [1]).allowed


def test_a_replicas_share() -> None:
    """Without coordination each of n replicas takes 1/n of the limit (at least one unit)."""
    assert RPM.shared_by(4).amount == 15 and RPM.shared_by(1000).amount == 1


@given(st.lists(st.tuples(st.floats(0, 5), st.integers(1, 300)), min_size=1, max_size=200))
def test_never_more_than_a_full_bucket_plus_the_refill(arrivals: list[tuple[float, int]]) -> None:
    """Whatever the arrivals, tokens admitted within any span W never exceed one full bucket
    (the limit) plus what refills in W: the long-run rate is the limit exactly."""
    clock = Clock()
    limiter = LocalLimiter(clock)
    admitted: list[tuple[float, int]] = []
    for gap, cost in arrivals:
        clock.now += gap
        if limiter.admit([TPM], [cost]).allowed:
            admitted.append((clock.now, cost))
    for start, _ in admitted:
        for end, _ in admitted:
            if end >= start:
                span = sum(c for t, c in admitted if start <= t <= end)
                assert span <= TPM.amount + (end - start) / TPM.interval_s + 1e-6


def test_decide_is_pure() -> None:
    """`decide` leaves refused TATs at max(tat, now) and reports the one that refused."""
    decision, stored = decide([RPM, TPM], [1, 1000], [0.0, 20.0], now=10.0)
    assert not decision.allowed and decision.limited_by == TPM and stored == [10.0, 20.0]


def test_a_cost_beyond_the_whole_bucket_waits_until_it_has_rested() -> None:
    """A share smaller than the request: it passes from a rested limit and moves the TAT as
    far as it costs; before that it is refused until the limit rests, not for ever."""
    decision, stored = decide([RPM], [120], [0.0], now=10.0)
    assert decision.allowed and stored == [130.0]
    refused, _ = decide([RPM], [120], [11.5], now=10.0)
    assert not refused.allowed and refused.retry_after_s == pytest.approx(1.5)


@given(now=st.floats(min_value=0.0, max_value=1e7), amount=st.integers(1, 10_000))
def test_a_rested_caller_gets_its_whole_burst_at_any_clock_value(now: float, amount: int) -> None:
    """A whole period's worth at once is admitted whatever the clock reads (`now + period -
    now` rounds above `period` at some values: 68531.45 with 100 tokens a day was refused);
    one unit more is not."""
    day = Limit("tpd", "tokens", amount, 86_400.0, "key:k")
    decision, stored = decide([day], [amount], [now], now)
    assert decision.allowed
    assert not decide([day], [1], stored, now)[0].allowed


def test_an_answer_to_an_older_call_read_late_does_not_rewind_what_redis_said() -> None:
    """Concurrent calls' answers are read in any order: the state Redis decided last (50 s of
    the minute spent: 1 of 10 left) stands against an older one read after it."""
    local = LocalLimiter(lambda: 100.0)
    limit = Limit("requests_per_minute", "requests", 10, 60.0, "key:k")
    local.observe(limit, 50.0, at=5000.5)
    local.observe(limit, 10.0, at=5000.0)
    assert local.peek([limit]).states[0].remaining == 1
    assert local.peek([limit.shared_by(2)]).states[0].remaining == 0  # half of 1 left


def test_a_limit_rested_a_whole_period_is_forgotten() -> None:
    """A limit rested for a whole period (a key a reload removed, or idle) is dropped at the
    next sweep, what the store said of it included; one rested only just now is kept."""
    clock = Clock()
    local = LocalLimiter(clock, unseen_used=0.5)
    local.admit([RPM], [1])  # TAT 31 s ahead
    local.observe(TPM, 0.0, at=1.0)
    clock.now += 31.0 + 60.0 + SWEEP_S
    kept = Limit("rpd", "requests", 10, 86_400.0, "key:other")
    local.refund(kept, 0)  # rested now: kept until it has rested a whole day
    assert len(local) == 1
    local.observe(TPM, 30.0, at=0.5)  # forgotten, so an old answer is taken again
    assert local.peek([TPM]).states[0].remaining == 500
