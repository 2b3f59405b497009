"""Slow start: a replica that turns healthy ramps up its share; one not serving gets none."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from backends.fleet import Fleet
from backends.replica import Replica
from core.answers import BackendHealth
from tests.support.fake_backend import FakeBackend

WINDOW = 30.0
PICKS = 10_000


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _fleet(clock: Clock, *replicas: Replica, window: float = WINDOW) -> Fleet:
    return Fleet(
        list(replicas),
        retry_attempts=1,
        health_interval_s=60,
        health_timeout_s=1,
        slow_start_s=window,
        clock=clock,
        chance=random.Random(7).random,
    )


def _warm_and_cold(clock: Clock) -> tuple[Replica, Replica]:
    """`warm` has served for long; `cold` turned healthy at the clock's now."""
    warm = Replica("m", FakeBackend(url="warm"), healthy=True)
    cold = Replica("m", FakeBackend(url="cold"))
    cold.observe(BackendHealth(True, "serving"), clock.now)
    return warm, cold


def _share(fleet: Fleet, url: str) -> float:
    picks = Counter(fleet.pick("m").url for _ in range(PICKS))
    return picks[url] / PICKS


def test_warmth_ramps_linearly_over_the_window() -> None:
    """Warmth goes from 0 when a replica turns healthy to 1 after the window."""
    replica = Replica("m", FakeBackend())
    replica.observe(BackendHealth(True, "serving"), 100.0)
    assert [replica.warmth(100.0 + t, 30.0) for t in (0, 7.5, 15, 30, 60)] == [
        0.0,
        0.25,
        0.5,
        1.0,
        1.0,
    ]
    assert replica.warmth(100.0, 0.0) == 1.0  # slow start off


def test_only_a_transition_to_healthy_restarts_the_ramp() -> None:
    """Probes of a replica already healthy leave its slow start where it is."""
    replica = Replica("m", FakeBackend())
    replica.observe(BackendHealth(True, "serving"), 100.0)
    replica.observe(BackendHealth(True, "serving"), 110.0)
    assert replica.healthy_since == 100.0
    replica.eject("connection reset")
    replica.observe(BackendHealth(True, "serving"), 120.0)
    assert replica.healthy_since == 120.0


@pytest.mark.parametrize(("elapsed", "expected"), [(0.3, 0.005), (7.5, 0.125), (15, 0.25)])
def test_a_cold_replica_gets_a_ramped_share(elapsed: float, expected: float) -> None:
    """Between two idle replicas a cold one gets its warmth times its full (half) share."""
    clock = Clock()
    warm, cold = _warm_and_cold(clock)
    fleet = _fleet(clock, warm, cold)
    clock.now += elapsed
    assert abs(_share(fleet, "cold") - expected) < 0.02


def test_a_warmed_up_replica_gets_a_full_share() -> None:
    """After the window both replicas share equally again."""
    clock = Clock()
    warm, cold = _warm_and_cold(clock)
    fleet = _fleet(clock, warm, cold)
    clock.now += WINDOW
    assert _share(fleet, "cold") == 0.5


def test_slow_start_off_gives_a_full_share_at_once() -> None:
    """GATEWAY_SLOW_START_S=0: a replica that just turned healthy shares equally."""
    clock = Clock()
    warm, cold = _warm_and_cold(clock)
    assert _share(_fleet(clock, warm, cold, window=0), "cold") == 0.5


def test_replicas_warming_together_share_equally() -> None:
    """At startup every replica is cold: none is held back, the traffic must go somewhere."""
    clock = Clock()
    a, b = Replica("m", FakeBackend(url="a")), Replica("m", FakeBackend(url="b"))
    for replica in (a, b):
        replica.observe(BackendHealth(True, "serving"), clock.now)
    fleet = _fleet(clock, a, b)
    clock.now += 1
    assert _share(fleet, "a") == 0.5


def test_a_lone_cold_replica_still_serves() -> None:
    """The only healthy replica gets every request, however cold."""
    clock = Clock()
    warm, cold = _warm_and_cold(clock)
    warm.eject("gone")
    assert _share(_fleet(clock, warm, cold), "cold") == 1.0


async def test_probes_start_the_ramp_at_the_fleets_clock() -> None:
    """A replica admitted by a health probe starts its slow start at the probe's time."""
    clock = Clock()
    backend = FakeBackend(url="a", healthy=False)
    replica = Replica("m", backend)
    fleet = _fleet(clock, replica)
    await fleet.members.probe(replica)
    assert not replica.healthy
    clock.now += 5
    backend.healthy = True
    await fleet.members.probe(replica)
    assert replica.healthy and replica.healthy_since == clock.now


def test_a_replica_not_serving_gets_nothing() -> None:
    """A probe answering NOT_SERVING (vLLM loading or draining) takes the replica out."""
    clock = Clock()
    warm, other = _warm_and_cold(clock)
    clock.now += WINDOW
    fleet = _fleet(clock, warm, other)
    other.observe(BackendHealth(False, "NOT_SERVING"), clock.now)
    assert _share(fleet, "cold") == 0.0
