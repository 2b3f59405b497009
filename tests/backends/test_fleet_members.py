"""The fleet's membership: health probes, readiness, replicas joining and retiring."""

from __future__ import annotations

import asyncio
import logging

import pytest

from backends.fleet_members import Members
from backends.replica import Replica
from core.answers import BackendHealth
from tests.support.fake_backend import FakeBackend


def _members(*replicas: Replica) -> Members:
    return Members(list(replicas), health_interval_s=60, health_timeout_s=1)


def test_a_probe_readmits_an_ejected_replica() -> None:
    """A replica ejected after a failure returns once a probe finds it serving."""
    replica = Replica("m", FakeBackend(url="a"), healthy=True)
    replica.eject("connection refused")
    members = _members(replica)
    assert not members.ready()
    replica.observe(BackendHealth(True, "serving"))
    assert replica.healthy and members.ready()


def test_admission_is_info_and_ejection_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A replica turning healthy (every start) logs at info; one lost logs a warning."""
    replica = Replica("m", FakeBackend(url="a"))
    with caplog.at_level(logging.INFO, logger="gateway.fleet"):
        replica.observe(BackendHealth(True, "serving"))
        replica.observe(BackendHealth(False, "draining"))
    levels = [(r.levelno, r.getMessage().split(": ")[0]) for r in caplog.records]
    assert levels == [
        (logging.INFO, "replica a of m admitted"),
        (logging.WARNING, "replica a of m ejected"),
    ]


async def test_start_probes_every_replica() -> None:
    """start() learns each replica's health before serving."""
    up, down = FakeBackend(url="up"), FakeBackend(url="down", healthy=False)
    members = _members(Replica("m", up), Replica("m", down))
    await members.start()
    try:
        assert [r.healthy for r in members.replicas("m")] == [True, False]
        assert members.ready()
    finally:
        await members.aclose()


def test_one_model_without_a_healthy_replica_leaves_the_gateway_ready() -> None:
    """The other model can still be served: the gateway stays in the Service; none can: out."""
    up = Replica("a", FakeBackend(url="up"), healthy=True)
    down = Replica("b", FakeBackend(url="down"), healthy=True)
    down.eject("connection refused")
    members = _members(up, down)
    assert members.ready()
    up.eject("connection refused")
    assert not members.ready()


def test_a_declared_model_without_replicas_is_not_ready() -> None:
    """A model declared before its replicas resolve keeps the fleet unready."""
    members = _members()
    members.declare("m")
    assert members.replicas("m") == [] and not members.ready()


async def test_a_joining_replica_serves_only_after_a_probe() -> None:
    """add() probes the newcomer first: a replica that is down joins unhealthy."""
    members = _members()
    await members.start()
    try:
        await members.add(Replica("m", FakeBackend(url="down", healthy=False)))
        await members.add(Replica("m", FakeBackend(url="up")))
        assert [r.healthy for r in members.replicas("m")] == [False, True]
    finally:
        await members.aclose()


async def test_a_retired_replica_leaves_at_once_and_closes_when_drained() -> None:
    """retire() takes the replica out of choice now and closes its backend once idle."""
    backend = FakeBackend(url="a")
    replica = Replica("m", backend, healthy=True)
    members = _members(replica)
    drained = members.retire(replica)
    assert members.replicas("m") == [] and members.retiring() == [replica]
    await asyncio.wait_for(drained, 10)
    assert members.retiring() == [] and not members.draining


class _ScriptedHealth(FakeBackend):
    """A backend whose health probes answer from a script, one answer each."""

    def __init__(self, answers: list[BackendHealth]) -> None:
        super().__init__(url="a")
        self._answers = answers

    async def health(self, timeout: float) -> BackendHealth:
        return self._answers.pop(0)


MISSED = BackendHealth(False, "DEADLINE_EXCEEDED: Deadline Exceeded", missed=True)


async def test_missed_probes_eject_only_after_the_failure_threshold() -> None:
    """A busy replica that misses a probe's deadline stays; only the threshold's worth of
    misses in a row ejects it, and an answered probe between them starts the count again."""
    serving = BackendHealth(True, "serving")
    backend = _ScriptedHealth([MISSED, MISSED, serving, MISSED, MISSED, MISSED])
    replica = Replica("m", backend, healthy=True)
    members = Members([replica], health_interval_s=60, health_timeout_s=1, health_failures=3)
    healthy = []
    for _ in range(6):
        await members.probe(replica)
        healthy.append(replica.healthy)
    assert healthy == [True, True, True, True, True, False]


async def test_a_replica_found_down_is_ejected_at_once() -> None:
    """A probe that gets an answer saying no (NOT_SERVING, refused) ejects at once."""
    for down in (BackendHealth(False, "NOT_SERVING"), BackendHealth(False, "UNAVAILABLE")):
        replica = Replica("m", _ScriptedHealth([down]), healthy=True)
        members = Members([replica], health_interval_s=60, health_timeout_s=1, health_failures=3)
        await members.probe(replica)
        assert not replica.healthy
