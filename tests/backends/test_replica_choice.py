"""Choosing among a model's replicas, on its own: health, exclusion, rotation, lengths."""

from __future__ import annotations

import pytest

from backends.replica import Replica
from backends.replica_choice import ReplicaChoice
from core.errors import NoHealthyBackend
from tests.support.fake_backend import FakeBackend


def _replica(url: str, *, healthy: bool = True) -> Replica:
    return Replica("m", FakeBackend(url=url), healthy=healthy)


def test_only_healthy_replicas_not_excluded_are_chosen() -> None:
    """An unhealthy or excluded replica is never picked; with none left, no healthy backend."""
    choice = ReplicaChoice(output_quantile=0.9)
    down, tried, up = _replica("a", healthy=False), _replica("b"), _replica("c")
    assert choice.pick([down, tried, up], "m", exclude=[tried]) is up
    with pytest.raises(NoHealthyBackend):
        choice.pick([down, tried], "m", exclude=[tried])


def test_no_healthy_backend_says_to_retry_after_the_next_probe() -> None:
    """The 503 tells the client to come back after one health probe interval, the soonest a
    replica can be found healthy again."""
    choice = ReplicaChoice(output_quantile=0.9, health_interval_s=3.0)
    with pytest.raises(NoHealthyBackend) as info:
        choice.pick([_replica("a", healthy=False)], "m")
    assert info.value.status == 503
    assert info.value.headers() == {"retry-after": "3", "retry-after-ms": "3000"}


def test_equal_replicas_take_turns() -> None:
    """Idle replicas alike in every way share the requests."""
    choice = ReplicaChoice(output_quantile=0.9)
    replicas = [_replica("a"), _replica("b"), _replica("c")]
    assert {choice.pick(replicas, "m").url for _ in range(6)} == {"a", "b", "c"}


def test_output_lengths_are_kept_per_model() -> None:
    """Each model has one record of recent output lengths."""
    choice = ReplicaChoice(output_quantile=0.9)
    assert choice.lengths("m") is choice.lengths("m")
    assert choice.lengths("m") is not choice.lengths("other")
